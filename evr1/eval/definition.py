"""A registered benchmark: where its data lives, how its annotations become records, how it is scored.

Each built-in benchmark is one module of `evr1.eval.benchmarks` that builds its `Benchmark` with keywords
(`BENCHMARK = Benchmark(name=..., ...)`); this module holds the class and the plumbing every importer shares.

Data layout: `<data_root>/<folder>/<annotations>` (files or folders of JSON/JSONL) and the media
under `<data_root>/<folder>/<media_dir>/`. Annotation rows in the benchmark's official format go
through its importer; rows in the EasyVideoR1 format (`problem`, `problem_type`, `solution`/
`answer`, `path`/`videos`, ...) go through its `easyvideor1` importer, which builds on `evr1.data.importers`
(media paths relative to `<folder>`) and brings the rows to what the official importer gives: canonical meta
fields (EasyVideoR1 names them `original_question_type`, `ovo_task`, ...), distinct ids, the official
questions' wording. Either way every record id is `<benchmark>/<source id>`.

The official aggregation of some benchmarks groups records by meta fields (MVBench by `task`, VideoMathQA
by `setting` and `question_id`, ...): each declares them (`meta_fields`), and a record without one is an
error naming the file, the record and the field, never a silently different headline. Fields needed only
by some records (VSI-Bench's `difficulty` on object_rel_direction, Video-MME-v2's `group_structure` on logic
groups) are checked by the benchmark's `meta_check`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evr1.data.importers import import_one
from evr1.data.records import Record, RecordError, iter_json_objects, record_files, validate_record
from evr1.errors import CrossesProcesses, Evr1Error
from evr1.eval.aggregate import Aggregator
from evr1.eval.protocols import Official
from evr1.problem_types import ProblemType


@dataclass(frozen=True)
class RowContext:
    """Where an annotation row comes from, and how its media names become data-root paths.

    `item` is the row's position in its file (1-based): ids made from it, for rows without an id
    of their own, survive reformatting the file and differ between rows written on one line.
    """

    benchmark: Benchmark
    file: Path
    line: int
    item: int = 1

    @property
    def stem(self) -> str:
        return self.file.stem

    def media(self, name: str) -> str:
        """A media file name of the annotation as a path relative to the data root."""
        name = str(name).removeprefix("./")
        if PurePosixPath(name).is_absolute():
            return name
        return str(PurePosixPath(self.benchmark.folder) / self.benchmark.media_dir / name)


Records = list[dict[str, Any]]  # what an importer makes of one row: record dicts, ids without the benchmark prefix
Importer = Callable[[Mapping[str, Any], RowContext], Records]
MetaMap = Callable[[Mapping[str, Any]], dict[str, Any]]  # an EasyVideoR1 record's meta -> canonical meta fields
MetaCheck = Callable[[Mapping[str, Any]], None]  # raises FieldError when a record's meta lacks what it needs
LmmsDoc = Callable[[Record, Mapping[str, Any]], dict[str, Any]]  # record and its row -> a stock lmms-eval task's document

MC = (ProblemType.MULTIPLE_CHOICE,)  # the question types of a multiple-choice benchmark
JUDGE = {ProblemType.OPEN_ENDED: "open_ended_verdict_judge"}  # open-ended answers judged correct (1) or incorrect (0)


class WarningLines(logging.Handler):
    """The messages of the warnings logged by one thread (an importer's notes: files skipped, ...)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.lines.append(record.getMessage())


class FieldError(CrossesProcesses, ValueError):
    """What a row or a record's meta lacks for its benchmark: the field, and why (`Benchmark` adds file, line, record)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def is_easyvideor1(row: Mapping[str, Any], own_types: Collection[str] = ()) -> bool:
    """An EasyVideoR1 / Video-R1 style row (our training-data format): a known `problem_type` and a problem.

    Official rows may use `problem_type` for their own categories (LongVideo-Reason: "goal", ...);
    those go to the benchmark's importer. `own_types`: the benchmark's own `problem_type` names in
    EasyVideoR1's rows (OVO-Bench's forward tasks "REC", "SSR", "CRR").
    """
    if "problem_type" not in row or not ("problem" in row or "solution" in row):
        return False
    if row["problem_type"] in own_types:
        return True
    try:
        ProblemType.parse(row["problem_type"])
    except ValueError:
        return False
    return True


def full_id(record: Mapping[str, Any], ctx: RowContext) -> str:
    """The id a record dict will have once registered: `<benchmark>/<id>` (for error messages)."""
    return f"{ctx.benchmark.name}/{record['id']}"


def easyvideor1_record(row: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """An EasyVideoR1 row as a record dict (`evr1.data.importers`: id `<file stem>/<problem_id>`, the row's
    other fields in `meta`, media relative to the benchmark folder); a RecordError naming the field otherwise."""
    result = import_one(dict(row), ctx.file, ctx.line, media_prefix=ctx.benchmark.folder)
    if isinstance(result, list):
        first = result[0]
        raise RecordError(first.file, first.line, first.field, f"{ctx.benchmark.name}: {first.message}")
    return result.model_dump(mode="json", exclude_none=True)


def with_meta(meta_map: MetaMap) -> Importer:
    """An EasyVideoR1 importer adding the canonical meta fields `meta_map` finds (the row's own fields win)."""

    def importer(row: Mapping[str, Any], ctx: RowContext) -> list[dict[str, Any]]:
        record = easyvideor1_record(row, ctx)
        record["meta"] = {**meta_map(record["meta"]), **record["meta"]}
        return [record]

    return importer


def renamed(**sources: str) -> Importer:
    """An EasyVideoR1 importer giving each canonical meta field (keyword) the value of its EasyVideoR1 field, where set."""
    return with_meta(lambda meta: {name: meta[source] for name, source in sources.items() if meta.get(source) not in (None, "")})


def as_imported(row: Mapping[str, Any], ctx: RowContext) -> list[dict[str, Any]]:
    """The EasyVideoR1 importer of a benchmark whose rows need no more than `easyvideor1_record`."""
    return [easyvideor1_record(row, ctx)]


def no_check(meta: Mapping[str, Any]) -> None:
    """The MetaCheck of a benchmark whose records need no field beyond its `meta_fields`."""


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """One evaluation benchmark, built with keywords (`evr1.eval.benchmarks.<name>.BENCHMARK`)."""

    name: str
    title: str
    folder: str
    annotations: tuple[str, ...]
    media_dir: str
    question_types: tuple[ProblemType, ...]
    metric: str
    aggregate: Aggregator
    importer: Importer
    routes: Mapping[ProblemType, str] = field(default_factory=dict)  # scorer overrides (e.g. the judge)
    lmms_task: str | None = None  # lmms-eval 0.7.3's own task, where it has one
    meta_fields: tuple[str, ...] = ()  # meta every record needs: the official aggregation groups by them
    meta_check: MetaCheck = no_check  # meta some records need (raises FieldError)
    easyvideor1: Importer = as_imported  # EasyVideoR1 rows -> record dicts as the official importer gives them
    easyvideor1_types: tuple[str, ...] = ()  # the benchmark's own problem_type names in EasyVideoR1 rows
    official: Official | None = None  # the official scorer reproduced (None: the official block is the strict one)
    lmms_doc: LmmsDoc | None = None  # the stock lmms-eval task's document of a record (None: the record itself)
    fixtures: Mapping[str, Any] = field(default_factory=dict)  # tiny annotation files: path in the folder -> JSON

    @property
    def needs_judge(self) -> bool:
        return any(name.endswith("_judge") for name in self.routes.values())

    @property
    def summary(self) -> str:
        """What `BENCHMARKS.describe` (and `evr1 list benchmarks`) says of this benchmark."""
        return f"{self.title} — {self.metric}"

    def annotation_paths(self, data_root: str | Path, *, required: bool = True) -> list[Path]:
        """The benchmark's annotation files and folders under `data_root`; an error when there are none and `required`."""
        base = Path(data_root) / self.folder
        paths = [base / a for a in self.annotations if (base / a).exists()]
        if not paths and required:
            wanted = ", ".join(str(base / a) for a in self.annotations)
            raise Evr1Error(f"benchmark {self.name!r}: no annotations found (looked for {wanted})")
        return paths

    def rows(self, data_root: str | Path) -> Iterator[tuple[Record, Any, RowContext]]:
        """Every record under `data_root` with the annotation row it comes from and where that row is.

        Raises `RecordError` (file:line) on bad JSON, a row that is not the benchmark's format, or a
        duplicate id.
        """
        counts: dict[Path, int] = {}
        seen: dict[str, str] = {}
        for item in iter_json_objects(record_files(self.annotation_paths(data_root))):
            if isinstance(item.value, RecordError):
                raise item.value
            counts[item.file] = counts.get(item.file, 0) + 1
            ctx = RowContext(self, item.file, item.line, counts[item.file])
            for record in self.convert_row(item.value, ctx):
                if record.id in seen:
                    raise RecordError(ctx.file, ctx.line, "id", f"duplicate id {record.id!r} (first at {seen[record.id]})")
                seen[record.id] = f"{ctx.file}:{ctx.line}"
                yield record, item.value, ctx

    def load(self, data_root: str | Path) -> list[Record]:
        """Every record of the benchmark under `data_root` (see `rows` for the errors)."""
        return [record for record, _, _ in self.rows(data_root)]

    def load_noted(self, data_root: str | Path) -> tuple[list[Record], list[str]]:
        """`load`, and the warnings its importer logged on the `evr1.eval` logger (e.g. files skipped), one line each."""
        logger, notes = logging.getLogger("evr1.eval"), WarningLines()
        logger.addHandler(notes)
        try:
            return self.load(data_root), notes.lines
        finally:
            logger.removeHandler(notes)

    def convert_row(self, row: Any, ctx: RowContext) -> list[Record]:
        if not isinstance(row, Mapping):
            raise RecordError(ctx.file, ctx.line, None, f"expected a JSON object, got {type(row).__name__}")
        easyvideor1 = is_easyvideor1(row, self.easyvideor1_types)
        try:
            converted = (self.easyvideor1 if easyvideor1 else self.importer)(row, ctx)
        except RecordError:
            raise
        except FieldError as exc:
            raise RecordError(ctx.file, ctx.line, exc.field, f"{self.title}: {exc}") from None
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            field_name = exc.args[0] if isinstance(exc, KeyError) else None
            kind = "an EasyVideoR1" if easyvideor1 else "a"
            raise RecordError(ctx.file, ctx.line, field_name, f"not {kind} {self.title} annotation row: {exc!r}") from None
        results = [
            validate_record({**d, "id": f"{self.name}/{d['id']}", "meta": {"source": f"{ctx.file.name}:{ctx.line}", **d.get("meta", {})}},
                            ctx.file, ctx.line)
            for d in converted
        ]
        for result in results:
            if isinstance(result, list):
                first = result[0]
                raise RecordError(first.file, first.line, first.field, f"{self.name}: {first.message}")
            self.check_meta(result, ctx)
        return results  # type: ignore[return-value]

    def check_meta(self, record: Record, ctx: RowContext) -> None:
        """Raise a RecordError naming the file, the record and the field when a `meta_fields` field is unset or
        `meta_check` finds one missing."""
        for name in self.meta_fields:
            if record.meta.get(name) in (None, ""):
                raise RecordError(ctx.file, ctx.line, name,
                                  f"{self.title} record {record.id!r} has no meta field {name!r}: the official"
                                  f" aggregation ({self.metric}) groups by it; add it to the row")
        try:
            self.meta_check(record.meta)
        except FieldError as exc:
            raise RecordError(ctx.file, ctx.line, exc.field, f"{self.title} record {record.id!r}: {exc}") from None
