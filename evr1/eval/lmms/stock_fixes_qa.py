"""Replacements for stock lmms-eval 0.7.3 functions of the QA benchmarks that are wrong on our data.

Video-MME, LVBench, LongVideoBench, MLVU and MINERVA keep the stock prompt and report the official protocol
(`official_results`: evr1's sample row, aggregated by `evr1.eval.lmms.scoring.aggregate` or `official_fraction`):
the official readers, denominators and expected values of a random guess, as `evr1 eval run`'s official block.
Video-Holmes gives the official item scores to the stock aggregations (`video_holmes_process_results`).
The templates in `evals/<benchmark>/` name them as `!function evr1.eval.lmms.stock_fixes_qa.<fn>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evr1.eval.lmms import scoring
from evr1.eval.lmms.scoring import response_of
from evr1.eval.prompting import LETTERS

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

    item = scoring.official_row(scoring.process_results(doc, [response_of(results)])[doc["evr1_benchmark"]])
    item["question_type"] = doc.get("Question Type", "")
    return {"video_holmes_accuracy": item, **{f"video_holmes_{t}": item for t in QUESTION_TYPES}}


# -- Video-MME, LVBench, LongVideoBench, MLVU, MINERVA: the official block -----------------------------------------


def official_results(metric: str) -> Callable[[Mapping[str, Any], Sequence[Any]], dict[str, Any]]:
    """A `process_results` giving evr1's sample row under `metric`, for an aggregation by the official protocol
    (`evr1.eval.lmms.scoring.aggregate`, or `official_fraction` on a stock fraction scale)."""

    def process(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        return {metric: scoring.process_results(doc, [response_of(results)])[doc["evr1_benchmark"]]}

    process.__name__ = process.__qualname__ = f"official_{metric}"
    return process


# Module attributes, as the templates name them.
videomme_process_results = official_results("videomme_perception_score")
lvbench_process_results = official_results("lvbench_score")
longvideobench_process_results = official_results("lvb_acc")
mlvu_process_results = official_results("mlvu_percetion_score")
minerva_process_results = official_results("minerva_acc")
