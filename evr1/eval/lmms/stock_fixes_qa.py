"""Replacements for stock lmms-eval 0.7.3 functions of the QA benchmarks that are wrong on our data.

Each one keeps the stock task's answer parsing and result fields and changes only what breaks
the official metric: no random letter for an unparseable answer (it counts as wrong), no
aggregation keyed by hard-coded category lists, letters beyond D where a question has them.
The templates in `evals/<benchmark>/` name them as `!function evr1.eval.lmms.stock_fixes_qa.<fn>`.
The plain mean-of-score aggregations are `evr1.eval.lmms.scoring.percent` and `fraction`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from evr1.eval.lmms.scoring import response_of
from evr1.eval.prompting import LETTERS

Result = Mapping[str, Any]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# -- LongVideoBench ---------------------------------------------------------------------------

# The phrases the stock parser removes before looking for a letter.
_LVB_PHRASES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                "The best option is", "The correct option is", "Best answer:", "Best option:")


def longvideobench_doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The stock prompt: question, "A. text" lines up to the first "N/A" option, post prompt."""
    kwargs = lmms_eval_specific_kwargs or {}
    options = [doc[f"option{i}"] for i in range(5) if doc.get(f"option{i}") not in (None, "N/A")]
    lines = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}\n{lines}\n{kwargs.get('post_prompt', '')}"


def longvideobench_letter(response: str) -> str:
    """The stock rule (the first of A-E once the answer phrases are removed); "" where it would guess."""
    text = response.strip()
    for phrase in _LVB_PHRASES:
        text = text.replace(phrase, "")
    match = re.search(r"[ABCDE]", text)
    return match.group(0) if match else ""


def longvideobench_process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """One `lvb_acc` item; an unparseable answer is wrong (the stock draws a random letter)."""
    pred = longvideobench_letter(response_of(results))
    gold = LETTERS[int(doc["correct_choice"])]
    item = {"id": doc["id"], "duration_group": doc.get("duration_group"), "question_category": doc.get("question_category"),
            "answer": gold, "parsed_pred": pred, "score": float(pred == gold)}
    return {"lvb_acc": item}


# -- MLVU -------------------------------------------------------------------------------------


def mlvu_process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The stock item, with the answer letter looked for among all the question's letters (not only A-D)."""
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

    letters = list(LETTERS[: len(doc["candidates"])])
    pred = extract_mcq_answer(response_of(results), choices=letters)
    return {"mlvu_percetion_score": {"question_id": doc["question"], "task_type": doc["task_type"],
                                     "pred_answer": pred, "answer": doc["answer"]}}


def mlvu_m_avg(results: Sequence[Result]) -> float:
    """M-Avg: mean over the task types present of each type's percent right (every item counted)."""
    by_type: dict[str, list[float]] = defaultdict(list)
    for r in results:
        by_type[str(r["task_type"])].append(float(r["pred_answer"] == r["answer"]))
    return 100.0 * _mean([_mean(v) for v in by_type.values()])


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


# -- MINERVA ----------------------------------------------------------------------------------


def minerva_process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The stock item (stock letter extraction and gold letter); an unparseable answer is wrong, not random."""
    from lmms_eval.tasks.minerva.utils import _extract_choice_letter, _gold_letter

    pred, gold = _extract_choice_letter(response_of(results)), _gold_letter(doc)
    item = {"id": doc.get("key", ""), "question_type": doc.get("question_type") or "UNKNOWN",
            "split": doc.get("split") or "UNKNOWN", "category": doc.get("category") or "UNKNOWN",
            "pred_answer": pred, "answer": gold, "score": float(pred != "" and pred == gold)}
    return {"minerva_acc": item}
