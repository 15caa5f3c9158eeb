"""Import EasyVideoR1 / Video-R1 style records into evr1 records.

Accepted source fields (JSON or JSONL, one object per record):

- `problem` (or `question`, `prompt`): the question; `<image>`/`<video>` placeholders are removed.
- `problem_type`: any spelling `ProblemType.parse` knows ("multiple choice", "free-form", "OCR",
  "spatial-temporal grounding", ...); when absent, records with options are multiple choice.
- `answer`, else `solution`: the content of the last `<answer>…</answer>` is the answer (the
  whole text when there are no tags); JSON for grounding types, a number for numerical ones,
  an option letter for multiple choice (option text is mapped to its letter). A code answer in
  plain text (Python asserts, fenced or not) becomes `{"language": "python", "tests": [...]}`,
  one test per top-level `assert` (the other top-level statements, e.g. imports and helpers, are
  put before each); markup (`<svg…`, `<html…`) stays text; a JSON object, or a JSON list of
  test snippets, is taken as it is.
- `options`: option texts; "A. …", "(B) …" prefixes in A, B, C order are removed.
- media: `videos`/`video` and `images`/`image` (a path or a list), or `path` with `data_type`
  ("video"/"image", else guessed from the extension). A leading "./" is dropped and
  `media_prefix` is put in front of relative paths.
- `process` (Video-R1 chain-of-thought data): kept as the offline trajectory, followed by the answer.
- `problem_id` (or `id`): the new id is `<file stem>/<problem_id>` (`<file stem>/L<line>`
  without one). Every other field is kept in `meta`, with `source` = "file:line".
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evr1.data.records import (
    Located,
    PathsArg,
    Record,
    RecordError,
    iter_json_objects,
    reject_duplicate_ids,
    validate_record,
    write_records,
)
from evr1.errors import Evr1Error
from evr1.problem_types import ProblemType, UnknownProblemTypeError

_ANSWER_TAG = re.compile(r"<\s*answer\s*>(.*?)<\s*/\s*answer\s*>", re.IGNORECASE | re.DOTALL)
_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[.):]\s*(.*)$", re.DOTALL)
_LETTER = re.compile(r"^\(?([A-Za-z])\)?(?:[.):\s]|$)")
_PLACEHOLDER = re.compile(r"<(?:image|video)>[ \t]*\n?")
_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n(.*?)```", re.DOTALL)
_VIDEO_SUFFIXES = {".mp4", ".avi", ".mov", ".mkv", ".webm", ".flv", ".m4v", ".mpg", ".mpeg", ".wmv", ".gif"}
_GROUNDING = {
    ProblemType.TEMPORAL_GROUNDING: ("time", 2),
    ProblemType.SPATIAL_GROUNDING: ("boxes", 4),
}
_CONSUMED = {"problem", "question", "prompt", "problem_type", "answer", "solution", "options", "videos", "video",
             "images", "image", "path", "data_type", "process", "problem_id", "id"}


class _FieldError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _first(raw: dict[str, Any], *keys: str) -> tuple[str | None, Any]:
    for key in keys:
        if raw.get(key) not in (None, ""):
            return key, raw[key]
    return None, None


def answer_content(text: str) -> str:
    """The content of the last complete `<answer>` tag, or the whole text stripped."""
    found = _ANSWER_TAG.findall(text)
    return (found[-1] if found else text).strip()


def strip_option_letters(options: list[str]) -> list[str]:
    """Option texts without "A. " style prefixes, when every option has one in A, B, C order."""
    matches = [_OPTION_PREFIX.match(o) for o in options]
    if all(m is not None and m.group(1) == chr(ord("A") + i) for i, m in enumerate(matches)):
        return [m.group(2).strip() for m in matches]  # type: ignore[union-attr]
    return [o.strip() for o in options]


def _choice(text: str, options: list[str] | None) -> str:
    for i, option in enumerate(options or []):
        if option.strip().lower() == text.strip().lower():
            return chr(ord("A") + i)
    letter = _LETTER.match(text.strip())
    if letter:
        found = letter.group(1).upper()
        if options is None or ord(found) - ord("A") < len(options):
            return found
        raise _FieldError("answer", f"answer {found!r} is not among the {len(options)} options")
    raise _FieldError("answer", f"cannot map multiple-choice answer {text!r} to an option letter")


def _number(text: str) -> int | float | str:
    if not _NUMBER.match(text) or not any(c.isdigit() for c in text):
        return text  # units, words, fractions: left to the numerical reward's normaliser
    plain = text.replace(",", "")
    try:
        return int(plain)
    except ValueError:
        return float(plain)


def _structured(value: Any, ptype: ProblemType) -> Any:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _FieldError("answer", f"a {ptype.value} answer must be JSON ({exc.msg})") from None
    key_len = _GROUNDING.get(ptype)
    if key_len and isinstance(value, list) and len(value) == key_len[1]:
        value = {key_len[0]: value}  # a bare [start, end] or [x1, y1, x2, y2]
    if not isinstance(value, dict):
        raise _FieldError("answer", f"a {ptype.value} answer must be a JSON object, got {type(value).__name__}")
    return value


def code_tests(code: str) -> list[str]:
    """Python test code as evr1's tests list: one snippet per top-level `assert`, each preceded by
    the code's other top-level statements (imports, helpers) in their order."""
    fenced = _FENCE.findall(code)
    code = "\n".join(fenced) if fenced else code
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise _FieldError("answer", f"code tests are not valid Python (line {exc.lineno}: {exc.msg})") from None
    setup: list[str] = []
    asserts: list[str] = []
    for node in tree.body:
        (asserts if isinstance(node, ast.Assert) else setup).append(ast.get_source_segment(code, node) or "")
    if not asserts:
        raise _FieldError("answer", "code tests hold no top-level assert statement")
    return ["\n".join([*setup, test]) for test in asserts]


