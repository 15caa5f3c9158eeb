"""VSI-Bench: spatial intelligence on indoor scans (2,490 multiple-choice and 2,640 numeric questions).

The overall is the mean of the per-task scores, numeric tasks by MRA (mean relative accuracy over thresholds 0.50 to
0.95) and object_rel_direction as the mean of its three levels. The official scorer is thinking-in-space's lmms-eval
task: numeric answers read from the response's first word; lmms-eval 0.7.3's later reading (the first number
anywhere, digits or words) is scored beside it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import mc, option_list, plain, video
from evr1.eval.definition import Benchmark, FieldError, RowContext, with_meta
from evr1.eval.lmms.doc_fields import (
    answer_letter,
    is_mc,
    lettered,
    official_fields,
    option_texts,
    required,
    source_id,
    video_stem,
)
from evr1.eval.lmms.scoring import Doc, ItemRow, item_row
from evr1.eval.protocols import Official
from evr1.eval.readers import visible
from evr1.problem_types import ProblemType as PT

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def vsibench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    media = [video(ctx, f"{row['dataset']}/{row['scene_name']}.mp4")]
    task, _, level = str(row["question_type"]).partition("object_rel_direction_")
    meta = {"task": "object_rel_direction", "difficulty": level} if level else {"task": task}
    meta["dataset"] = row.get("dataset")
    if row.get("options"):
        return [mc(row["id"], row["question"], option_list(row["options"]), row["ground_truth"], media, **meta)]
    return [plain(row["id"], row["question"], "regression", float(row["ground_truth"]), media, **meta)]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


REL_DIRECTION = "object_rel_direction"
REL_LEVELS = ("easy", "medium", "hard")


def vsibench_meta(meta: Row) -> dict[str, Any]:
    """VSI-Bench task (and level) from EasyVideoR1's `original_question_type` ("object_rel_direction_easy", ...)."""
    qtype = str(meta.get("original_question_type") or "")
    if qtype.startswith(f"{REL_DIRECTION}_"):
        return {"task": REL_DIRECTION, "difficulty": qtype.removeprefix(f"{REL_DIRECTION}_")}
    return {"task": qtype} if qtype else {}


def vsibench_check(meta: Row) -> None:
    """object_rel_direction scores the mean of its three levels: each of its records needs its level."""
    if meta.get("task") == REL_DIRECTION and meta.get("difficulty") not in REL_LEVELS:
        raise FieldError("difficulty", f"an {REL_DIRECTION} record needs its level (meta 'difficulty': easy, medium or hard;"
                         f" got {meta.get('difficulty')!r}): the task scores the mean of its levels. Official rows give"
                         f" it in question_type ({REL_DIRECTION}_easy), EasyVideoR1 rows in original_question_type")


# -- official scorer ---------------------------------------------------------------------------------------------------


# The thresholds as the official code computes them: np.linspace(.5, .95, int((.95 - .5) / .05 + 2)) = 10 points,
# 0.8 among them read as 0.8 but 1 - 0.8 = 0.19999999999999996, so an error of exactly 20% passes 6 of 10.
VSI_THRESHOLDS = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]


_TENS = {w: 10 * i for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2)}
NUMBER_WORDS = {**{w: i for i, w in enumerate(_UNITS)}, **_TENS, "hundred": 100, "thousand": 1000}


def vsi_number(text: str) -> float | None:
    """The authors' numeric reading: the text before the first space (a space only: a newline does not split it), its
    trailing dots cut, stripped, read by Python's `float` ("3.5 m" and "3." read 3.5 and 3; "1e3" reads 1000; "three",
    "3m", "3,000", "The answer is 3" and a text starting with a space read nothing)."""
    try:
        return float(text.split(" ")[0].rstrip(".").strip())
    except ValueError:
        return None


def first_number(text: str) -> float | None:
    """lmms-eval 0.7.3's later reading (`extract_number`): the first number of `text`, in digits or in English words
    ("twenty-one", "three hundred and two"), whichever comes first; None when there is none."""
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
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        error = abs(pred - truth) / np.float64(truth)
    return float(np.mean(error <= 1 - VSI_THRESHOLDS))


LMMS_EVAL_READING = "lmms_eval_0.7.3"  # the component holding the item's score under lmms-eval's later reading


def vsibench_item(row: Row) -> dict[str, Any]:
    """Multiple choice: the response's first word, a final "." cut, equals the letter (any case); numeric: MRA of
    `vsi_number` (none: 0). The score under lmms-eval 0.7.3's numeric reading (`first_number`) is kept beside it,
    as the component `LMMS_EVAL_READING`."""
    text = visible(row)
    if row.get("problem_type") == "multiple_choice":
        word = text.split(" ")[0].rstrip(".").strip() if text else ""
        score = 1.0 if word.lower() == str(row["answer"]).lower() else 0.0
        return {"score": score, "components": {LMMS_EVAL_READING: score}}
    truth = float(row["answer"])
    return {"score": vsi_mra(vsi_number(text), truth), "components": {LMMS_EVAL_READING: vsi_mra(first_number(text), truth)}}


