"""One record schema for training and evaluation, and its readers and writer.

A record is one question about media (videos and/or images, by path relative to a data root)
with a verifiable `answer`. Answer conventions (what the synthetic data and the importer write):

- multiple_choice: the option letter (`"B"`); `options` hold the option texts without letters
  (the letter is the position: A, B, C, ...).
- numerical / regression: a number. boolean: `"yes"` or `"no"`. ocr / open_ended / math:
  the reference text. preference: the label of the better response (`"A"` or `"B"`).
- temporal_grounding: `{"time": [start_s, end_s]}`; spatial_grounding: `{"boxes": [x1, y1,
  x2, y2]}` in pixels of the source media; spatial_temporal_grounding: `{"time": [s, e],
  "boxes": {"<t seconds>": [x1, y1, x2, y2], ...}}`; tracking: `{"boxes": {"<t>": box, ...}}`.
- code: `{"language": "python", "tests": ["assert f(1) == 3", ...]}`.

Readers accept JSONL files, JSON files (an array of records or one record) and folders of
those (searched recursively, in sorted order). Every problem is reported with file, line and
field: `read_records` stops at the first; `scan_records` reports them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evr1.errors import Evr1Error
from evr1.problem_types import ProblemType

RECORD_SUFFIXES = (".jsonl", ".json")


class MediaRef(BaseModel):
    """A video or image, by path relative to the data root; videos may name a clip in seconds.

    A negative `start` is read as 0 (the video's beginning), as qwen-vl-utils clamps `video_start`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["video", "image"]
    path: str = Field(min_length=1)
    start: float | None = None
    end: float | None = Field(default=None, gt=0)

    @field_validator("start")
    @classmethod
    def _clamp_start(cls, start: float | None) -> float | None:
        return None if start is None else max(0.0, start)

    @model_validator(mode="after")
    def _clip(self) -> MediaRef:
        if self.kind == "image" and (self.start is not None or self.end is not None):
            raise ValueError("an image has no clip start/end")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"clip end ({self.end}) must be after start ({self.start})")
        return self


