"""LVBench: hour-long videos (multiple choice, 4 options).

A question counts under each of its question types. The official scorer is LVBench's `answer_util.py` polish
(`evr1.eval.readers.lvbench_letter`) and `compute_accuracy.py`; a sample with no answer is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, option_list, split_embedded, video
from evr1.eval.definition import MC, Benchmark, RowContext
from evr1.eval.lmms.doc_fields import answer_letter, option_texts, source_id, video_name
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import lvbench_letter, visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def lvbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """`question_type` is a list: the question counts under each of its types, as in the official
    `compute_accuracy.py` of github.com/THUDM/LVBench (the overall counts it once)."""
    question, options = (row["question"], option_list(row["options"])) if row.get("options") else split_embedded(row["question"])
    qtype = row.get("question_type")
    return [mc(row["uid"], question, options, row["answer"], [video(ctx, row["video_path"])],
               category=[str(t) for t in qtype] if isinstance(qtype, list) and qtype else qtype or None)]


# -- official scorer ---------------------------------------------------------------------------------------------------


def lvbench_item(row: Row) -> float | None:
    """Right when the polished letter is the answer (case kept); a sample with no answer recorded (a failed
    generation) is left out, as an id missing from the official answers file."""
    if row.get("response") is None:
        return None
    return float(lvbench_letter(visible(row)) == row["answer"])


LVBENCH = Official(
    "accuracy over the answered items, by question type (a question counts under each of its types); the answer is the"
    " first character of the first word, after a \"(\" and before a \")\"",
    agg.accuracy("category"), lvbench_item,
    source="THUDM/LVBench lvbench/utils/answer_util.py (commit 1dd4612) and lvbench/metrics/compute_accuracy.py"
           " (commit dd7d99d)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`lvbench`: the question stem and an `options` list (shown as "(A) text" lines)."""
    return {
        "uid": source_id(record), "video_path": video_name(record),
        "question": record.problem, "options": option_texts(record, most=4),
        "answer": answer_letter(record),
        "question_type": record.meta.get("category"),
    }


lvbench_process_results = official_results("lvbench_score")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"lvbench.json": [
    {"uid": 101, "video_path": "lv1.mp4", "question": "What happens first?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "D",
     "question_type": ["event understanding"]},
    {"uid": 102, "video_path": "lv1.mp4", "question": "Who speaks?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "B",
     "question_type": ["entity recognition", "reasoning"]},
    {"uid": 103, "video_path": "lv1.mp4", "question": "Key info?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "A",
     "question_type": ["key information retrieval"]},
]}


BENCHMARK = Benchmark(
    name="lvbench",
    title="LVBench",
    folder="lvbench",
    annotations=("lvbench.json", "lvbench.jsonl"),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by question type",
    aggregate=agg.accuracy("category"),
    importer=lvbench,
    lmms_task="lvbench",
    official=LVBENCH,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
