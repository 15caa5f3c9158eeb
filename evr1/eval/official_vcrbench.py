"""VCR-Bench's official accuracy (zhishuifeiqian/VCR-Bench `eval_code/eval.py`, `cau_acc.py`, commit 4e564b7).

The official scorer asks its judge twice at most per item, multiple choice included: it first extracts the final
answer from the whole response (`extract_answer`), then (`match_answer`) a reference and an extracted answer that
are both a time interval (a Python list of two numbers) are right at IoU > 0.7 of the spans as given, both a box
(`[a, b, c, d]` of four integers) at IoU > 0.5; any other pair goes to the judge's scoring prompt, and only the reply
"1" exactly is right. A scoring request that fails, or a geometry that raises (a box of zero area), is wrong and
counted; an item whose extraction fails is dropped (its `process_item` returns None). Accuracy is right / counted,
with the tables by dimension and by duration (0-60, 60-300, 300+ seconds) that `cau_acc.py` prints.

The judge step (`vcrbench_judge`) stores `{"extracted", "scoring", "correct"}` in the sample row's `official`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.official_prompts import (
    VCRBENCH_EXTRACTION,
    VCRBENCH_EXTRACTION_INPUT,
    VCRBENCH_SCORING,
    VCRBENCH_SCORING_INPUT,
)
from evr1.eval.protocols import Official
from evr1.rewards.judge_client import JudgeUnavailable, chat

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.specs import JudgeSpec

Row = Mapping[str, Any]
VCRBENCH_REQUEST = {"max_tokens": 2048}  # `get_output_wo_image(prompt, max_tokens=2048)`: the prompt as one user message
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def official_question(record: Record) -> str:
    """The question as released (a multiple-choice one repeats its choices after the stem, "...?A. x\\nB. y\\n"):
    the importer's `released_question` meta, else the choices appended in that form."""
    if "released_question" in record.meta:
        return str(record.meta["released_question"])
    if not record.options:
        return record.problem
    return record.problem + "".join(f"{LETTERS[i]}. {text}\n" for i, text in enumerate(record.options))


def _interval(text: Any) -> list[float] | None:
    """A Python literal list of two numbers (bools count, as `isinstance(x, int)`), else None."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(x, int | float) for x in value):
        return value
    return None


def _box(text: str) -> list[int] | None:
    """"[a, b, c, d]" exactly from the first to the last character, each part an `int()` literal, else None."""
    if not (text.startswith("[") and text.endswith("]")):
        return None
    parts = text[1:-1].split(",")
    if len(parts) != 4:
        return None
    try:
        return [int(part.strip()) for part in parts]
    except ValueError:
        return None


def time_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two spans as given (a reversed one is not swapped: it overlaps nothing); the union is the hull; 0 when
    the hull is empty."""
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    hull = max(a[1], b[1]) - min(a[0], b[0])
    return 0.0 if hull == 0 else inter / hull


def box_iou(a: Sequence[int], b: Sequence[int]) -> float:
    """IoU of two `[x1, y1, x2, y2]` boxes as given; ZeroDivisionError when the union area is 0."""
    x1, y1, x2, y2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if x2 < x1 or y2 < y1:
        return 0.0
    inter = (x2 - x1) * (y2 - y1)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def geometry_verdict(answer: Any, extracted: str) -> bool | None:
    """The official geometric check of an extracted answer: True/False when the reference and the extraction are both
    intervals (IoU > 0.7) or both boxes (IoU > 0.5; a zero union is False), None when the judge must score them."""
    truth, pred = _interval(answer), _interval(extracted)
    if truth is not None and pred is not None:
        return time_iou(truth, pred) > 0.7
    if not isinstance(answer, str):
        return False  # the official box check calls str methods on it and fails: scored 0
    truth_box, pred_box = _box(answer), _box(extracted)
    if truth_box is not None and pred_box is not None:
        try:
            return box_iou(truth_box, pred_box) > 0.5
        except ZeroDivisionError:
            return False
    return None


def vcrbench_judge(record: Record, response: str, judge: JudgeSpec) -> dict[str, Any]:
    """The official judgement of one answer: the extraction (JudgeUnavailable propagates: the item is dropped until a
    resume asks again), the geometric check, else the scoring reply ("1" exactly is right; an unreachable judge is
    wrong, with `error` so that a resume asks again)."""
    question = official_question(record)
    extracted = chat(judge, None, VCRBENCH_EXTRACTION + VCRBENCH_EXTRACTION_INPUT.format(
        question=question, response=response), options=VCRBENCH_REQUEST)
    verdict = geometry_verdict(record.answer, extracted)
    if verdict is not None:
        return {"extracted": extracted, "scoring": None, "correct": verdict}
    prompt = VCRBENCH_SCORING + VCRBENCH_SCORING_INPUT.format(question=question, extract_answer=extracted,
                                                              gt_answer=record.answer)
    try:
        scoring = chat(judge, None, prompt, options=VCRBENCH_REQUEST)
    except JudgeUnavailable as exc:
        return {"extracted": extracted, "scoring": None, "correct": False, "error": f"official judge: {exc}"}
    return {"extracted": extracted, "scoring": scoring, "correct": scoring == "1"}


def duration_range(duration: Any) -> str:
    """`cau_acc.py`'s duration bucket of a number of seconds (none: 0)."""
    seconds = float(duration or 0)
    return "0-60" if seconds <= 60 else "60-300" if seconds <= 300 else "300+"


def vcrbench_item(row: Row) -> dict[str, Any] | None:
    """The official verdict (row `official`), with the row's duration as its official bucket; an item without an
    extraction (the judge unreachable for it) is dropped; a failed generation (no response) is wrong and counted."""
    meta = {**(row.get("meta") or {}), "duration": duration_range((row.get("meta") or {}).get("duration"))}
    if row.get("response") is None:
        return {"score": 0.0, "meta": meta}
    verdict = row.get("official") or {}
    if "extracted" not in verdict:
        return None
    return {"score": float(verdict.get("correct") is True), "meta": meta}


VCRBENCH = Official(
    "accuracy: right / judged items (the judge extracts every answer; intervals right at IoU > 0.7, boxes at IoU > 0.5,"
    " other answers by the official scoring prompt, \"1\" exactly); by dimension and duration (0-60, 60-300, 300+ s)",
    agg.accuracy("question_kind", "category", "duration"), vcrbench_item,
    source="zhishuifeiqian/VCR-Bench eval_code/eval.py, prompt.py and cau_acc.py (commit 4e564b7: extract_answer,"
           " match_answer, calculate_accuracy)",
    judge=vcrbench_judge,
)