class Record(BaseModel):
    """A question about media with a verifiable answer (and optionally an offline trajectory)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    problem: str
    problem_type: ProblemType
    answer: Any
    options: list[str] | None = None
    media: list[MediaRef] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    offline_response: str | None = None
    offline_logprobs: list[float] | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("problem_type", mode="before")
    @classmethod
    def _canonical_type(cls, value: Any) -> ProblemType:
        return ProblemType.parse(value)

    @model_validator(mode="after")
    def _offline(self) -> Record:
        if self.offline_logprobs is not None and self.offline_response is None:
            raise ValueError("offline_logprobs given without offline_response")
        return self

    @property
    def modality(self) -> Literal["video", "image", "video+image", "text"]:
        kinds = {m.kind for m in self.media}
        if kinds == {"video", "image"}:
            return "video+image"
        return next(iter(kinds)) if kinds else "text"  # type: ignore[return-value]


class RecordError(ValueError, Evr1Error):
    """A record that cannot be read: names the file, the line and (where known) the field."""

    def __init__(self, file: Path | str, line: int | None, field: str | None, message: str) -> None:
        self.file, self.line, self.field, self.message = Path(file), line, field, message
        where = f"{self.file}:{line}" if line is not None else str(self.file)
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {message}")


@dataclass(frozen=True)
class Located:
    """A parsed JSON value (or the error found instead) and where it starts."""

    file: Path
    line: int
    value: Any


PathsArg = str | Path | Sequence[str | Path]


def record_files(paths: PathsArg) -> list[Path]:
    """The record files named by `paths`: files and saved `datasets` folders as given, other folders searched
    for .json/.jsonl/.parquet files."""
    from evr1.data.tables import TABLE_SUFFIXES, check_dataset_dict, is_dataset_dir

    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if is_dataset_dir(path) or path.is_file():
            files.append(path)
        elif path.is_dir():
            check_dataset_dict(path)
            found = sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.suffix in (*RECORD_SUFFIXES, *TABLE_SUFFIXES)
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise Evr1Error(f"{path}: folder holds no .json, .jsonl or .parquet record files")
            files.extend(found)
        else:
            hub = " (records are read from local files only: save a hub dataset with `datasets` first)" if _hub_like(item) else ""
            raise Evr1Error(f"{path}: no such file or folder{hub}")
    return files


def _hub_like(item: str | Path) -> bool:
    text = str(item)
    return text.count("/") == 1 and not text.startswith((".", "/", "~")) and not Path(text).suffix


def iter_json_objects(paths: PathsArg, columns: Mapping[str, str] | None = None) -> Iterator[Located]:
    """Every JSON value of the record files (every row of a table: `evr1.data.tables`) with its line (row); syntax
    errors become `RecordError` values. `columns` maps record fields to the names the files use for them."""
    from evr1.data.tables import is_table, table_rows

    for file in record_files(paths):
        if is_table(file):
            for number, row in table_rows(file):
                yield Located(file, number, rename(row, columns or {}, fields_only=True))
            continue
        values = _jsonl_values(file) if file.suffix == ".jsonl" else _json_values(file)
        for item in values:
            yield Located(item.file, item.line, rename(item.value, columns)) if columns else item


def rename(value: Any, columns: Mapping[str, str], fields_only: bool = False) -> Any:
    """A record object with the columns `columns` names (field -> column) under their field names; the mapped
    name wins over a column already called so. `fields_only`: drop the other columns that are no record field."""
    if not isinstance(value, dict):
        return value
    sources = set(columns.values())
    out = {field: value[column] for field, column in columns.items() if column in value}
    for key, item in value.items():
        if key not in sources and key not in out and (not fields_only or key in Record.model_fields):
            out[key] = item
    return out


def _jsonl_values(file: Path) -> Iterator[Located]:
    for number, raw in enumerate(file.read_bytes().split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield Located(file, number, RecordError(file, number, None, f"not UTF-8 text ({exc.reason})"))
            continue
        if not text.strip():
            continue
        try:
            yield Located(file, number, json.loads(text))
        except json.JSONDecodeError as exc:
            yield Located(file, number, RecordError(file, number, None, f"malformed JSON: {exc.msg} (column {exc.colno})"))


def _json_values(file: Path) -> Iterator[Located]:
    """The elements of a top-level JSON array (or the one top-level object), each with its line."""
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        yield Located(file, 1, RecordError(file, None, None, f"not UTF-8 text ({exc.reason})"))
        return
    decoder = json.JSONDecoder()
    lines = _LineCounter(text)
    pos = _skip_space(text, 0)
    try:
        if not text.startswith("[", pos):
            value, end = decoder.raw_decode(text, pos)
            if (after := _skip_space(text, end)) != len(text):
                lines_of_json = "\n" not in text[pos:end] and "\n" in text[end:after]  # one value per line
                raise _NotRead("extra data after the JSON value", text, after, lines_of_json)
            yield Located(file, lines.at(pos), value)
            return
        pos = _skip_space(text, pos + 1)
        if text.startswith("]", pos):
            pos += 1
        else:
            while True:
                value, end = decoder.raw_decode(text, pos)
                yield Located(file, lines.at(pos), value)
                pos = _skip_space(text, end)
                if text.startswith(",", pos):
                    pos = _skip_space(text, pos + 1)
                elif text.startswith("]", pos):
                    pos += 1
                    break
                else:
                    raise json.JSONDecodeError("expected ',' or ']' between records", text, pos)
        if _skip_space(text, pos) != len(text):
            raise json.JSONDecodeError("extra data after the JSON array", text, _skip_space(text, pos))
    except json.JSONDecodeError as exc:
        if isinstance(exc, _NotRead) and exc.lines_of_json:
            hint = "nothing of this file was read: it looks like JSON lines (one record per line), so rename it .jsonl"
        else:
            hint = "the rest of the file was not read"
        yield Located(file, exc.lineno, RecordError(file, exc.lineno, None, f"malformed JSON: {exc.msg} (column {exc.colno}); {hint}"))


class _NotRead(json.JSONDecodeError):
    """Text after a whole top-level JSON value; `lines_of_json` when that value sat on its own line."""

    def __init__(self, msg: str, doc: str, pos: int, lines_of_json: bool) -> None:
        super().__init__(msg, doc, pos)
        self.lines_of_json = lines_of_json


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


class _LineCounter:
    """Line numbers of increasing offsets in one text, counted incrementally."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: dict[str, Any]) -> str:
    msg = str(error["msg"])
    return msg.removeprefix("Value error, ")