def _code(text: str) -> Any:
    if text.startswith("<"):
        return text  # SVG / HTML reference markup
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError:
        loaded = None
    if isinstance(loaded, dict):
        return loaded
    if isinstance(loaded, list) and loaded and all(isinstance(t, str) for t in loaded):
        return {"language": "python", "tests": loaded}
    return {"language": "python", "tests": code_tests(text)}


def convert_answer(value: Any, ptype: ProblemType, options: list[str] | None) -> Any:
    """The answer in evr1's conventions for `ptype` (see `evr1.data.records`)."""
    if isinstance(value, str):
        value = answer_content(value)
        if not value:
            raise _FieldError("answer", "empty answer")
    if ptype in (ProblemType.TEMPORAL_GROUNDING, ProblemType.SPATIAL_GROUNDING,
                 ProblemType.SPATIAL_TEMPORAL_GROUNDING, ProblemType.TRACKING):
        return _structured(value, ptype)
    if not isinstance(value, str):
        return value
    if ptype is ProblemType.CODE:
        return _code(value)
    if ptype is ProblemType.MULTIPLE_CHOICE:
        return _choice(value, options)
    if ptype in (ProblemType.NUMERICAL, ProblemType.REGRESSION):
        return _number(value)
    if ptype is ProblemType.BOOLEAN:
        return {"yes": "yes", "true": "yes", "no": "no", "false": "no"}.get(value.lower().rstrip("."), value)
    return value


def _paths(raw: dict[str, Any], key: str) -> list[str]:
    value = raw[key]
    items = value if isinstance(value, list) else [value]
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            item = item["path"]
        if not isinstance(item, str) or not item:
            raise _FieldError(f"{key}[{i}]" if isinstance(value, list) else key, f"expected a file path, got {type(item).__name__}")
        out.append(item)
    return out


def _media(raw: dict[str, Any], prefix: str) -> list[dict[str, str]]:
    found: list[tuple[str, str]] = []
    for kind, keys in (("video", ("videos", "video")), ("image", ("images", "image"))):
        for key in keys:
            if raw.get(key) not in (None, "", []):
                found += [(kind, p) for p in _paths(raw, key)]
    if not found and raw.get("path") not in (None, ""):
        for p in _paths(raw, "path"):
            kind = raw.get("data_type") or ("video" if PurePosixPath(p).suffix.lower() in _VIDEO_SUFFIXES else "image")
            if kind not in ("video", "image"):
                raise _FieldError("data_type", f"expected 'video' or 'image', got {kind!r}")
            found.append((kind, p))
    return [{"kind": kind, "path": _relocate(p, prefix)} for kind, p in found]


