"""MVBench: 20 short temporal tasks (multiple choice, 2-4 options).

The strict headline is the mean of the 20 per-task accuracies (every item counted); the official one the
leaderboard's correct / total, the first word read as `mvbench.ipynb`'s `check_ans` reads it. EasyVideoR1's
`mvbench.json` names no task: it is found from the problem id's block and checked against the video folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, video
from evr1.eval.definition import MC, Benchmark, FieldError, Records, RowContext, easyvideor1_record, full_id
from evr1.eval.lmms.doc_fields import answer_text, option_texts, required, video_name
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def mvbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """One row of `json/<task>.json`: the task is the file name; `start`/`end` clip the video."""
    options = [str(c) for c in row["candidates"]]
    rid = row.get("id", f"{ctx.stem}/{ctx.item}")
    return [mc(rid, row["question"], options, row["answer"], [video(ctx, row["video"], row.get("start"), row.get("end"))],
               task=ctx.stem)]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


# EasyVideoR1's mvbench.json names no task (`original_question_type` is ""); its problem ids number the 20 tasks in
# blocks of 200, in alphabetical order, and each task's videos lie under its source folder (`path`: "./star/...").
MVBENCH_SOURCES = {
    "action_antonym": "ssv2_video", "action_count": "perception", "action_localization": "sta", "action_prediction": "star",
    "action_sequence": "star", "character_order": "perception", "counterfactual_inference": "clevrer",
    "egocentric_navigation": "vlnqa", "episodic_reasoning": "tvqa", "fine_grained_action": "Moments_in_Time_Raw",
    "fine_grained_pose": "nturgbd", "moving_attribute": "clevrer", "moving_count": "clevrer", "moving_direction": "clevrer",
    "object_existence": "clevrer", "object_interaction": "star", "object_shuffle": "perception",
    "scene_transition": "scene_qa", "state_change": "perception", "unexpected_action": "FunQA_test",
}


MVBENCH_TASKS = sorted(MVBENCH_SOURCES)
MVBENCH_BLOCK = 200


def mvbench_task(row: Row, rid: str) -> str:
    """The MVBench task of an EasyVideoR1 row: its problem id's block, checked against its video folder."""
    pid, path = row.get("problem_id"), str(row.get("path", "")).removeprefix("./")
    advice = "give the task in `original_question_type` or use the official json/<task>.json files"
    if not isinstance(pid, int) or not 1 <= pid <= MVBENCH_BLOCK * len(MVBENCH_TASKS):
        raise FieldError("task", f"record {rid!r} names no task, and its problem_id {pid!r} is none of EasyVideoR1's"
                         f" mvbench.json (1..{MVBENCH_BLOCK * len(MVBENCH_TASKS)}: the tasks in blocks of"
                         f" {MVBENCH_BLOCK}, alphabetically) that would tell it; {advice}")
    task = MVBENCH_TASKS[(pid - 1) // MVBENCH_BLOCK]
    if PurePosixPath(path).parts[:1] != (MVBENCH_SOURCES[task],):
        raise FieldError("task", f"record {rid!r} names no task; its problem_id {pid} places it in {task!r} (EasyVideoR1's"
                         f" mvbench.json numbers the tasks in blocks of {MVBENCH_BLOCK}, alphabetically), whose videos are"
                         f" under {MVBENCH_SOURCES[task]}/, but its path is {path!r}; {advice}")
    return task


def mvbench_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's mvbench.json: `path` is the video (`video` the official file name), `start`/`end` clip it
    as in the official rows, the task comes from `original_question_type` or else from `mvbench_task`."""
    record = easyvideor1_record({k: v for k, v in row.items() if k != "video"}, ctx)
    meta = record["meta"]
    meta["task"] = meta.get("original_question_type") or mvbench_task(row, full_id(record, ctx))
    bounds = {k: float(meta[k]) for k in ("start", "end") if meta.get(k) is not None}
    record["media"][0].update(bounds)
    return [record]


# -- official scorer ---------------------------------------------------------------------------------------------------


def mvbench_item(row: Row) -> float:
    """The response's first word (lower case, "." removed) is right when it lies inside the answer's "(x)" or holds
    it: "A", "a.", "A)", "(A)", "A or B" read A; an empty response is inside any answer, so it scores 1 (a quirk of
    the official check); a failed generation (no response) scores 0."""
    if row.get("response") is None:
        return 0.0
    first = visible(row).lower().split(" ")[0]
    truth = f"({str(row['answer']).lower()})"
    return 1.0 if first.replace(".", "") in truth or truth in first else 0.0


MVBENCH = Official(
    "Avg: correct / total over all items (the leaderboard's), with per-task accuracy; the first word read as the"
    " official check reads it",
    agg.accuracy("task", name="Avg"), mvbench_item,
    source="OpenGVLab/Ask-Anything video_chat2/mvbench.ipynb (commit 71ac7a2, unchanged at HEAD 4dd8210: check_ans;"
           " leaderboard Avg = correct / total)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": required(record, "task"), "video": video_name(record),
            "question": record.problem, "candidates": option_texts(record), "answer": answer_text(record)}


mvbench_process_results = official_results("mvbench_accuracy")


# -- fixtures ----------------------------------------------------------------------------------------------------------


def _mvbench(task: str, answer: str, vid: str) -> dict[str, Any]:
    return {"video": vid, "question": f"{task}: what colour is the square?", "candidates": ["red", "green", "blue"], "answer": answer}


FIXTURES: dict[str, Any] = {
    "json/action_sequence.json": [_mvbench("action_sequence", "red", "clip1.mp4"), _mvbench("action_sequence", "blue", "clip2.mp4")],
    "json/object_shuffle.json": [
        {**_mvbench("object_shuffle", "green", "clip1.mp4"), "start": 0.5, "end": 3.5},
        _mvbench("object_shuffle", "red", "clip2.mp4"), _mvbench("object_shuffle", "blue", "clip1.mp4"),
    ],
}


BENCHMARK = Benchmark(
    name="mvbench",
    title="MVBench",
    folder="mvbench",
    annotations=("json",),
    media_dir="video",
    question_types=MC,
    metric="mean of the 20 per-task accuracies (every item counted)",
    aggregate=agg.macro("task", name="task_mean"),
    importer=mvbench,
    lmms_task="mvbench",
    meta_fields=("task",),
    easyvideor1=mvbench_easyvideor1,
    official=MVBENCH,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
