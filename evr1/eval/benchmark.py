"""A registered benchmark: where its data lives, how its annotations become records, how it is scored.

Data layout: `<data_root>/<folder>/<annotations>` (files or folders of JSON/JSONL) and the media
under `<data_root>/<folder>/<media_dir>/`. Annotation rows in the benchmark's official format go
through its importer; rows in the EasyVideoR1 format (`problem`, `problem_type`, `solution`/
`answer`, `path`/`videos`, ...) go through `evr1.data.importers` with media paths relative to
`<folder>`. Either way every record id is `<benchmark>/<source id>`.

The official aggregation of some benchmarks groups records by meta fields (MVBench by `task`, VideoMathQA
by `setting` and `question_id`, ...): each declares them (`meta_fields`), and a record without one is an
error naming the file, the record and the field, never a silently different headline. EasyVideoR1 rows
carry some of them under other names (`original_question_type`, `ovo_task`, ...): `easyvideor1_meta`
maps those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evr1.data.importers import import_one
from evr1.data.records import Record, RecordError, iter_json_objects, record_files, validate_record
from evr1.errors import Evr1Error
from evr1.eval.aggregate import Aggregator
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


Importer = Callable[[Mapping[str, Any], RowContext], list[dict[str, Any]]]
MetaMap = Callable[[Mapping[str, Any]], dict[str, Any]]  # an EasyVideoR1 record's meta -> canonical meta fields


def renamed(**sources: str) -> MetaMap:
    """A MetaMap giving each canonical field (keyword) the value of its EasyVideoR1 field, where that is set."""

    def meta(row: Mapping[str, Any]) -> dict[str, Any]:
        return {name: row[source] for name, source in sources.items() if row.get(source) not in (None, "")}

    return meta


def no_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    """The MetaMap of a benchmark whose EasyVideoR1 rows need no renames."""
    return {}


def is_easyvideor1(row: Mapping[str, Any]) -> bool:
    """An EasyVideoR1 / Video-R1 style row (our training-data format): a known `problem_type` and a problem.

    Official rows may use `problem_type` for their own categories (LongVideo-Reason: "goal", ...);
    those go to the benchmark's importer.
    """
    if "problem_type" not in row or not ("problem" in row or "solution" in row):
        return False
    try:
        ProblemType.parse(row["problem_type"])
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Benchmark:
    """One evaluation benchmark."""

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
    summary: str = ""
    meta_fields: tuple[str, ...] = ()  # meta every record needs: the official aggregation groups by them
    easyvideor1_meta: MetaMap = no_meta  # canonical meta fields from an EasyVideoR1 row's fields (renames)

    @property
    def needs_judge(self) -> bool:
        return any(name.endswith("_judge") for name in self.routes.values())

    def annotation_paths(self, data_root: str | Path) -> list[Path]:
        base = Path(data_root) / self.folder
        paths = [base / a for a in self.annotations if (base / a).exists()]
        if not paths:
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

    def convert_row(self, row: Any, ctx: RowContext) -> list[Record]:
        if not isinstance(row, Mapping):
            raise RecordError(ctx.file, ctx.line, None, f"expected a JSON object, got {type(row).__name__}")
        if is_easyvideor1(row):
            result = import_one(dict(row), ctx.file, ctx.line, media_prefix=self.folder)
            if not isinstance(result, list):
                meta = {**self.easyvideor1_meta(result.meta), **result.meta}
                result = result.model_copy(update={"id": f"{self.name}/{result.id}", "meta": meta})
            results = [result]
        else:
            try:
                converted = self.importer(row, ctx)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                field_name = exc.args[0] if isinstance(exc, KeyError) else None
                raise RecordError(ctx.file, ctx.line, field_name, f"not a {self.title} annotation row: {exc!r}") from None
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
        """Raise a RecordError naming the file, the record and the field when a `meta_fields` field is unset."""
        for name in self.meta_fields:
            if record.meta.get(name) in (None, ""):
                raise RecordError(ctx.file, ctx.line, name,
                                  f"{self.title} record {record.id!r} has no meta field {name!r}: the official"
                                  f" aggregation ({self.metric}) groups by it; add it to the row")
