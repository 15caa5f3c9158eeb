"""Replacements for stock lmms-eval 0.7.3 functions of the QA benchmarks that are wrong on our data.

Video-MME, Video-MME-v2, MotionBench, LVBench, LongVideoBench, MLVU and MINERVA keep the stock prompt and report the
official protocol (`scoring.official_results`: evr1's sample row, aggregated by `evr1.eval.lmms.scoring.aggregate`,
`official_fraction` or `named_metric`): the official readers, denominators, sub-scores and expected values of a
random guess, as `evr1 eval run`'s official block.
Video-Holmes gives the official item scores to the stock aggregations (`video_holmes_process_results`).
The templates in `evals/<benchmark>/` name them as `!function evr1.eval.lmms.stock_fixes_qa.<fn>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evr1.eval.eval_prompt import LETTERS
from evr1.eval.lmms import scoring
from evr1.eval.lmms.scoring import named_metric, official_results

# -- LongVideoBench ---------------------------------------------------------------------------

def longvideobench_doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The stock prompt: question, "A. text" lines up to the first "N/A" option, post prompt."""
    kwargs = lmms_eval_specific_kwargs or {}
    options = [doc[f"option{i}"] for i in range(5) if doc.get(f"option{i}") not in (None, "N/A")]
    lines = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}\n{lines}\n{kwargs.get('post_prompt', '')}"


# -- Video-Holmes: the official item scores under the stock aggregations -------------------------------------------


def video_holmes_process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The item (overall and per question type) with its official score (TencentARC/Video-Holmes evaluate.py's letter
    search: `evr1.eval.official_choice`), which the stock aggregations average: the official accuracy and its
    per-type table (every item counted)."""
    from lmms_eval.tasks.video_holmes.utils import QUESTION_TYPES

    item = scoring.official_row(scoring.item_row(doc, results))
    item["question_type"] = doc.get("Question Type", "")
    return {"video_holmes_accuracy": item, **{f"video_holmes_{t}": item for t in QUESTION_TYPES}}


# -- Video-MME, Video-MME-v2, MotionBench, LVBench, LongVideoBench, MLVU, MINERVA: the official block -------------

# Module attributes, as the templates name them.
videomme_process_results = official_results("videomme_perception_score")
lvbench_process_results = official_results("lvbench_score")
longvideobench_process_results = official_results("lvb_acc")
mlvu_process_results = official_results("mlvu_percetion_score")
minerva_process_results = official_results("minerva_acc")

# Video-MME-v2 (percent): the group score, its relevance / logic / level tables, the linear relevance score and the
# accuracy over the answers read (`evr1.eval.official_choice.VIDEOMME_V2`).
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

# MotionBench (the stock fraction scale): acc over every question, answered_acc, and acc by category
# (`evr1.eval.official_choice.MOTIONBENCH`); a category the rows lack is NaN.
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