def validate_record(value: Any, file: Path | str, line: int) -> Record | list[RecordError]:
    """The `Record` for one parsed JSON value, or every problem found in it (each naming its field)."""
    if not isinstance(value, dict):
        return [RecordError(file, line, None, f"expected a JSON object (a record), got {type(value).__name__}")]
    try:
        return Record.model_validate(value)
    except ValidationError as exc:
        rid = value.get("id")
        suffix = f" (record {rid!r})" if isinstance(rid, (str, int)) and not isinstance(rid, bool) else ""
        return [
            RecordError(file, line, _field_path(err["loc"]) or None, _message(err) + suffix)
            for err in exc.errors(include_url=False)
        ]


def reject_duplicate_ids(
    results: Iterable[tuple[Located, Record | list[RecordError]]], field: str = "id"
) -> Iterator[tuple[Located, Record | list[RecordError]]]:
    """Pass results through, replacing a record whose id was seen before by an error naming both places."""
    seen: dict[str, str] = {}
    for item, result in results:
        if isinstance(result, Record):
            here = f"{item.file}:{item.line}"
            first = seen.setdefault(result.id, here)
            if first != here:
                result = [RecordError(item.file, item.line, field, f"duplicate id {result.id!r} (first at {first})")]
        yield item, result


def scan_records(paths: PathsArg, columns: Mapping[str, str] | None = None) -> Iterator[tuple[Located, Record | list[RecordError]]]:
    """Every record or the problems found instead (malformed JSON, bad fields, duplicate ids); `columns`: as
    `iter_json_objects`."""

    def parsed() -> Iterator[tuple[Located, Record | list[RecordError]]]:
        for item in iter_json_objects(paths, columns):
            bad = isinstance(item.value, RecordError)
            yield item, [item.value] if bad else validate_record(item.value, item.file, item.line)

    return reject_duplicate_ids(parsed())


def read_records(paths: PathsArg, columns: Mapping[str, str] | None = None) -> Iterator[Record]:
    """The records of JSON/JSONL/Parquet files, saved datasets or folders; raises `RecordError` (file:line, field)
    at the first problem. `columns`: as `iter_json_objects`."""
    for _, result in scan_records(paths, columns):
        if isinstance(result, list):
            first = result[0]
            more = f" (and {len(result) - 1} more problem(s) in this record)" if len(result) > 1 else ""
            raise RecordError(first.file, first.line, first.field, first.message + more)
        yield result


def write_records(records: Iterable[Record], path: str | Path) -> int:
    """Write records as JSONL (one compact line each, defaults omitted); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(record_line(record) + "\n")
            count += 1
    return count


def record_line(record: Record) -> str:
    """One record as a JSON line (deterministic: fixed field order, defaults omitted)."""
    return json.dumps(record.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)


def resolve_media(record: Record, data_root: str | Path) -> list[Path]:
    """The media files of a record, resolved against the data root (absolute paths are kept)."""
    return [Path(data_root) / m.path for m in record.media]


def missing_media(record: Record, data_root: str | Path) -> list[Path]:
    """The media files of a record that do not exist under the data root."""
    return [p for p in resolve_media(record, data_root) if not p.is_file()]
