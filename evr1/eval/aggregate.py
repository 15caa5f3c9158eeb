"""Official aggregation rules of the benchmarks, over scored sample rows.

A row is one sample as written to `samples.jsonl`: `score` in [0, 1] (0 for a failed or
unparseable sample, which is never dropped), `meta` (the record's meta: sub-task, category, ...),
`components` (e.g. `tiou`/`viou`) and `error`. Every function returns an `Aggregate` whose
numbers are percentages (0-100).
"""

from __future__ import annotations

import ast
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


def _pct(values: Iterable[float]) -> float:
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
    return {label: (_pct(r["score"] for r in members), len(members)) for label, members in groups(rows, key).items()}


def _breakdowns(rows: Sequence[Row], keys: Sequence[str]) -> dict[str, dict[str, tuple[float, int]]]:
    return {key: breakdown(rows, key) for key in keys if any(key in (r.get("meta") or {}) for r in rows)}


def accuracy(*keys: str, name: str = "accuracy") -> Aggregator:
    """Mean score over all items (metric `name`), with breakdowns by the given meta keys."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        overall = _pct(r["score"] for r in rows)
        return Aggregate(overall, {name: overall}, _breakdowns(rows, keys))

    return aggregate


def macro(key: str, *more: str, name: str = "macro_avg", within: str | None = None) -> Aggregator:
    """Mean over the categories of `key` of each category's mean score (every item in its denominator).

    MVBench (20 tasks), MLVU M-Avg (task types), VSI-Bench (question types; numeric ones scored by MRA;
    `within="difficulty"`: a task with levels scores the mean of its levels, as object_rel_direction).
    """

    def category(members: Sequence[Row]) -> float:
        if within is None:
            return _pct(r["score"] for r in members)
        per = breakdown(members, within)
        return sum(s for s, _ in per.values()) / len(per)

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        per = [category(members) for members in groups(rows, key).values()]
        score = sum(per) / len(per) if per else 0.0
        keys = (key, *more, *((within,) if within else ()))
        return Aggregate(score, {name: score, "accuracy": _pct(r["score"] for r in rows)}, _breakdowns(rows, keys))

    return aggregate


def nested_macro(outer: str, inner: str) -> Aggregator:
    """Macro mean over `inner` categories within each `outer` category, then over `outer` (OVO-Bench)."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        metrics: dict[str, float] = {}
        for label, members in groups(rows, outer).items():
            per = breakdown(members, inner)
            metrics[label] = sum(s for s, _ in per.values()) / len(per)
        score = sum(metrics.values()) / len(metrics) if metrics else 0.0
        return Aggregate(score, {"overall": score, **metrics}, _breakdowns(rows, (outer, inner)))

    return aggregate


def grounding(thresholds: Sequence[float] = (0.3, 0.5, 0.7)) -> Aggregator:
    """Temporal grounding (Charades-STA): mIoU and recall at IoU thresholds (the score is the IoU)."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        ious = [float(r["score"]) for r in rows]
        metrics = {"mIoU": _pct(ious)}
        for t in thresholds:
            metrics[f"R@{t:g}"] = _pct(1.0 if iou >= t else 0.0 for iou in ious)
        return Aggregate(metrics["mIoU"], metrics)

    return aggregate


def spatio_temporal(*keys: str) -> Aggregator:
    """STVG: mean of 0.5 tIoU + 0.5 box IoU, with the mean tIoU and box IoU reported apart."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        comp = [r.get("components") or {} for r in rows]
        metrics = {
            "score": _pct(r["score"] for r in rows),
            "tIoU": _pct(c.get("tiou", 0.0) for c in comp),
            "box_IoU": _pct(c.get("viou", 0.0) for c in comp),
        }
        return Aggregate(metrics["score"], metrics, _breakdowns(rows, keys))

    return aggregate


def videomath(*keys: str) -> Aggregator:
    """VideoMathQA: MBin (a question counts only when all its binary pairs are right) and MCQ accuracy.

    Breakdowns are labelled by metric: `<key> (MBin)` over MBin questions (a question takes its first
    pair's label, as lmms-eval's per-category MBin), `<key> (MCQ)` over MCQ items.
    """

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        mcq = [r for r in rows if meta_value(r, "setting") == "mcq"]
        mbin = [r for r in rows if meta_value(r, "setting") == "mbin"]
        questions = [
            {"score": 1.0 if all(r["score"] >= 1.0 for r in members) else 0.0, "meta": members[0].get("meta") or {}}
            for members in groups(mbin, "question_id").values()
        ]
        mbin_score = _pct(q["score"] for q in questions)
        metrics = {"MBin": mbin_score, "MCQ": _pct(r["score"] for r in mcq), "mbin_questions": float(len(questions))}
        tables = {f"{key} (MBin)": table for key, table in _breakdowns(questions, keys).items()}
        tables.update({f"{key} (MCQ)": table for key, table in _breakdowns(mcq, keys).items()})
        return Aggregate(mbin_score if mbin else metrics["MCQ"], metrics, tables)

    return aggregate


