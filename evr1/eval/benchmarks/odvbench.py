"""ODV-Bench: online driving-video understanding (multiple choice).

The official scorer is the authors' lmms-eval task in MCG-NJU/StreamForest (its letter reading; an empty prediction
dropped). lmms-eval 0.7.3 has no task for it: `evals/odvbench/` is evr1's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, option_list, video
from evr1.eval.definition import MC, Benchmark, RowContext, renamed
from evr1.eval.protocols import Official

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def odvbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row as the authors' lmms-eval task reads it (MCG-NJU/StreamForest `lmms_eval/tasks/odvbench/utils.py`):
    `candidates` (option texts), `answer` (the right one's text), `video` (clipped to `start`-`end` when given),
    `task`, `subtask`, `subsubtask`; or the assumed form `options` ("A. x") with a letter `answer`. Without an `id`
    the row's position names it."""
    options = [str(c) for c in row["candidates"]] if "candidates" in row else option_list(row["options"])
    clip = video(ctx, row["video"], row.get("start"), row.get("end"))
    return [mc(row.get("id", ctx.item), row["question"], options, row["answer"], [clip], task=row.get("task"),
               subtask=row.get("subtask"), subsubtask=row.get("subsubtask"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


_ODV_OPTION = re.compile(r"^([A-E])\.\s*(.+)$", re.IGNORECASE)
_ODV_PUNCT = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
_ODV_DIGIT_COMMA = re.compile(r"(\d)(,)(\d)")
_ODV_PERIOD = re.compile(r"\.(?!\d)")  # the official pattern's look-behind is malformed: every "." not before a digit
_ODV_PERIODS_CUT = 32  # it passes re.UNICODE (32) as the count: at most 32 periods go
_ODV_LETTER = re.compile(r"\b([A-E])\b", re.IGNORECASE)


def _odv_punctuation(text: str) -> str:
    """Each mark removed where it stands beside a space somewhere in `text` (or `text` holds a digit,digit), else
    replaced by a space; then the periods not before a digit removed (the first 32)."""
    out = text
    for mark in _ODV_PUNCT:
        spaced = f"{mark} " in text or f" {mark}" in text or _ODV_DIGIT_COMMA.search(text) is not None
        out = out.replace(mark, "" if spaced else " ")
    return _ODV_PERIOD.sub("", out, count=_ODV_PERIODS_CUT)


def odvbench_letter(text: str) -> str:
    """The official reading: "X. text" (X in A-E, any case, on one line) is X; else, once cleaned (tabs and newlines
    to spaces, punctuation, quotes and parentheses stripped, lower case), the first lone letter a-e as a word, upper
    case ("The answer is D" -> D, but "I think a car" -> A); else the cleaned text itself."""
    found = _ODV_OPTION.match(text.strip())
    if found:
        return found.group(1).upper()
    cleaned = _odv_punctuation(text.replace("\n", " ").replace("\t", " ").strip())
    cleaned = cleaned.strip("'").strip('"').strip(")").strip("(").strip().lower()
    letter = _ODV_LETTER.search(cleaned)
    return letter.group(1).upper() if letter else cleaned


def odvbench_item(row: Row) -> float | None:
    """Right when the reading is the answer letter; an empty response (a failed generation too: no text) is dropped,
    as the official aggregation counts only predictions that are not ""; a blank "  " is counted."""
    response = row.get("response") or ""
    if response == "":
        return None
    return float(odvbench_letter(response) == row["answer"])


ODVBENCH = Official(
    "accuracy over the answered items (an empty prediction is dropped), by task, subtask and subsubtask; the"
    " official letter reading",
    agg.accuracy("task", "subtask", "subsubtask"), odvbench_item,
    source="MCG-NJU/StreamForest lmms_eval/tasks/odvbench/utils.py (commit 81cbd38: mcq_acc,"
           " odvbench_aggregate_results)",
)


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"odvbench.json": [
    {"id": "d1", "video": "d1.mp4", "question": "Is the light red?", "options": ["A. yes", "B. no", "C. unclear"], "answer": "B",
     "task": "perception", "subtask": "traffic light"},
    {"id": "d2", "video": "d1.mp4", "question": "What next?", "options": ["A. stop", "B. go", "C. turn"], "answer": "A",
     "task": "prediction", "subtask": "ego action"},
]}


BENCHMARK = Benchmark(
    name="odvbench",
    title="ODV-Bench",
    folder="odvbench",
    annotations=("odvbench.json",),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by task and subtask",
    aggregate=agg.accuracy("task", "subtask"),
    importer=odvbench,
    easyvideor1=renamed(task="odv_task", subtask="odv_subtask"),
    official=ODVBENCH,
    fixtures=FIXTURES,
)
