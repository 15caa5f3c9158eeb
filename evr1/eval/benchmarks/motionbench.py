"""MotionBench: fine-grained motion in 6 categories (multiple choice).

The official scorer is MotionBench's `answer_util.py` / `compute_accuracy.py`: LVBench's polished first character
(`evr1.eval.readers.lvbench_letter`), every question counted (`acc`), `answered_acc` beside it; the per-category
accuracies count the answered questions only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import mc, option_list, split_embedded, video
from evr1.eval.definition import MC, Benchmark, RowContext, renamed
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.lmms.doc_fields import answer_letter, option_texts, source_id, video_name, video_stem
from evr1.eval.lmms.scoring import named_metric, official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import lvbench_letter, visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def motionbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    question, options = (row["question"], option_list(row["options"])) if row.get("options") else split_embedded(row["question"])
    return [mc(row.get("uid", row.get("id")), question, options, row["answer"], [video(ctx, row["video_path"])],
               category=row.get("question_type"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


def motionbench_item(row: Row) -> float:
    """The polished letter (`lvbench_letter`) is the answer; no response reads "" (wrong, counted)."""
    return float(lvbench_letter(visible(row)) == row["answer"])


def motionbench_acc(rows: Sequence[Row]) -> Aggregate:
    """`acc` over every question (the headline the official leaderboard takes), `answered_acc` over the questions
    with a response; the accuracy by category over the answered questions only, as `compute_accuracy` counts a
    category's questions (a question with no response is in no category's denominator)."""
    overall = agg.accuracy(name="acc")(rows)
    answered = [r for r in rows if r.get("response") is not None]
    by_category = agg.accuracy("category")(answered)
    metrics = {**overall.metrics, "answered_acc": by_category.score}
    return Aggregate(overall.score, metrics, by_category.breakdowns)


MOTIONBENCH = Official(
    "acc: right / all questions (the polished first character of the first word is the letter), answered_acc beside"
    " it; by category over the answered questions",
    motionbench_acc, motionbench_item,
    source="THUDM/MotionBench motionbench/utils/answer_util.py, motionbench/metrics/compute_accuracy.py (HEAD dcc9b07,"
           " both unchanged since 8c131ac; compute_accuracy l. 20-46)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`motionbench_full`: options as `{label, text}` items (the stock `process_docs` output schema)."""
    return {
        "id": source_id(record), "key": str(row.get("key") or video_stem(record)),
        "video_path": video_name(record), "video_type": str(row.get("video_type", "Unknown")),
        "question_type": str(record.meta.get("category") or "Unknown"),
        "question": record.problem,
        "options": [{"label": k, "text": o} for k, o in zip(LETTERS, option_texts(record, most=6))],
        "answer": answer_letter(record),
    }


# MotionBench (the stock fraction scale): acc over every question, answered_acc, and acc by category
# (`MOTIONBENCH`); a category the rows lack is NaN.
MOTIONBENCH_CATEGORIES = {"action_order": "Action Order", "motion_related_objects": "Motion-related Objects",
                          "motion_recognition": "Motion Recognition", "repetition_count": "Repetition Count",
                          "location_related_motion": "Location-related Motion", "camera_motion": "Camera Motion"}


motionbench_process_results = official_results(
    "motionbench_acc", "motionbench_answered_acc", *(f"motionbench_{slug}" for slug in MOTIONBENCH_CATEGORIES))


motionbench_answered_acc = named_metric("answered_acc", scale=0.01)
motionbench_action_order = named_metric("Action Order", table="category", scale=0.01)
motionbench_motion_related_objects = named_metric("Motion-related Objects", table="category", scale=0.01)
motionbench_motion_recognition = named_metric("Motion Recognition", table="category", scale=0.01)
motionbench_repetition_count = named_metric("Repetition Count", table="category", scale=0.01)
motionbench_location_related_motion = named_metric("Location-related Motion", table="category", scale=0.01)
motionbench_camera_motion = named_metric("Camera Motion", table="category", scale=0.01)


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"motionbench.json": [
    {"uid": "m1", "video_path": "m1.mp4", "question": "What motion?", "options": ["A. wave", "B. jump", "C. spin"],
     "answer": "C", "question_type": "Motion Recognition"},
    {"uid": "m2", "video_path": "m1.mp4", "question": "Which direction?\n(A) left\n(B) right", "answer": "A",
     "question_type": "Location-related Motion"},
]}


BENCHMARK = Benchmark(
    name="motionbench",
    title="MotionBench",
    folder="motionbench",
    annotations=("motionbench.json", "motionbench.jsonl"),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by category",
    aggregate=agg.accuracy("category"),
    importer=motionbench,
    lmms_task="motionbench",
    easyvideor1=renamed(category="original_question_type"),
    official=MOTIONBENCH,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