RELEVANCE = (0.0, 1 / 16, 4 / 16, 9 / 16, 1.0)  # by number of right answers (of 4)
LOGIC = {  # group structure -> score by length of the right chain
    (1, 2, 3, 4): (0.0, 1 / 16, 4 / 16, 9 / 16, 1.0),
    (1, (2, 3), 4): (0.0, 1 / 12, 4 / 12, 7 / 12, 1.0),
    ((1, 2), 3, 4): (0.0, 1 / 10, 2 / 10, 5 / 10, 1.0),
}


def as_tuple(value: Any) -> Any:
    return tuple(as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


def logic_chain(right: Sequence[bool], structure: Any) -> int:
    """Length of the chain of right answers in a Video-MME-v2 logic group.

    Questions are answered in order; the chain stops at the first wrong one, except that of two
    parallel questions (a bracketed pair in the structure) one right is enough to go on.
    """
    shape = as_tuple(ast.literal_eval(structure) if isinstance(structure, str) else structure)
    if shape not in LOGIC:
        raise ValueError(f"unknown Video-MME-v2 group structure {structure!r}; known: {list(LOGIC)}")
    chain = 0
    while chain < len(right) and right[chain]:
        chain += 1
    if shape == (1, (2, 3), 4) and chain == 1 and len(right) > 2 and right[2]:
        chain = 2
    if shape == ((1, 2), 3, 4) and chain == 0 and len(right) > 1 and right[1]:
        chain = 1
    return chain


def question_order(row: Row) -> tuple[int, str]:
    """Video-MME-v2 question order in its group: the number after the last "-" of `question_id` ("001-3" -> 3)."""
    qid = str((row.get("meta") or {}).get("question_id", row.get("id")))
    suffix = qid.rsplit("-", 1)[-1]
    return (int(suffix), qid) if suffix.isdigit() else (0, qid)


def group_score(members: Sequence[Row]) -> float:
    """The non-linear score of one Video-MME-v2 question group (four questions about one video)."""
    ordered = sorted(members, key=question_order)
    right = [r["score"] >= 1.0 for r in ordered]
    if meta_value(ordered[0], "group_type") == "logic":
        structure = (ordered[0].get("meta") or {}).get("group_structure")
        return LOGIC[as_tuple(ast.literal_eval(structure) if isinstance(structure, str) else structure)][
            min(logic_chain(right, structure), 4)
        ]
    return RELEVANCE[min(sum(right), 4)]


GROUP_KEYS = ("group_type", "level", "second_head", "third_head")


def grouped_nonlinear(group_key: str = "group_id") -> Aggregator:
    """Video-MME-v2: mean over question groups of the group's non-linear score, and plain accuracy.

    Breakdowns (by `GROUP_KEYS`: the official `level_N`, `second_head`, `third_head`) are group scores over
    groups (n = groups); a group takes the labels of its last question, as the official `get_final_rating`.
    `relevance_linear_score` is the official linear counterpart (right answers / 4) over relevance groups.
    """

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        by_group = groups(rows, group_key)
        scored = [
            {"score": group_score(members), "right": sum(r["score"] >= 1.0 for r in members) / 4,
             "meta": (max(members, key=question_order).get("meta") or {})}
            for members in by_group.values()
        ]
        overall = _pct(g["score"] for g in scored)
        metrics = {"group_score": overall, "accuracy": _pct(r["score"] for r in rows)}
        for kind in ("relevance", "logic"):
            chosen = [g for g in scored if meta_value(g, "group_type") == kind]
            if chosen:
                metrics[f"{kind}_score"] = _pct(g["score"] for g in chosen)
            if chosen and kind == "relevance":
                metrics["relevance_linear_score"] = _pct(g["right"] for g in chosen)
        return Aggregate(overall, metrics, _breakdowns(scored, GROUP_KEYS))

    return aggregate
