"""VCR-Bench's official accuracy and CoT score (zhishuifeiqian/VCR-Bench `eval_code/eval.py`, `cau_acc.py`,
`cau_total.py`, commit 4e564b7).

For the accuracy the official scorer asks its judge twice at most per item, multiple choice included: it first
extracts the final answer from the whole response (`extract_answer`), then (`match_answer`) a reference and an
extracted answer that are both a time interval (a Python list of two numbers) are right at IoU > 0.7 of the spans as
given, both a box (`[a, b, c, d]` of four integers) at IoU > 0.5; any other pair goes to the judge's scoring prompt,
and only the reply "1" exactly is right. A scoring request that fails, or a geometry that raises (a box of zero
area), is wrong and counted; an item whose extraction fails is dropped (its `process_item` returns None). Accuracy is
right / counted, with the tables by dimension and by duration (0-60, 60-300, 300+ seconds) that `cau_acc.py` prints.

The CoT score (`eval.py` `recall`, `precision`; `cau_total.py`): two more requests per item, against the annotated
`reasoning` (meta `reasoning`, the list as released, formatted as Python writes it). Each reply must hold a ```json
block whose list gives every step a `step_type` (Video Description, Logical Inference or Background Review Steps) and
a `judgment` (recall: Matched or Unmatched; precision: Matched, Wrong or Redundant); a reply that does not is asked
again (the script asks until one parses; evr1 `COT_TRIES` times, then the item fails as a request does). Per item,
the Video and logic recall (precision) are Matched / (Matched + Unmatched (Wrong)) of their type, overall of the two
types together, none when the denominator is 0; a precision list with no step at all raises in the script (its
`efficiency`): the item is dropped. `cau_total.py` averages each over the items that have it, and its F1 is
2PR / (P + R) of those means. A request that fails drops the whole item (`process_item` returns None), from the
accuracy too; a record without `reasoning` (an EasyVideoR1 row) is not asked them and adds no step scores.

The judge step (`vcrbench_judge`) stores `{"extracted", "scoring", "correct", "recall", "precision"}` in the sample
row's `official` (the last two: step counts by type and judgment).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.official_prompts import (
    VCRBENCH_EXTRACTION,
    VCRBENCH_EXTRACTION_INPUT,
    VCRBENCH_PRECISION,
    VCRBENCH_RECALL,
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
STEP_TYPES = {"Video": "Video Description Steps", "logic": "Logical Inference Steps",
              "background": "Background Review Steps"}
RECALL_JUDGMENTS = ("Matched", "Unmatched")
PRECISION_JUDGMENTS = ("Matched", "Wrong", "Redundant")
COT_METRICS = ("Video", "logic", "overall")  # what `cau_total.py` averages (background is left out)
COT_TRIES = 10  # replies asked for one step list before the item fails (the script asks until one parses)
_JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)


def official_question(record: Record) -> str:
    """The question as released (a multiple-choice one repeats its choices after the stem, "...?A. x\\nB. y\\n"):
    the importer's `released_question` meta, else the question (a multiple-choice one with its choices appended in
    that form)."""
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


def step_counts(reply: str, judgments: Sequence[str]) -> dict[str, dict[str, int]] | None:
    """The steps of a recall or precision reply counted `{step type: {judgment: n}}` (every type and judgment listed),
    as `extract_json_between_backticks` and `calculate_recall` / `calculate_precision` count them: the first ```json
    block, stripped, must be JSON whose items (a list's elements; a string's characters and an object's keys, which
    fail) each are an object with a known `step_type` and one of `judgments`; None when it is not."""
    found = _JSON_BLOCK.search(reply)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1).strip())
    except ValueError:
        return None
    if not isinstance(value, list | str | dict):
        return None
    counts = {kind: dict.fromkeys(judgments, 0) for kind in STEP_TYPES.values()}
    for step in value:
        kind = step.get("step_type") if isinstance(step, dict) else None
        judgment = step.get("judgment") if isinstance(step, dict) else None
        if not (isinstance(kind, str) and kind in counts and isinstance(judgment, str) and judgment in judgments):
            return None
        counts[kind][judgment] += 1
    return counts


def _asked_steps(judge: JudgeSpec, prompt: str, judgments: Sequence[str]) -> dict[str, dict[str, int]]:
    """The step counts of the first of `COT_TRIES` replies that holds a step list (JudgeUnavailable: none did)."""
    for _ in range(COT_TRIES):
        counts = step_counts(chat(judge, None, prompt, options=VCRBENCH_REQUEST), judgments)
        if counts is not None:
            return counts
    raise JudgeUnavailable(f"no reply held a step list ({COT_TRIES} asked)")


def vcrbench_judge(record: Record, response: str, judge: JudgeSpec) -> dict[str, Any]:
    """The official judgement of one answer, in the script's order: the extraction, the geometric check, else the
    scoring reply ("1" exactly is right; an unreachable judge is wrong, with `error` so that a resume asks again),
    then the recall and precision step counts (when the record has its `reasoning`). JudgeUnavailable from the
    extraction or a step request propagates: the item is dropped until a resume asks again."""
    question = official_question(record)
    extracted = chat(judge, None, VCRBENCH_EXTRACTION + VCRBENCH_EXTRACTION_INPUT.format(
        question=question, response=response), options=VCRBENCH_REQUEST)
    verdict = geometry_verdict(record.answer, extracted)
    found: dict[str, Any] = {"extracted": extracted, "scoring": None, "correct": verdict}
    if verdict is None:
        prompt = VCRBENCH_SCORING + VCRBENCH_SCORING_INPUT.format(question=question, extract_answer=extracted,
                                                                  gt_answer=record.answer)
        try:
            scoring = chat(judge, None, prompt, options=VCRBENCH_REQUEST)
            found |= {"scoring": scoring, "correct": scoring == "1"}
        except JudgeUnavailable as exc:
            found |= {"correct": False, "error": f"official judge: {exc}"}
    if "reasoning" in record.meta:
        reasoning = record.meta["reasoning"]
        found["recall"] = _asked_steps(judge, VCRBENCH_RECALL.format(
            question=question, answer=record.answer, solution=response, gt_annotation=reasoning), RECALL_JUDGMENTS)
        found["precision"] = _asked_steps(judge, VCRBENCH_PRECISION.format(
            question=question, solution=response, gt_annotation=reasoning), PRECISION_JUDGMENTS)
    return found


def _ratio(counts: Mapping[str, Mapping[str, int]], kinds: Sequence[str], miss: str) -> float | None:
    """Matched / (Matched + `miss`) over the step types `kinds`; None when that is 0 / 0 (the script's "")."""
    matched = sum(counts[STEP_TYPES[k]]["Matched"] for k in kinds)
    total = matched + sum(counts[STEP_TYPES[k]][miss] for k in kinds)
    return matched / total if total else None


def item_steps(verdict: Mapping[str, Any]) -> dict[str, float | None] | None:
    """An item's `{Video,logic,overall}_{recall,precision}` (None: the script's ""; absent: not asked); None when its
    precision list has no step at all (the script's `efficiency` divides by zero: the item is dropped)."""
    scores: dict[str, float | None] = {}
    for name, miss in (("recall", "Unmatched"), ("precision", "Wrong")):
        counts = verdict.get(name)
        if counts is None:
            continue
        if name == "precision" and not sum(n for per in counts.values() for n in per.values()):
            return None
        for metric in COT_METRICS:
            kinds = ("Video", "logic") if metric == "overall" else (metric,)
            scores[f"{metric}_{name}"] = _ratio(counts, kinds, miss)
    return scores


def duration_range(duration: Any) -> str:
    """`cau_acc.py`'s duration bucket of a number of seconds (none: 0)."""
    seconds = float(duration or 0)
    return "0-60" if seconds <= 60 else "60-300" if seconds <= 300 else "300+"


def vcrbench_item(row: Row) -> dict[str, Any] | None:
    """The official verdict (row `official`) and its step scores (`cot`), with the row's duration as its official
    bucket; an item the judge could not finish (no extraction: an unreachable judge) or whose precision list is empty
    is dropped; a failed generation (no response) is wrong and counted, with no step scores."""
    meta = {**(row.get("meta") or {}), "duration": duration_range((row.get("meta") or {}).get("duration"))}
    if row.get("response") is None:
        return {"score": 0.0, "meta": meta, "cot": {}}
    verdict = row.get("official") or {}
    steps = item_steps(verdict)
    if "extracted" not in verdict or steps is None:
        return None
    return {"score": float(verdict.get("correct") is True), "meta": meta, "cot": steps}


def vcrbench_metrics(rows: Sequence[Row]) -> Aggregate:
    """`cau_acc.py`'s accuracy and tables, and `cau_total.py`'s precision, recall and F1 (percent) of each of
    Video, logic and overall that some item has a value of: each the mean over the items with a value (0 with none),
    F1 = 2PR / (P + R) of the two means (0 when both are 0)."""
    result = agg.accuracy("question_kind", "category", "duration")(rows)
    metrics = dict(result.metrics)
    for metric in COT_METRICS:
        means = {}
        for name in ("precision", "recall"):
            values = [v for r in rows if (v := (r.get("cot") or {}).get(f"{metric}_{name}")) is not None]
            means[name] = (sum(values) / len(values) if values else 0.0, bool(values))
        if not any(seen for _, seen in means.values()):
            continue
        p, r = means["precision"][0], means["recall"][0]
        metrics |= {f"{metric}_precision": 100 * p, f"{metric}_recall": 100 * r,
                    f"{metric}_f1": 100 * (2 * p * r / (p + r) if p + r > 0 else 0.0)}
    return Aggregate(result.score, metrics, result.breakdowns)


VCRBENCH = Official(
    "accuracy: right / judged items (the judge extracts every answer; intervals right at IoU > 0.7, boxes at IoU > 0.5,"
    " other answers by the official scoring prompt, \"1\" exactly); by dimension and duration (0-60, 60-300, 300+ s);"
    " the CoT score: precision, recall and F1 of the reasoning steps (Video, logic, overall)",
    vcrbench_metrics, vcrbench_item,
    source="zhishuifeiqian/VCR-Bench eval_code/eval.py, prompt.py, cau_acc.py and cau_total.py (commit 4e564b7:"
           " extract_answer, match_answer, recall, precision, calculate_accuracy, calculate_metrics)",
    judge=vcrbench_judge,
)
