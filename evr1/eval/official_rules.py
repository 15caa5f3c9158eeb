"""The official scorers evr1 reproduces (`Benchmark.official`; the `official` protocol of `evr1.eval.protocols`):
the grounding, numeric and judged benchmarks and the aggregations here, the multiple-choice readers in
`evr1.eval.official_choice`, LiveSports-3K's choice by logits in `evr1.eval.official_logits`.

Each rule is written from the benchmark authors' published scorer (or lmms-eval 0.7.3's task, where that is
the reference), named in its `Official.source` and in docs/benchmarks.md. Item rules read the response as the
official scorer reads it (a `<think>...</think>` part removed first, as lmms-eval's post-processing does), and
return the official item score (0-1) or a row update (`score` and `components`); None drops the item.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate, Aggregator
from evr1.eval.official_judge import mmvu_judge, videoreason_judge
from evr1.eval.official_logits import LIVECC, choice_item
from evr1.eval.official_spans import charades_span
from evr1.eval.protocols import Official
from evr1.rewards import extract_answer
from evr1.rewards.geometry import box_iou
from evr1.rewards.grounding_parse import parse_interval, parse_track

Row = Mapping[str, Any]
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def visible(row: Row) -> str:
    """The response as the official scorer sees it: "" for none (a failed generation), think part removed."""
    return _THINK.sub("", row.get("response") or "").strip()


# -- VSI-Bench -------------------------------------------------------------------------------------

# The thresholds as the official code computes them: np.linspace(.5, .95, int((.95 - .5) / .05 + 2)) = 10 points,
# 0.8 among them read as 0.8 but 1 - 0.8 = 0.19999999999999996, so an error of exactly 20% passes 6 of 10.
VSI_THRESHOLDS = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = {w: 10 * i for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2)}
NUMBER_WORDS = {**{w: i for i, w in enumerate(_UNITS)}, **_TENS, "hundred": 100, "thousand": 1000}


def first_number(text: str) -> float | None:
    """The first number of `text`, in digits or in English words ("twenty-one", "three hundred and two"),
    whichever comes first (VSI-Bench's reading); None when there is none."""
    s = text.strip().lower()
    digits = _NUMBER.search(s)
    words: list[str] = []
    start = None
    for m in re.finditer(r"[a-z]+", s):
        if start is None and m.group(0) in NUMBER_WORDS:
            start = m.start()
        if start is None:
            continue
        if m.group(0) in NUMBER_WORDS:
            words.append(m.group(0))
        elif m.group(0) != "and":
            break
    if digits is not None and (start is None or digits.start() < start):
        return float(digits.group(0))
    if start is None:
        return None
    total = current = 0
    for w in words:
        value = NUMBER_WORDS[w]
        if value == 100:
            current = max(current, 1) * 100
        elif value == 1000:
            total, current = total + max(current, 1) * 1000, 0
        else:
            current += value
    return float(total + current)


def vsi_mra(pred: float | None, truth: float) -> float:
    """VSI-Bench's mean relative accuracy: the share of thresholds t with |pred - truth| / truth <= 1 - t."""
    if pred is None:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        error = abs(pred - truth) / np.float64(truth)
    return float(np.mean(error <= 1 - VSI_THRESHOLDS))


def vsibench_item(row: Row) -> float:
    """Multiple choice: the response's first word, a final "." cut, equals the letter (any case); numeric: MRA of
    the response's first number (no number: 0)."""
    text = visible(row)
    if row.get("problem_type") == "multiple_choice":
        word = text.split(" ")[0].rstrip(".").strip() if text else ""
        return 1.0 if word.lower() == str(row["answer"]).lower() else 0.0
    return vsi_mra(first_number(text), float(row["answer"]))


def task_level_mean(rows: Sequence[Row]) -> Aggregate:
    """VSI-Bench: each task's mean score, object_rel_direction's the mean of its levels (in the by-task table too);
    the overall is the mean of the tasks."""
    tasks: dict[str, tuple[float, int]] = {}
    for task, members in agg.groups(rows, "task").items():
        levels = agg.breakdown(members, "difficulty") if task == "object_rel_direction" else None
        score = sum(s for s, _ in levels.values()) / len(levels) if levels else agg.breakdown(members, "task")[task][0]
        tasks[task] = (score, len(members))
    overall = sum(s for s, _ in tasks.values()) / len(tasks) if tasks else 0.0
    tables = {"task": tasks}
    if any("difficulty" in (r.get("meta") or {}) for r in rows):
        tables["difficulty"] = agg.breakdown([r for r in rows if (r.get("meta") or {}).get("difficulty")], "difficulty")
    return Aggregate(overall, {"overall": overall, **{t: s for t, (s, _) in tasks.items()}}, tables)


VSIBENCH = Official(
    "overall: mean of the per-task scores (MC exact match of the first word; numeric MRA at np.linspace(.5, .95, 10));"
    " object_rel_direction: mean of its 3 levels",
    task_level_mean, vsibench_item,
    source="vision-x-nyu/thinking-in-space lmms_eval/tasks/vsibench/utils.py (as in lmms-eval 0.7.3 vsibench/utils.py)",
)


# -- Charades-STA ----------------------------------------------------------------------------------


def span_iou(pred: tuple[float, float] | None, truth: tuple[float, float]) -> float:
    """The task's IoU of a predicted span (ordered, not clipped to the clip) with the reference span as given: the
    overlap, min of the ends - max of the starts (at least 0), over the extent, max of the ends - min of the starts;
    0 when the extent is not positive (two equal points too) and for no span."""
    if pred is None:
        return 0.0
    start, end = min(pred), max(pred)
    extent = max(end, truth[1]) - min(start, truth[0])
    return 0.0 if extent <= 0 else max(0.0, min(end, truth[1]) - max(start, truth[0])) / extent


def charades_item(row: Row) -> float:
    """The IoU with the reference span (as given) of the span the task's own reader takes from the whole response
    (`evr1.eval.official_spans.charades_span`; none read: 0)."""
    truth = parse_interval(row["answer"])
    if truth is None:
        raise ValueError(f"record {row.get('id')!r}: answer {row['answer']!r} holds no span")
    return span_iou(charades_span(visible(row)), truth)


def one_per_query(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Charades-STA's merge of repeated queries: lmms-eval's task keys each prediction by video, sentence and reference
    span, so items sharing all three count once, with the last one's prediction (rows without the `video` and `caption`
    meta are kept apart)."""
    last: dict[Any, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        meta = row.get("meta") or {}
        key = ((meta["video"], meta["caption"], json.dumps(row.get("answer"), sort_keys=True))
               if "video" in meta and "caption" in meta else i)
        last[key] = row
    return list(last.values())


CHARADES = Official(
    "mIoU and R@IoU 0.3/0.5/0.7 (IoU >= R) of the predicted span as given (not clipped to the clip length); a query"
    " repeated on one video with one span counts once",
    agg.grounding(), charades_item,
    source="lmms-eval 0.7.3 tasks/charades_sta/utils.py (extract_time's span, swapped when reversed; its iou;"
           " predictions keyed by video, caption and timestamp)",
    counted=one_per_query,
)


# -- HC-STVG ---------------------------------------------------------------------------------------


def _frames(span: tuple[float, float] | None) -> set[int]:
    if span is None or span[0] > span[1]:
        return set()
    return set(range(math.ceil(span[0]), math.floor(span[1]) + 1))


def stvg_item(row: Row) -> dict[str, Any]:
    """vIoU = sum over the frames in both the predicted and the reference tube of the box IoU, over the frames in
    either; tIoU = frames in both / frames in either. Frames are the whole seconds (the reference keeps one box per
    second); the predicted tube spans its `time` (else its first to last box) and has a box at a second when one
    lies within half a second of it."""
    answer = row["answer"]
    truth = {round(float(t)): b for t, b in parse_track(answer).items()}
    text = extract_answer(visible(row)).text or ""
    track = parse_track(text)
    span = parse_interval(text) or ((min(track), max(track)) if track else None)
    pred_frames, true_frames = _frames(span), set(truth)
    union = pred_frames | true_frames
    shared = pred_frames & true_frames
    boxes = {round(t): b for t, b in track.items() if abs(t - round(t)) <= 0.5}
    viou = sum(box_iou(boxes[f], truth[f]) for f in shared if f in boxes) / len(union) if union else 0.0
    tiou = len(shared) / len(union) if union else 0.0
    return {"score": viou, "components": {"viou": viou, "tiou": tiou}}


def hcstvg(rows: Sequence[Row]) -> Aggregate:
    """m_vIoU (headline), vIoU@0.3 and vIoU@0.5 (share of items with vIoU above the threshold) and m_tIoU."""
    viou = [float(r["score"]) for r in rows]
    tiou = [float((r.get("components") or {}).get("tiou", 0.0)) for r in rows]
    pct = (lambda xs: 100.0 * sum(xs) / len(xs) if xs else 0.0)
    metrics = {"m_vIoU": pct(viou), "vIoU@0.3": pct([v > 0.3 for v in viou]), "vIoU@0.5": pct([v > 0.5 for v in viou]),
               "m_tIoU": pct(tiou)}
    return Aggregate(metrics["m_vIoU"], metrics)


STVG = Official(
    "m_vIoU, with vIoU@0.3, vIoU@0.5 and the frame-based m_tIoU (HC-STVG's metrics, frames at 1 fps)",
    hcstvg, stvg_item, source="HC-STVG (tzhhhh123/HC-STVG) metrics as the STVG evaluators compute them (TubeDETR-style"
                              " hcstvg_eval: vIoU over the union of frames, viou > thresh)",
)


# -- LiveSports-3K, VideoReasonBench ---------------------------------------------------------------


def with_ocr(base: Aggregator) -> Aggregator:
    """`base`, plus the OCR sub-score: accuracy over the questions marked OCR (and over the others)."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        result = base(rows)
        ocr = agg.breakdown(rows, "ocr") if any("ocr" in (r.get("meta") or {}) for r in rows) else {}
        metrics = dict(result.metrics)
        for label, name in (("1", "OCR"), ("0", "non-OCR"), ("True", "OCR"), ("False", "non-OCR")):
            if label in ocr:
                metrics[name] = ocr[label][0]
        return Aggregate(result.score, metrics, {**result.breakdowns, **({"ocr": ocr} if ocr else {})})

    return aggregate


LIVESPORTS = Official(
    "accuracy of the answers chosen by the model's logits over the option letters, by question type, with the OCR"
    " accuracy sub-score",
    with_ocr(agg.accuracy("category")), choice_item,
    source="showlab/livecc commit fdaa91e evaluation/livesports3kqa/distributed_evaluate_livesports3kqa.py (accuracy by"
           " q_type and by OCR) and evaluation/distributed_mcq_predictor.py (the choice by logits)",
    choice=LIVECC,
)

def videoreason_item(row: Row) -> float:
    """The official judge step's `correct` ("Final Answer" required; the reply exactly "Correct", or for a Predict
    Operation item the extracted operations reaching the target); an unreachable judge is incorrect, as the script's
    empty reply; a row with no official verdict (judged before this step existed) keeps evr1's score."""
    verdict = row.get("official") or {}
    if "correct" in verdict or "error" in verdict:
        return float(verdict.get("correct") is True)
    return float(row["score"]) if row.get("response") is not None else 0.0


VIDEOREASONBENCH = Official(
    "accuracy (the text after \"Final Answer\" judged by the official prompt, \"Correct\" exactly), by skill, level,"
    " num_operation and num_state",
    agg.accuracy("category", "level", "num_operation", "num_state"), videoreason_item,
    source="llyx97/video_reason_bench utils/eval_utils.py (commit 07d2644: get_judge_prompt, llm_judge_api,"
           " extract_final_answer), utils/show_results.py (tables by dim, num_operation and state count)",
    judge=videoreason_judge,
)


# -- MMVU: every item judged (evr1.eval.official_judge) ----------------------------------------------------------


def mmvu_item(row: Row) -> float:
    """The official judge's `correct` (the whole response is judged, multiple choice too); an unreadable verdict or an
    unreachable judge is incorrect, as the official script records a missing output; a failed generation is 0."""
    verdict = row.get("official") or {}
    return float(verdict.get("correct") is True)


MMVU = Official(
    "accuracy over all items (multiple choice and open-ended), each judged correct or incorrect by the official"
    " judge prompt; by question kind and subject",
    agg.accuracy("question_kind", "category"), mmvu_item,
    source="yale-nlp/MMVU utils/eval_utils.py (commit f5bc479: the judge prompts, get_acc_async) and"
           " acc_evaluation.py (commit fd27d75)",
    judge=mmvu_judge,
)
