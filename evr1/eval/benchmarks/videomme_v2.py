"""Video-MME-v2: harder general video QA (8-option multiple choice), scored per question group.

Four questions about one video form a group, scored non-linearly: a relevance group by its count of right answers,
a logic group by the chain of right answers along its structure (`logic_chain`). The official scorer is
`test_video_mme_v2.py` (an unread answer marked -1).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate, Aggregator
from evr1.eval.annotation_rows import mc, mp4_file, option_list, video
from evr1.eval.definition import MC, Benchmark, FieldError, RowContext
from evr1.eval.lmms.doc_fields import answer_letter, lettered, option_texts, required, source_id
from evr1.eval.lmms.scoring import named_metric, official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import first_capital, visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def videomme_v2(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """`level`, `second_head` and `third_head` label the question; a group takes its last question's (the official rule)."""
    return [mc(row["question_id"], row["question"], option_list(row["options"]), row["answer"],
               [video(ctx, mp4_file(row["video_id"]))], group_id=str(row["video_id"]), question_id=str(row["question_id"]),
               group_type=row["group_type"], group_structure=row.get("group_structure"), level=row.get("level"),
               second_head=row.get("second_head"), third_head=row.get("third_head"))]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


def videomme_v2_check(meta: Row) -> None:
    """A logic group scores the chain of right answers along its structure: each of its records needs it."""
    if meta.get("group_type") != "logic":
        return
    structure = meta.get("group_structure")
    if structure in (None, ""):
        raise FieldError("group_structure", "a record of a logic group needs the group's structure (meta 'group_structure',"
                         " e.g. \"[1, [2, 3], 4]\"): the group scores the chain of right answers along it")
    try:
        logic_chain([], structure)
    except (ValueError, SyntaxError) as exc:
        raise FieldError("group_structure", f"unreadable group_structure {structure!r} of a logic group: {exc}") from None


# -- official scorer ---------------------------------------------------------------------------------------------------


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
    if agg.meta_value(ordered[0], "group_type") == "logic":
        structure = (ordered[0].get("meta") or {}).get("group_structure")
        return LOGIC[as_tuple(ast.literal_eval(structure) if isinstance(structure, str) else structure)][
            min(logic_chain(right, structure), 4)
        ]
    return RELEVANCE[min(sum(right), 4)]


GROUP_KEYS = ("group_type", "level", "second_head", "third_head")


def grouped_nonlinear(group_key: str = "group_id") -> Aggregator:
    """Video-MME-v2: mean over question agg.groups of the group's non-linear score, and plain accuracy.

    Breakdowns (by `GROUP_KEYS`: the official `level_N`, `second_head`, `third_head`) are group scores over
    agg.groups (n = agg.groups); a group takes the labels of its last question, as the official `get_final_rating`.
    `relevance_linear_score` is the official linear counterpart (right answers / 4) over relevance agg.groups.
    """

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        by_group = agg.groups(rows, group_key)
        scored = [
            {"score": group_score(members), "right": sum(r["score"] >= 1.0 for r in members) / 4,
             "meta": (max(members, key=question_order).get("meta") or {})}
            for members in by_group.values()
        ]
        overall = agg.pct(g["score"] for g in scored)
        metrics = {"group_score": overall, "accuracy": agg.pct(r["score"] for r in rows)}
        for kind in ("relevance", "logic"):
            chosen = [g for g in scored if agg.meta_value(g, "group_type") == kind]
            if chosen:
                metrics[f"{kind}_score"] = agg.pct(g["score"] for g in chosen)
            if chosen and kind == "relevance":
                metrics["relevance_linear_score"] = agg.pct(g["right"] for g in chosen)
        return Aggregate(overall, metrics, agg.breakdowns_by(scored, GROUP_KEYS))

    return aggregate


VIDEOMME_V2_PREFIXES = ("Final Answer:", "The best answer is", "The correct answer is", "The answer is", "The answer",
                        "The best option is", "The correct option is", "Best answer:", "Best option:", "Answer:",
                        "Option:")


def videomme_v2_item(row: Row) -> dict[str, Any]:
    """The first capital A-H after the prefixes: mark 1 right, 0 wrong, -1 none read (`components.mark`); `score`
    is 1 for right (the simple accuracy counts marked items only)."""
    letter = first_capital(visible(row), VIDEOMME_V2_PREFIXES, "ABCDEFGH")
    mark = -1 if letter is None else int(letter == row["answer"])
    return {"score": float(mark == 1), "components": {"mark": mark}}


def _v2_group(marks: Sequence[int], kind: str, structure: Any) -> float:
    """A group's official score (0-1) from its marks in question order, -1 as the official script counts it: it
    lowers a relevance group's count (a count below 0 scores 0) and, being true, continues a logic chain."""
    if kind == "relevance":
        count = sum(marks)
        return RELEVANCE[count] if 0 <= count <= 4 else 0.0
    shape = as_tuple(ast.literal_eval(structure) if isinstance(structure, str) else structure)
    chain = 0
    while chain < len(marks) and marks[chain]:
        chain += 1
    if shape == (1, (2, 3), 4) and chain == 1 and len(marks) > 2 and marks[2]:
        chain = 2
    if shape == ((1, 2), 3, 4) and chain == 0 and len(marks) > 1 and marks[1]:
        chain = 1
    return LOGIC[shape][min(chain, 4)]