def task_level_mean(rows: Sequence[Row]) -> Aggregate:
    """VSI-Bench: each task's mean score, object_rel_direction's the mean of its levels (in the by-task table too);
    the overall is the mean of the tasks. `overall_lmms_eval_0.7.3`: the overall under lmms-eval's numeric reading."""
    result = _task_means(rows)
    later = [{**r, "score": (r.get("components") or {}).get(LMMS_EVAL_READING, r["score"])} for r in rows]
    return Aggregate(result.score, {**result.metrics, f"overall_{LMMS_EVAL_READING}": _task_means(later).score},
                     result.breakdowns)


def _task_means(rows: Sequence[Row]) -> Aggregate:
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
    "overall: mean of the per-task scores (MC exact match of the first word; numeric MRA at np.linspace(.5, .95, 10)"
    " of the first word read as a number); object_rel_direction: mean of its 3 levels; the overall under lmms-eval"
    " 0.7.3's numeric reading (the first number anywhere) beside it",
    task_level_mean, vsibench_item,
    source="vision-x-nyu/thinking-in-space lmms_eval/tasks/vsibench/utils.py (HEAD 51e089c, last changed c26ba54:"
           " fuzzy_matching, to_float, mean_relative_accuracy, vsibench_process_results, vsibench_aggregate_results)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`question_type` is the official one (object_rel_direction_easy|medium|hard, not the merged task)."""
    raw = official_fields(row)
    task = required(record, "task")
    qtype = raw.get("question_type") or (f"{task}_{required(record, 'difficulty')}" if task == "object_rel_direction" else task)
    doc = {"id": source_id(record), "question_type": str(qtype),
           "dataset": str(raw.get("dataset", record.meta.get("dataset") or "")), "scene_name": str(raw.get("scene_name", video_stem(record))),
           "question": record.problem}
    if is_mc(record):
        return {**doc, "options": lettered(option_texts(record)), "ground_truth": answer_letter(record)}
    return {**doc, "options": None, "ground_truth": f"{float(record.answer):g}"}


def vsibench_process_results(doc: Doc, results: Sequence[Any]) -> dict[str, ItemRow]:
    """The item under the overall metric and its task's (`meta.task`: object_rel_direction for all three levels)."""
    item = item_row(doc, results)
    kind = "mra" if item["problem_type"] == "regression" else "accuracy"
    return {"vsibench_overall": item, f"{item['meta']['task']}_{kind}": item}


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"test.json": [
    {"id": 1, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_counting",
     "question": "How many chairs?", "options": None, "ground_truth": "4"},
    {"id": 2, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_abs_distance",
     "question": "Distance between table and bed (m)?", "options": None, "ground_truth": "2.0"},
    {"id": 3, "dataset": "scannet", "scene_name": "scene0", "question_type": "route_planning",
     "question": "Which turn?", "options": ["A. left", "B. right", "C. back", "D. forward"], "ground_truth": "B"},
    {"id": 4, "dataset": "scannet", "scene_name": "scene0", "question_type": "route_planning",
     "question": "Then?", "options": ["A. left", "B. right", "C. back", "D. forward"], "ground_truth": "D"},
    # object_rel_direction is one task scored as the mean of its three levels (two easy items here).
    {"id": 5, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_easy",
     "question": "Standing by the bed facing the door, is the chair left or right?", "options": ["A. left", "B. right"],
     "ground_truth": "A"},
    {"id": 6, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_easy",
     "question": "Standing by the door facing the bed, is the lamp left or right?", "options": ["A. left", "B. right"],
     "ground_truth": "B"},
    {"id": 7, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_medium",
     "question": "Standing by the sofa facing the tv, where is the table?", "options": ["A. left", "B. right", "C. back"],
     "ground_truth": "C"},
    {"id": 8, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_hard",
     "question": "Standing by the sink facing the stove, where is the fridge?",
     "options": ["A. front-left", "B. front-right", "C. back-left", "D. back-right"], "ground_truth": "A"},
]}


BENCHMARK = Benchmark(
    name="vsibench",
    title="VSI-Bench",
    folder="vsibench",
    annotations=("test.json", "test.jsonl"),
    media_dir="videos",
    question_types=(PT.MULTIPLE_CHOICE, PT.REGRESSION),
    metric="mean of the per-task scores (MC accuracy; numeric by MRA; object_rel_direction: mean of its 3 levels)",
    aggregate=agg.macro("task", name="task_mean", within="difficulty"),
    importer=vsibench,
    lmms_task="vsibench",
    meta_fields=("task",),
    meta_check=vsibench_check,
    easyvideor1=with_meta(vsibench_meta),
    official=VSIBENCH,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
