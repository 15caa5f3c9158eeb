"""Replacements for stock lmms-eval 0.7.3 functions of the QA benchmarks that are wrong on our data.

Video-MME, LVBench, LongVideoBench, MLVU and MINERVA keep the stock prompt and report the official protocol
(`official_results`: evr1's sample row, aggregated by `evr1.eval.lmms.scoring.aggregate` or `official_fraction`):
the official readers, denominators and expected values of a random guess, as `evr1 eval run`'s official block.
Video-Holmes keeps the stock parsing and result fields with no random letter for an unparseable answer.
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


# -- Video-Holmes -----------------------------------------------------------------------------


def _holmes_options(doc: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(doc["Options"].items()) if v is not None}


def holmes_has_candidate(response: str, options: Mapping[str, str]) -> bool:
    """Whether the stock (MMMU-style) parser finds a candidate, i.e. does not fall back to a random letter."""
    text = response
    for char in ",.!?;:'":
        text = text.strip(char)
    text = f" {text} "
    if any(f"({c})" in text or f"{c} " in text or f"{c}." in text for c in options):
        return True
    return len(text.split()) > 5 and any(v.lower() in text.lower() for v in options.values())


def video_holmes_process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The stock items (overall and per question type); an unparseable answer is wrong, not a random letter."""
    from lmms_eval.tasks.video_holmes.utils import QUESTION_TYPES, parse_multi_choice_response

    options, response = _holmes_options(doc), response_of(results)
    pred = parse_multi_choice_response(response, list(options), options) if holmes_has_candidate(response, options) else ""
    item = {"score": int(pred.upper() == str(doc["Answer"]).upper()), "question_type": doc.get("Question Type", "")}
    return {"video_holmes_accuracy": item, **{f"video_holmes_{t}": item for t in QUESTION_TYPES}}


# -- Video-MME, LVBench, LongVideoBench, MLVU, MINERVA: the official block ---------------------------------------


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
