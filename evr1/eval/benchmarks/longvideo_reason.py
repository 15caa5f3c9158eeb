"""LongVideo-Reason: long-video reasoning (multiple choice, 4-8 options).

The official scorer is Long-RL's `eval/eval.py` (a string match of the first one-line `<answer>X</answer>` with the
letter; `format_accuracy` beside it); a failed generation is dropped. lmms-eval 0.7.3 has no task for it: the task
folder `evals/longvideo_reason/` is evr1's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import mc, split_embedded, video
from evr1.eval.definition import MC, Benchmark, RowContext
from evr1.eval.protocols import Official

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def longvideo_reason(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row of LongVideo-Reason's `test.jsonl`: options inside `problem`, `answer` as `<answer>X</answer>`,
    `videos` relative to the folder holding `longvila_videos/`, `problem_type` the category (e.g. "goal")."""
    question, options = split_embedded(row["problem"])
    answer = re.sub(r"</?answer>", "", str(row["answer"])).strip()
    return [mc(row["problem_id"], question, options, answer, [video(ctx, row["videos"])], category=row.get("problem_type"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


_LVR_TAGGED = re.compile(r"<answer>(.*?)</answer>")  # no DOTALL: the answer must sit on one line
_LVR_FINAL = "Therefore the final answer is:"
_LVR_FINAL_TAGGED = re.compile(r"<answer>Therefore the final answer is: (.*?)</answer>")
_LVR_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)


def longvideo_reason_answer(response: str) -> str:
    """The official string-match reading of the whole response (thinking included): with "Therefore the final answer
    is:" anywhere, the first `<answer>Therefore the final answer is: X</answer>`; else the first one-line
    `<answer>X</answer>`; no match: the whole response; stripped. (The symbolic `math_verify` check comes first in the
    official scorer, but it finds nothing in a `<answer>X</answer>` letter reference, so it never decides.)"""
    found = (_LVR_FINAL_TAGGED if _LVR_FINAL in response else _LVR_TAGGED).search(response)
    return (found.group(1) if found else response).strip()


def longvideo_reason_item(row: Row) -> dict[str, Any] | None:
    """Right when the official reading equals the answer letter exactly ("b", "B.", "The answer is B" are wrong);
    `format` 1 when the response starts `<think>...</think> <answer>...</answer>`. A failed generation (no response)
    is dropped: the official loop skips a video whose generation raised."""
    response = row.get("response")
    if response is None:
        return None
    return {"score": float(longvideo_reason_answer(response) == str(row["answer"])),
            "format": float(_LVR_FORMAT.match(response) is not None)}


def longvideo_reason_metrics(rows: Sequence[Row]) -> Aggregate:
    """`accuracy` and `format_accuracy` over the generated answers, the two metrics the official script saves (the
    by-category table is evr1's addition)."""
    result = agg.accuracy("category")(rows)
    fmt = 100.0 * sum(r["format"] for r in rows) / len(rows) if rows else 0.0
    return Aggregate(result.score, {**result.metrics, "format_accuracy": fmt}, result.breakdowns)


LONGVIDEO_REASON = Official(
    "accuracy over the generated answers (a failed generation is dropped): the first one-line <answer>X</answer>"
    " (else the whole response) equal to the letter; format_accuracy beside it",
    longvideo_reason_metrics, longvideo_reason_item,
    source="NVlabs/Long-RL eval/eval.py (commit 97abc84: accuracy_reward, format_reward)",
)


# -- fixtures ----------------------------------------------------------------------------------------------------------


# test.jsonl of huggingface.co/datasets/LongVideo-Reason/longvideo-reason (`problem_type` is its category).
FIXTURES: dict[str, Any] = {"longvideo_reason.json": [
    {"problem_id": 0, "problem_type": "goal", "data_type": "video", "videos": "longvila_videos/lr1.mp4", "reasoning": "Checking the video...",
     "problem": "Why does it stop?\nA. a\nB. b\nC. c\nD. d\nE. e", "answer": "<answer>E</answer>"},
    {"problem_id": 1, "problem_type": "plot", "data_type": "video", "videos": "longvila_videos/lr1.mp4", "reasoning": "Analyzing the scene...",
     "problem": "What comes next?\nA. a\nB. b\nC. c\nD. d", "answer": "<answer>C</answer>"},
]}


BENCHMARK = Benchmark(
    name="longvideo_reason",
    title="LongVideo-Reason",
    folder="longvideo_reason",
    annotations=("longvideo_reason.json",),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by category",
    aggregate=agg.accuracy("category"),
    importer=longvideo_reason,
    official=LONGVIDEO_REASON,
    fixtures=FIXTURES,
)