def videomme_v2_groups(rows: Sequence[Row]) -> Aggregate:
    """The grouped non-linear score with the official -1 for an unread answer; group tables labelled by each group's
    last question; `accuracy` over the items with an answer read; `relevance_linear_score` = count x 25."""
    scored = []
    for members in agg.groups(rows, "group_id").values():
        ordered = sorted(members, key=question_order)
        marks = [int((r.get("components") or {}).get("mark", -1)) for r in ordered]
        meta = ordered[-1].get("meta") or {}
        group = {"score": _v2_group(marks, meta.get("group_type"), meta.get("group_structure")), "meta": meta,
                 "linear": sum(marks) / 4}
        scored.append(group)
    pct = (lambda xs: 100.0 * sum(xs) / len(xs) if xs else 0.0)
    metrics = {"group_score": pct([g["score"] for g in scored])}
    read = [r for r in rows if (r.get("components") or {}).get("mark", -1) >= 0]
    metrics["accuracy"] = pct([r["score"] for r in read])
    for kind in ("relevance", "logic"):
        chosen = [g for g in scored if agg.meta_value(g, "group_type") == kind]
        if chosen:
            metrics[f"{kind}_score"] = pct([g["score"] for g in chosen])
        if chosen and kind == "relevance":
            metrics["relevance_linear_score"] = pct([g["linear"] for g in chosen])
    tables = {k: agg.breakdown(scored, k) for k in GROUP_KEYS if any(k in g["meta"] for g in scored)}
    return Aggregate(metrics["group_score"], metrics, tables)


VIDEOMME_V2 = Official(
    "grouped non-linear score (relevance: quadratic in the right count, logic: chain), an unread answer marked -1 as"
    " the official script marks it; accuracy over the answers read",
    videomme_v2_groups, videomme_v2_item,
    source="MME-Benchmarks/Video-MME-v2 evaluation/test_video_mme_v2.py (commit 013b6c9)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`videomme_v2`: options as one "A. text\\n..." string; questions grouped by `video_id` for the group score."""
    question_id = str(record.meta.get("question_id") or source_id(record))
    if not re.search(r"-\d+$", question_id):
        raise ValueError(f"record {record.id!r}: question_id {question_id!r} must end in '-<n>' (its place in the group)")
    group_type = required(record, "group_type")
    structure = required(record, "group_structure") if group_type == "logic" else record.meta.get("group_structure")
    return {
        "video_id": str(required(record, "group_id")), "question_id": question_id,
        "question": record.problem,
        "options": "\n".join(lettered(option_texts(record, most=8))),
        "answer": answer_letter(record),
        "group_type": group_type, "group_structure": None if structure is None else str(structure),  # "[1, [2, 3], 4]"
        "level": record.meta.get("level"),
        "second_head": row.get("second_head"), "third_head": row.get("third_head"),
    }


# Video-MME-v2 (percent): the group score, its relevance / logic / level tables, the linear relevance score and the
# accuracy over the answers read (`VIDEOMME_V2`).
VIDEOMME_V2_LEVELS = ("1", "2", "3")
videomme_v2_process_results = official_results(
    "videomme_v2_overall_score", "videomme_v2_relevance_score", "videomme_v2_logic_score",
    "videomme_v2_relevance_linear_score", "videomme_v2_overall_acc",
    *(f"videomme_v2_level_{level}_score" for level in VIDEOMME_V2_LEVELS))


videomme_v2_relevance_score = named_metric("relevance_score")
videomme_v2_logic_score = named_metric("logic_score")
videomme_v2_relevance_linear_score = named_metric("relevance_linear_score")
videomme_v2_overall_acc = named_metric("accuracy")
videomme_v2_level_1_score = named_metric("1", table="level")
videomme_v2_level_2_score = named_metric("2", table="level")
videomme_v2_level_3_score = named_metric("3", table="level")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"videomme_v2.json": [
    *({"video_id": "g1", "question_id": f"g1-{i}", "question": f"Relevance question {i}?",
       "options": "\n".join(f"{c}. option {c}" for c in "ABCDEFGH"), "answer": "ABCD"[i - 1],
       "group_type": "relevance", "group_structure": "[1, 2, 3, 4]", "level": 1} for i in range(1, 5)),
    *({"video_id": "g2", "question_id": f"g2-{i}", "question": f"Logic question {i}?",
       "options": "\n".join(f"{c}. option {c}" for c in "ABCDEFGH"), "answer": "EFGH"[i - 1],
       "group_type": "logic", "group_structure": "[1, [2, 3], 4]", "level": 2} for i in range(1, 5)),
]}


BENCHMARK = Benchmark(
    name="videomme_v2",
    title="Video-MME-v2",
    folder="videomme_v2",
    annotations=("videomme_v2.json", "videomme_v2.jsonl"),
    media_dir="videos",
    question_types=MC,
    metric="grouped non-linear score (relevance: quadratic, logic: chain) + accuracy",
    aggregate=grouped_nonlinear(),
    importer=videomme_v2,
    lmms_task="videomme_v2",
    meta_fields=("group_id", "group_type"),
    meta_check=videomme_v2_check,
    official=VIDEOMME_V2,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
