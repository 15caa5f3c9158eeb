"""The 22 built-in video benchmarks (registry `benchmarks`). Imported lazily by `BENCHMARKS`.

Each entry says where its data lives under the data root, its question types, its official
aggregation (and the meta fields it groups by), its importers (official rows; EasyVideoR1's converted rows,
brought to what the official importer gives), and its scorer overrides: open-ended answers go to the LLM judge
for a verdict, correct (1) or incorrect (0), as the official judges of MMVU, VCR-Bench and VideoReasonBench count
them (TempCompass captioning's official judge answers the multiple-choice question from the caption instead;
docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval import official, official_vcrbench
from evr1.eval import official_choice as choice
from evr1.eval import official_formats as formats
from evr1.eval import official_rules as rules
from evr1.eval.benchmark import Benchmark, FieldError, RowContext, easyvideor1_record, renamed, with_meta
from evr1.problem_types import ProblemType as PT
from evr1.registry import BENCHMARKS

MC = (PT.MULTIPLE_CHOICE,)
JUDGE = {PT.OPEN_ENDED: "open_ended_verdict_judge"}
REL_DIRECTION = "object_rel_direction"
REL_LEVELS = ("easy", "medium", "hard")
Row = Mapping[str, Any]
Records = list[dict[str, Any]]


def _rid(record: Mapping[str, Any], ctx: RowContext) -> str:
    return f"{ctx.benchmark.name}/{record['id']}"


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


def videomme_v2_check(meta: Row) -> None:
    """A logic group scores the chain of right answers along its structure: each of its records needs it."""
    if meta.get("group_type") != "logic":
        return
    structure = meta.get("group_structure")
    if structure in (None, ""):
        raise FieldError("group_structure", "a record of a logic group needs the group's structure (meta 'group_structure',"
                         " e.g. \"[1, [2, 3], 4]\"): the group scores the chain of right answers along it")
    try:
        agg.logic_chain([], structure)
    except (ValueError, SyntaxError) as exc:
        raise FieldError("group_structure", f"unreadable group_structure {structure!r} of a logic group: {exc}") from None


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
    meta["task"] = meta.get("original_question_type") or mvbench_task(row, _rid(record, ctx))
    bounds = {k: float(meta[k]) for k in ("start", "end") if meta.get(k) is not None}
    record["media"][0].update(bounds)
    return [record]


def mlvu_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """MLVU's task from a `task_type`/`question_type` field; EasyVideoR1's own MLVU rows have none (an error)."""
    record = easyvideor1_record(row, ctx)
    meta = record["meta"]
    task = next((meta[k] for k in ("task_type", "question_type", "original_question_type") if meta.get(k) not in (None, "")), None)
    if task is None:
        raise FieldError("task", f"record {_rid(record, ctx)!r} has no task type, and EasyVideoR1's MLVU rows (mlvu-dev.json,"
                         " mlvu-test.json) cannot tell it: their videos lie flat under video/, plotQA and topic_reasoning"
                         " questions share videos, and no field names the task. M-Avg needs it: use the official"
                         " json/<n>_<task>.json files (or lmms-eval's MLVU_dev rows, with task_type)")
    meta["task"] = task
    return [record]


def videomathqa_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's videomathqa.jsonl: a question's MCQ row and its 4 binary rows (`mbinary_id`) share `problem_id`;
    a binary row's id is `<problem_id>/<mbinary_id>`, and `problem_id` is the question every pair belongs to."""
    pid, binary = row.get("problem_id"), row.get("mbinary_id") not in (None, "")
    record = easyvideor1_record({**row, "problem_id": f"{pid}/{row['mbinary_id']}"} if binary else row, ctx)
    found = {"setting": "mbin" if binary else "mcq", "question_id": None if pid in (None, "") else str(pid),
             "duration": record["meta"].get("length")}
    record["meta"] = {**{k: v for k, v in found.items() if v not in (None, "")}, **record["meta"]}
    return [record]


OVO_FORWARD_TYPES = {"REC": "numerical", "SSR": "boolean", "CRR": "boolean"}
_REC_PROBLEM = re.compile(r"How many times did they (.+)\?")


