"""Official aggregation rules of the benchmarks, over scored sample rows.

A row is one sample as written to `samples.jsonl`: `score` in [0, 1] (0 for a failed or
unparseable sample, which is never dropped), `meta` (the record's meta: sub-task, category, ...),
`components` (e.g. `tiou`/`viou`) and `error`. Every function returns an `Aggregate` whose
numbers are percentages (0-100).

These are the shapes several benchmarks share; an aggregation of one benchmark's own (Video-MME-v2's group score,
VideoMathQA's MBin, ...) lives in its module (`evr1.eval.benchmarks.<name>`), built on these helpers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Aggregate:
    """The headline score, named metrics, and per-key breakdowns `{key: {value: (score, n)}}`."""

    score: float
    metrics: dict[str, float] = field(default_factory=dict)
    breakdowns: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)


Aggregator = Callable[[Sequence[Row]], Aggregate]


def meta_value(row: Row, key: str) -> str:
    """A row's meta value as a category label ("unknown" when absent)."""
    value = (row.get("meta") or {}).get(key)
    return "unknown" if value is None or value == "" else str(value)


def pct(values: Iterable[float]) -> float:
    """The mean of `values` in percent (0 for none)."""
    values = list(values)
    return 100.0 * sum(values) / len(values) if values else 0.0


def meta_labels(row: Row, key: str) -> list[str]:
    """A row's labels for `key`: each item of a list value (LVBench's several question types), else `meta_value`."""
    value = (row.get("meta") or {}).get(key)
    if isinstance(value, (list, tuple)) and value:
        return [str(v) for v in value]
    return [meta_value(row, key)]


def groups(rows: Sequence[Row], key: str) -> dict[str, list[Row]]:
    """Rows by meta value of `key`, in sorted label order; a row with a list value is in the group of each label."""
    out: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        for label in meta_labels(row, key):
            out[label].append(row)
    return dict(sorted(out.items()))


def breakdown(rows: Sequence[Row], key: str) -> dict[str, tuple[float, int]]:
    """Mean score (percent) and count of each category of `key`."""
    return {label: (pct(r["score"] for r in members), len(members)) for label, members in groups(rows, key).items()}


def breakdowns_by(rows: Sequence[Row], keys: Sequence[str]) -> dict[str, dict[str, tuple[float, int]]]:
    """`breakdown` by each of `keys` that some row's meta has."""
    return {key: breakdown(rows, key) for key in keys if any(key in (r.get("meta") or {}) for r in rows)}


def accuracy(*keys: str, name: str = "accuracy") -> Aggregator:
    """Mean score over all items (metric `name`), with breakdowns by the given meta keys."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        overall = pct(r["score"] for r in rows)
        return Aggregate(overall, {name: overall}, breakdowns_by(rows, keys))

    return aggregate


def macro(key: str, *more: str, name: str = "macro_avg", within: str | None = None) -> Aggregator:
    """Mean over the categories of `key` of each category's mean score (every item in its denominator).

    MVBench (20 tasks), MLVU M-Avg (task types), VSI-Bench (question types; numeric ones scored by MRA;
    `within="difficulty"`: a task with levels scores the mean of its levels, as object_rel_direction).
    """

    def category(members: Sequence[Row]) -> float:
        if within is None:
            return pct(r["score"] for r in members)
        per = breakdown(members, within)
        return sum(s for s, _ in per.values()) / len(per)

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        per = [category(members) for members in groups(rows, key).values()]
        score = sum(per) / len(per) if per else 0.0
        keys = (key, *more, *((within,) if within else ()))
        return Aggregate(score, {name: score, "accuracy": pct(r["score"] for r in rows)}, breakdowns_by(rows, keys))

    return aggregate


def nested_macro(outer: str, inner: str) -> Aggregator:
    """Macro mean over `inner` categories within each `outer` category, then over `outer` (OVO-Bench)."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        metrics: dict[str, float] = {}
        for label, members in groups(rows, outer).items():
            per = breakdown(members, inner)
            metrics[label] = sum(s for s, _ in per.values()) / len(per)
        score = sum(metrics.values()) / len(metrics) if metrics else 0.0
        return Aggregate(score, {"overall": score, **metrics}, breakdowns_by(rows, (outer, inner)))

    return aggregate