def _relocate(path: str, prefix: str) -> str:
    path = path.removeprefix("./")
    return path if not prefix or PurePosixPath(path).is_absolute() else str(PurePosixPath(prefix) / path)


def _convert(raw: dict[str, Any], file: Path, line: int, media_prefix: str) -> dict[str, Any]:
    _, problem = _first(raw, "problem", "question", "prompt")
    if not isinstance(problem, str):
        raise _FieldError("problem", "missing (expected the question text in 'problem')" if problem is None
                          else f"expected text, got {type(problem).__name__}")
    options = raw.get("options") or None
    if options is not None:
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise _FieldError("options", "expected a list of option texts")
        options = strip_option_letters(options)
    ptype_raw = raw.get("problem_type") or ("multiple choice" if options else None)
    if ptype_raw is None:
        raise _FieldError("problem_type", "missing (and no options to infer multiple choice)")
    try:
        ptype = ProblemType.parse(ptype_raw)
    except UnknownProblemTypeError as exc:
        raise _FieldError("problem_type", str(exc)) from None
    key, answer = _first(raw, "answer", "solution")
    if key is None:
        raise _FieldError("solution", "missing (expected 'answer' or 'solution')")
    try:
        answer = convert_answer(answer, ptype, options)
    except _FieldError as exc:
        raise _FieldError(key, str(exc)) from None
    id_key, source_id = _first(raw, "problem_id", "id")
    record: dict[str, Any] = {
        "id": f"{file.stem}/{source_id}" if id_key else f"{file.stem}/L{line}",
        "problem": _PLACEHOLDER.sub("", problem).strip(),
        "problem_type": ptype,
        "answer": answer,
        "options": options,
        "media": _media(raw, media_prefix),
        "meta": {"source": f"{file.name}:{line}", **({"source_id": source_id} if id_key else {}),
                 **{k: v for k, v in raw.items() if k not in _CONSUMED}},
    }
    process = raw.get("process")
    if isinstance(process, str) and process.strip():
        shown = answer if isinstance(answer, str) else json.dumps(answer)
        record["offline_response"] = f"{process.strip()}\n<answer>{shown}</answer>"
    return record


def import_one(raw: Any, file: Path, line: int, *, media_prefix: str = "") -> Record | list[RecordError]:
    """One source object as a `Record`, or the problems found (each naming file, line and field)."""
    if not isinstance(raw, dict):
        return [RecordError(file, line, None, f"expected a JSON object, got {type(raw).__name__}")]
    try:
        converted = _convert(raw, file, line, media_prefix)
    except _FieldError as exc:
        return [RecordError(file, line, exc.field, str(exc))]
    return validate_record(converted, file, line)


def import_records(paths: PathsArg, *, media_prefix: str = "") -> Iterator[tuple[Located, Record | list[RecordError]]]:
    """Every source record converted, or the problems found instead (duplicate new ids included)."""

    def converted() -> Iterator[tuple[Located, Record | list[RecordError]]]:
        for item in iter_json_objects(paths):
            bad = isinstance(item.value, RecordError)
            yield item, [item.value] if bad else import_one(item.value, item.file, item.line, media_prefix=media_prefix)

    return reject_duplicate_ids(converted(), field="problem_id")


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote and what it rejected."""

    written: int
    errors: list[RecordError]


def import_to_file(paths: PathsArg, out: str | Path, *, media_prefix: str = "", skip_invalid: bool = False) -> ImportReport:
    """Convert source records into one JSONL file. With errors, nothing is written unless `skip_invalid`."""
    records: list[Record] = []
    errors: list[RecordError] = []
    for _, result in import_records(paths, media_prefix=media_prefix):
        if isinstance(result, Record):
            records.append(result)
        else:
            errors.extend(result)
    if errors and not skip_invalid:
        return ImportReport(0, errors)
    if not records:
        raise Evr1Error("no records to write")
    return ImportReport(write_records(records, out), errors)