def ovobench_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's ovobench.json: a row per question and per forward probe, on a clip cut at its time. A probe's
    `problem_type` is its task (REC, SSR, CRR) and its problem the REC question "How many times did they <activity>?",
    the SSR step or the CRR question: worded here as the official importer words the probe."""
    task = row.get("problem_type")
    if task in OVO_FORWARD_TYPES:
        text = str(row.get("problem", ""))
        found = _REC_PROBLEM.fullmatch(text.strip()) if task == "REC" else None
        if task == "REC" and found is None:
            raise FieldError("problem", f"row {row.get('problem_id')!r}: an EasyVideoR1 REC problem reads"
                             f" \"How many times did they <activity>?\", got {text!r}")
        text = found.group(1) if found else text
        # meta `ovo_text`: the activity, step or question alone (lmms-eval's stock prompt words it itself)
        row = {**row, "problem_type": OVO_FORWARD_TYPES[task], "problem": official.ovo_question(task, text), "ovo_text": text}
    return renamed(category="ovo_category", task="ovo_task")(row, ctx)


_THINK_JSON = re.compile(r"<think>\s*(\{.*\})\s*</think>", re.DOTALL)


def charades_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's charades_sta.json: the sentence is the `problem` (asked as the official importer asks it);
    the span is JSON inside `<think>` when the solution has no `<answer>` (as every row of that file)."""
    solution = str(row.get("solution", ""))
    found = _THINK_JSON.search(solution) if "<answer>" not in solution else None
    row_caption = str(row.get("problem", ""))
    row = {**row, "problem": official.charades_question(row_caption)}
    if found:
        row["solution"] = f"<answer>{found.group(1)}</answer>"
    record = easyvideor1_record(row, ctx)
    record["answer"] = {"time": record["answer"]["time"]}  # EasyVideoR1 adds an empty "boxes"
    record["meta"].setdefault("video", str(record["media"][0]["path"]))  # the official merge of repeated queries
    record["meta"].setdefault("caption", str(row_caption))
    return [record]


def livesports_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """Ids `<problem_id>/<q_type>`: in EasyVideoR1's livesports3k_qa.json four problem ids are each shared by
    questions of different types."""
    qtype = row.get("q_type_livesports")
    if qtype not in (None, ""):
        row = {**row, "problem_id": f"{row.get('problem_id')}/{qtype}"}
    return renamed(category="q_type_livesports", ocr="ocr_livesports")(row, ctx)


QUESTION_KINDS = {PT.MULTIPLE_CHOICE.value: "multiple-choice", PT.OPEN_ENDED.value: "open-ended"}


def vcrbench_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """The question kind (as the official importer names it) from the problem type."""
    record = easyvideor1_record(row, ctx)
    if record["problem_type"] in QUESTION_KINDS:
        record["meta"].setdefault("question_kind", QUESTION_KINDS[record["problem_type"]])
    return [record]


def mmvu_meta(meta: Row, path: str, media_dir: str) -> dict[str, Any]:
    """MMVU question kind (`original_question_type`) and subject (the video's folder: `videos/<Subject>/<n>.mp4`)."""
    found = {"question_kind": meta.get("original_question_type")}
    video = PurePosixPath(path)
    if video.parent.parent.name == media_dir:
        found["category"] = video.parent.name
    return {k: v for k, v in found.items() if v not in (None, "")}


def mmvu_easyvideor1(row: Row, ctx: RowContext) -> Records:
    record = easyvideor1_record(row, ctx)
    record["meta"] = {**mmvu_meta(record["meta"], record["media"][0]["path"], ctx.benchmark.media_dir), **record["meta"]}
    return [record]


# EasyVideoR1's videommmu.json / videommmu_with_image.json: problem ids 1-300, 301-600, 601-900 are the tracks in
# alphabetical order (the first block holds the question images and the numeric questions: Adaptation).
VIDEO_MMMU_BLOCKS = ("Adaptation", "Comprehension", "Perception")
VIDEO_MMMU_BLOCK = 300


