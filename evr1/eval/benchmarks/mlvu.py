"""MLVU: long-video understanding over several task types (multiple choice, 6 options; M-Avg).

M-Avg is the macro mean over task types. The official scorer is MLVU's `choice_bench.py` as it stands (the response
must be the letter itself, or the letter just before its first ")"). The open-ended generation tasks (G-Avg) are not
scored: their rows are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, video
from evr1.eval.definition import MC, Benchmark, FieldError, Records, RowContext, easyvideor1_record, full_id
from evr1.eval.lmms.doc_fields import answer_letter, lettered, option_texts, required, video_name
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


logger = logging.getLogger("evr1.eval")
MLVU_GENERATION = {"subPlot": "sub-scene captioning", "summary": "video summary"}  # question_type -> G-Avg task


def mlvu(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row of the official `json/<n>_<task>.json` (`video` under `video/<n>_<task>/`, `question_type` the task),
    or of lmms-eval's MLVU_dev export (`video_name` under `video/`, `task_type`). The open-ended generation
    tasks (`8_sub_scene.json`, `9_summary.json`: MLVU's G-Avg, judged by GPT-4 officially) are not scored:
    their rows are skipped, with one warning per file."""
    if "video_name" in row:
        rid = row.get("question_id", f"{row['task_type']}/{row['video_name']}/{ctx.item}")
        return [mc(rid, row["question"], [str(c) for c in row["candidates"]], row["answer"], [video(ctx, row["video_name"])],
                   task=row["task_type"])]
    task = row["question_type"]
    if task in MLVU_GENERATION and not row.get("candidates"):
        if ctx.item == 1:
            logger.warning("MLVU %s: skipping its open-ended %s rows (G-Avg); evr1 scores MLVU's multiple-choice M-Avg only",
                           ctx.file.name, MLVU_GENERATION[task])
        return []
    return [mc(f"{ctx.stem}/{ctx.item}", row["question"], [str(c) for c in row["candidates"]], row["answer"],
               [video(ctx, f"{ctx.stem}/{row['video']}")], task=task, duration=row.get("duration"))]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


def mlvu_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """MLVU's task from a `task_type`/`question_type` field; EasyVideoR1's own MLVU rows have none (an error)."""
    record = easyvideor1_record(row, ctx)
    meta = record["meta"]
    task = next((meta[k] for k in ("task_type", "question_type", "original_question_type") if meta.get(k) not in (None, "")), None)
    if task is None:
        raise FieldError("task", f"record {full_id(record, ctx)!r} has no task type, and EasyVideoR1's MLVU rows (mlvu-dev.json,"
                         " mlvu-test.json) cannot tell it: their videos lie flat under video/, plotQA and topic_reasoning"
                         " questions share videos, and no field names the task. M-Avg needs it: use the official"
                         " json/<n>_<task>.json files (or lmms-eval's MLVU_dev rows, with task_type)")
    meta["task"] = task
    return [record]


# -- official scorer ---------------------------------------------------------------------------------------------------


def mlvu_read(response: str) -> str:
    """What `check_ans` compares with the letter since 41add89: with a ")" in the response, the one character before
    its first ")" ("" when the response starts with it), else the whole response."""
    cut = response.find(")")
    if cut < 0:
        return response
    return response[cut - 1] if cut else ""


def mlvu_item(row: Row) -> float:
    """Right when `mlvu_read` of the response (stripped) is the answer letter: "A", "A) a cat", "(A)", "The answer is
    (A)" and "(A) or (B)" read A; "A.", "The answer is A" and "a" do not."""
    return 1.0 if mlvu_read(visible(row)) == str(row["answer"]) else 0.0


MLVU = Official(
    "M-Avg: mean of the per-task-type accuracies, each answer right only when it is the letter (or the character"
    " before its first \")\")",
    agg.macro("task", name="M-Avg"), mlvu_item,
    source="JUNJIE99/MLVU evaluation/multiple_choice_evaluation/choice_bench.py (HEAD fd060c1, unchanged since 41add89:"
           " check_ans, Avg over task types)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`mlvu_dev`: options inside the question as "(A) text" lines; `task_type` for the M-Avg."""
    options = option_texts(record)
    lines = "\n".join(lettered(options, "({letter}) {text}"))
    return {
        "video_name": video_name(record), "question": f"{record.problem}\n{lines}", "candidates": options,
        "answer": answer_letter(record), "task_type": str(required(record, "task")),
    }


mlvu_process_results = official_results("mlvu_percetion_score")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {  # the official json/<n>_<task>.json (github.com/JUNJIE99/MLVU data/); videos under video/<n>_<task>/
    "json/1_plotQA.json": [
        {"video": "ml1.mp4", "duration": 4, "question": "What is the plot?", "candidates": ["x", "y", "z", "w"], "answer": "y",
         "question_type": "plotQA"},
        {"video": "ml1.mp4", "duration": 4, "question": "Who acts?", "candidates": ["x", "y", "z", "w"], "answer": "w",
         "question_type": "plotQA"},
    ],
    "json/4_count.json": [
        {"video": "ml1.mp4", "duration": 4, "question": "How many?", "candidates": ["1", "2", "3", "4", "5", "6"], "answer": "6",
         "question_type": "count"},
    ],
    "json/8_sub_scene.json": [  # open-ended (G-Avg): skipped by the importer
        {"video": "ml2.mp4", "duration": 4, "question": "Please describe the scene when the square turns.",
         "answer": "The square turns red.", "question_type": "subPlot", "scoring_points": ["the square turns red"]},
    ],
}


BENCHMARK = Benchmark(
    name="mlvu",
    title="MLVU",
    folder="mlvu",
    annotations=("json",),
    media_dir="video",
    question_types=MC,
    metric="M-Avg: mean of the per-task-type accuracies",
    aggregate=agg.macro("task", name="M-Avg"),
    importer=mlvu,
    lmms_task="mlvu_dev",
    meta_fields=("task",),
    easyvideor1=mlvu_easyvideor1,
    official=MLVU,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