def video_mmmu_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """The question image (`image_path`) follows the video, as in the official Adaptation rows; the track comes
    from the problem id's block (none outside 1..900: no per-track table)."""
    image = {"videos": [row["path"]], "images": [row["image_path"]]} if row.get("image_path") and row.get("path") else {}
    record = easyvideor1_record({**row, **image}, ctx)
    pid = row.get("problem_id")
    if isinstance(pid, int) and 1 <= pid <= VIDEO_MMMU_BLOCK * len(VIDEO_MMMU_BLOCKS):
        track = VIDEO_MMMU_BLOCKS[(pid - 1) // VIDEO_MMMU_BLOCK]
        if row.get("image_path") and track != "Adaptation":
            raise FieldError("track", f"record {_rid(record, ctx)!r} has a question image, so it is an Adaptation question,"
                             f" but its problem_id {pid} places it in {track} (EasyVideoR1's blocks of {VIDEO_MMMU_BLOCK})")
        record["meta"].setdefault("track", track)
    return [record]


_ALL = [
    Benchmark("videomme", "Video-MME", "videomme", ("videomme.json", "videomme.jsonl"), "data", MC,
              "accuracy (w/o subtitles), by duration and task type", agg.accuracy("duration", "task"), official.videomme,
              lmms_task="videomme", easyvideor1=renamed(task="task_type", category="sub_category"), official=choice.VIDEOMME),
    Benchmark("videomme_v2", "Video-MME-v2", "videomme_v2", ("videomme_v2.json", "videomme_v2.jsonl"), "videos", MC,
              "grouped non-linear score (relevance: quadratic, logic: chain) + accuracy",
              agg.grouped_nonlinear(), official.videomme_v2, lmms_task="videomme_v2",
              meta_fields=("group_id", "group_type"), meta_check=videomme_v2_check, official=choice.VIDEOMME_V2),
    Benchmark("mvbench", "MVBench", "mvbench", ("json",), "video", MC,
              "mean of the 20 per-task accuracies (every item counted)", agg.macro("task", name="task_mean"),
              official.mvbench, lmms_task="mvbench", meta_fields=("task",), easyvideor1=mvbench_easyvideor1,
              official=choice.MVBENCH),
    Benchmark("tempcompass", "TempCompass", "tempcompass", ("questions",), "videos",
              (PT.MULTIPLE_CHOICE, PT.BOOLEAN, PT.OPEN_ENDED),
              "accuracy over all items (captions judged correct or incorrect), by format and dimension",
              agg.accuracy("format", "dimension"), official.tempcompass, routes=JUDGE, lmms_task="tempcompass",
              official=formats.TEMPCOMPASS),
    Benchmark("motionbench", "MotionBench", "motionbench", ("motionbench.json", "motionbench.jsonl"), "videos", MC,
              "accuracy, by category", agg.accuracy("category"), official.motionbench, lmms_task="motionbench",
              easyvideor1=renamed(category="original_question_type"), official=choice.MOTIONBENCH),
    Benchmark("lvbench", "LVBench", "lvbench", ("lvbench.json", "lvbench.jsonl"), "videos", MC,
              "accuracy, by question type", agg.accuracy("category"), official.lvbench, lmms_task="lvbench",
              official=choice.LVBENCH),
    Benchmark("longvideobench", "LongVideoBench", "longvideobench", ("lvb_val.json",), "videos", MC,
              "accuracy (val), by duration group and category", agg.accuracy("duration", "category"),
              official.longvideobench, lmms_task="longvideobench_val_v", official=choice.LONGVIDEOBENCH),
    Benchmark("mlvu", "MLVU", "mlvu", ("json",), "video", MC, "M-Avg: mean of the per-task-type accuracies",
              agg.macro("task", name="M-Avg"), official.mlvu, lmms_task="mlvu_dev", meta_fields=("task",),
              easyvideor1=mlvu_easyvideor1, official=choice.MLVU),
    Benchmark("video_holmes", "Video-Holmes", "video_holmes", ("test_Video-Holmes.json",), "videos", MC,
              "accuracy, by question type", agg.accuracy("category"), official.video_holmes, lmms_task="video_holmes",
              official=choice.VIDEO_HOLMES),
    Benchmark("minerva", "MINERVA", "minerva", ("minerva.json",), "videos", MC, "accuracy, by question type",
              agg.accuracy("category"), official.minerva, lmms_task="minerva", official=choice.MINERVA),
    Benchmark("vcrbench", "VCR-Bench", "vcrbench", ("vcrbench.json",), "videos", (PT.MULTIPLE_CHOICE, PT.OPEN_ENDED),
              "accuracy over all items (open-ended judged correct or incorrect), by question kind and dimension",
              agg.accuracy("question_kind", "category"), official.vcrbench, routes=JUDGE, easyvideor1=vcrbench_easyvideor1,
              official=official_vcrbench.VCRBENCH),
    Benchmark("videoreasonbench", "VideoReasonBench", "videoreasonbench", ("questions", "videoreasonbench.json"), "videos",
              (PT.OPEN_ENDED,), "accuracy (judged correct or incorrect), by skill", agg.accuracy("category", "level"),
              official.videoreasonbench, routes=JUDGE, official=rules.VIDEOREASONBENCH),
    Benchmark("longvideo_reason", "LongVideo-Reason", "longvideo_reason", ("longvideo_reason.json",), "videos", MC,
              "accuracy, by category", agg.accuracy("category"), official.longvideo_reason,
              official=choice.LONGVIDEO_REASON),
    Benchmark("mmvu", "MMVU", "mmvu", ("validation.json",), "videos", (PT.MULTIPLE_CHOICE, PT.OPEN_ENDED),
              "accuracy over all items (open-ended judged correct or incorrect), by question kind and subject",
              agg.accuracy("question_kind", "category"), official.mmvu, routes=JUDGE, lmms_task="mmvu_val",
              easyvideor1=mmvu_easyvideor1, official=rules.MMVU),
    Benchmark("video_mmmu", "Video-MMMU", "video_mmmu", ("Perception.json", "Comprehension.json", "Adaptation.json"),
              "videos", (PT.MULTIPLE_CHOICE, PT.NUMERICAL), "accuracy over all items, per track",
              agg.accuracy("track"), official.video_mmmu, lmms_task="video_mmmu", easyvideor1=video_mmmu_easyvideor1,
              official=formats.VIDEO_MMMU),
    Benchmark("videomathqa", "VideoMathQA", "videomathqa", ("mcq.json", "mbin.json", "videomathqa.jsonl"), "videos", MC,
              "MBin (a question counts only if all its binary pairs are right) and MCQ accuracy",
              agg.videomath("category", "duration"), official.videomathqa, lmms_task="videomathqa_mbin",
              meta_fields=("setting", "question_id"), easyvideor1=videomathqa_easyvideor1, official=choice.VIDEOMATHQA),
    Benchmark("vsibench", "VSI-Bench", "vsibench", ("test.json", "test.jsonl"), "videos", (PT.MULTIPLE_CHOICE, PT.REGRESSION),
              "mean of the per-task scores (MC accuracy; numeric by MRA; object_rel_direction: mean of its 3 levels)",
              agg.macro("task", name="task_mean", within="difficulty"),
              official.vsibench, lmms_task="vsibench", meta_fields=("task",), meta_check=vsibench_check,
              easyvideor1=with_meta(vsibench_meta), official=rules.VSIBENCH),
    Benchmark("charades_sta", "Charades-STA", "charades_sta", ("charades_test.json",), "videos",
              (PT.TEMPORAL_GROUNDING,), "mIoU and R@IoU 0.3/0.5/0.7", agg.grounding(), official.charades_sta,
              lmms_task="temporal_grounding_charades", easyvideor1=charades_easyvideor1, official=rules.CHARADES),
    Benchmark("stvg", "STVG", "stvg", ("test.json",), "videos", (PT.SPATIAL_TEMPORAL_GROUNDING,),
              "0.5 tIoU + 0.5 mean box IoU", agg.spatio_temporal("category"), official.stvg, official=rules.STVG),
    Benchmark("ovobench", "OVO-Bench", "ovobench", ("ovo_bench_new.json",), "src_videos",
              (PT.MULTIPLE_CHOICE, PT.NUMERICAL, PT.BOOLEAN),
              "macro mean over tasks within backward/realtime/forward, then over the three",
              agg.nested_macro("category", "task"), official.ovobench, lmms_task="ovobench",
              meta_fields=("category", "task"), easyvideor1=ovobench_easyvideor1, easyvideor1_types=tuple(OVO_FORWARD_TYPES),
              official=formats.OVOBENCH),
    Benchmark("odvbench", "ODV-Bench", "odvbench", ("odvbench.json",), "videos", MC, "accuracy, by task and subtask",
              agg.accuracy("task", "subtask"), official.odvbench,
              easyvideor1=renamed(task="odv_task", subtask="odv_subtask"), official=choice.ODVBENCH),
    Benchmark("livesports3k_qa", "LiveSports-3K QA", "livesports3k", ("qa.json",), "videos", MC,
              "accuracy, by question type", agg.accuracy("category"), official.livesports,
              easyvideor1=livesports_easyvideor1, official=rules.LIVESPORTS),
]

for _bench in _ALL:
    BENCHMARKS.register(_bench.name, _bench)
