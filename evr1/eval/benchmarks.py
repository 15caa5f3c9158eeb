"""The 22 built-in video benchmarks (registry `benchmarks`). Imported lazily by `BENCHMARKS`.

Each entry says where its data lives under the data root, its question types, its official
aggregation (and the meta fields it groups by), its importer, the renames of EasyVideoR1 rows' fields,
and its scorer overrides: open-ended answers go to the LLM judge for a verdict, correct (1) or incorrect
(0), as the official judges of MMVU, VCR-Bench, VideoReasonBench and TempCompass captioning count them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval import official
from evr1.eval.benchmark import Benchmark, renamed
from evr1.problem_types import ProblemType as PT
from evr1.registry import BENCHMARKS

MC = (PT.MULTIPLE_CHOICE,)
JUDGE = {PT.OPEN_ENDED: "open_ended_verdict_judge"}
REL_DIRECTION = "object_rel_direction"


def vsibench_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    """VSI-Bench task (and level) from EasyVideoR1's `original_question_type` ("object_rel_direction_easy", ...)."""
    qtype = str(row.get("original_question_type") or "")
    if qtype.startswith(f"{REL_DIRECTION}_"):
        return {"task": REL_DIRECTION, "difficulty": qtype.removeprefix(f"{REL_DIRECTION}_")}
    return {"task": qtype} if qtype else {}


def videomathqa_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    """VideoMathQA from EasyVideoR1's single file: rows with `mbinary_id` are MBin pairs, the others MCQ; a
    question's MCQ row and its pairs share `problem_id` (kept as `source_id`); `length` is the duration."""
    meta = {"setting": "mcq" if row.get("mbinary_id") in (None, "") else "mbin", **renamed(duration="length")(row)}
    if row.get("source_id") not in (None, ""):
        meta["question_id"] = str(row["source_id"])
    return meta


_ALL = [
    Benchmark("videomme", "Video-MME", "videomme", ("videomme.json", "videomme.jsonl"), "data", MC,
              "accuracy (w/o subtitles), by duration and task type", agg.accuracy("duration", "task"), official.videomme,
              lmms_task="videomme", easyvideor1_meta=renamed(task="task_type", category="sub_category")),
    Benchmark("videomme_v2", "Video-MME-v2", "videomme_v2", ("videomme_v2.json", "videomme_v2.jsonl"), "videos", MC,
              "grouped non-linear score (relevance: quadratic, logic: chain) + accuracy",
              agg.grouped_nonlinear(), official.videomme_v2, lmms_task="videomme_v2",
              meta_fields=("group_id", "group_type")),
    Benchmark("mvbench", "MVBench", "mvbench", ("json",), "video", MC,
              "mean of the 20 per-task accuracies (every item counted)", agg.macro("task", name="task_mean"),
              official.mvbench, lmms_task="mvbench", meta_fields=("task",),
              easyvideor1_meta=renamed(task="original_question_type")),
    Benchmark("tempcompass", "TempCompass", "tempcompass", ("questions",), "videos",
              (PT.MULTIPLE_CHOICE, PT.BOOLEAN, PT.OPEN_ENDED),
              "accuracy over all items (captions judged correct or incorrect), by format and dimension",
              agg.accuracy("format", "dimension"), official.tempcompass, routes=JUDGE, lmms_task="tempcompass"),
    Benchmark("motionbench", "MotionBench", "motionbench", ("motionbench.json", "motionbench.jsonl"), "videos", MC,
              "accuracy, by category", agg.accuracy("category"), official.motionbench, lmms_task="motionbench",
              easyvideor1_meta=renamed(category="original_question_type")),
    Benchmark("lvbench", "LVBench", "lvbench", ("lvbench.json", "lvbench.jsonl"), "videos", MC,
              "accuracy, by question type", agg.accuracy("category"), official.lvbench, lmms_task="lvbench"),
    Benchmark("longvideobench", "LongVideoBench", "longvideobench", ("lvb_val.json",), "videos", MC,
              "accuracy (val), by duration group and category", agg.accuracy("duration", "category"),
              official.longvideobench, lmms_task="longvideobench_val_v"),
    Benchmark("mlvu", "MLVU", "mlvu", ("json",), "video", MC, "M-Avg: mean of the per-task-type accuracies",
              agg.macro("task", name="M-Avg"), official.mlvu, lmms_task="mlvu_dev", meta_fields=("task",),
              easyvideor1_meta=renamed(task="original_question_type")),
    Benchmark("video_holmes", "Video-Holmes", "video_holmes", ("test_Video-Holmes.json",), "videos", MC,
              "accuracy, by question type", agg.accuracy("category"), official.video_holmes, lmms_task="video_holmes"),
    Benchmark("minerva", "MINERVA", "minerva", ("minerva.json",), "videos", MC, "accuracy, by question type",
              agg.accuracy("category"), official.minerva, lmms_task="minerva"),
    Benchmark("vcrbench", "VCR-Bench", "vcrbench", ("vcrbench.json",), "videos", (PT.MULTIPLE_CHOICE, PT.OPEN_ENDED),
              "accuracy over all items (open-ended judged correct or incorrect), by question kind and dimension",
              agg.accuracy("question_kind", "category"), official.vcrbench, routes=JUDGE),
    Benchmark("videoreasonbench", "VideoReasonBench", "videoreasonbench", ("questions", "videoreasonbench.json"), "videos",
              (PT.OPEN_ENDED,), "accuracy (judged correct or incorrect), by skill", agg.accuracy("category", "level"),
              official.videoreasonbench, routes=JUDGE),
    Benchmark("longvideo_reason", "LongVideo-Reason", "longvideo_reason", ("longvideo_reason.json",), "videos", MC,
              "accuracy, by category", agg.accuracy("category"), official.longvideo_reason),
    Benchmark("mmvu", "MMVU", "mmvu", ("validation.json",), "videos", (PT.MULTIPLE_CHOICE, PT.OPEN_ENDED),
              "accuracy over all items (open-ended judged correct or incorrect), by question kind and subject",
              agg.accuracy("question_kind", "category"), official.mmvu, routes=JUDGE, lmms_task="mmvu_val",
              easyvideor1_meta=renamed(question_kind="original_question_type")),
    Benchmark("video_mmmu", "Video-MMMU", "video_mmmu", ("Perception.json", "Comprehension.json", "Adaptation.json"),
              "videos", (PT.MULTIPLE_CHOICE, PT.NUMERICAL), "accuracy over all items, per track",
              agg.accuracy("track"), official.video_mmmu, lmms_task="video_mmmu"),
    Benchmark("videomathqa", "VideoMathQA", "videomathqa", ("mcq.json", "mbin.json"), "videos", MC,
              "MBin (a question counts only if all its binary pairs are right) and MCQ accuracy",
              agg.videomath("category", "duration"), official.videomathqa, lmms_task="videomathqa_mbin",
              meta_fields=("setting", "question_id"), easyvideor1_meta=videomathqa_meta),
    Benchmark("vsibench", "VSI-Bench", "vsibench", ("test.json", "test.jsonl"), "videos", (PT.MULTIPLE_CHOICE, PT.REGRESSION),
              "mean of the per-task scores (MC accuracy; numeric by MRA; object_rel_direction: mean of its 3 levels)",
              agg.macro("task", name="task_mean", within="difficulty"),
              official.vsibench, lmms_task="vsibench", meta_fields=("task",), easyvideor1_meta=vsibench_meta),
    Benchmark("charades_sta", "Charades-STA", "charades_sta", ("charades_test.json",), "videos",
              (PT.TEMPORAL_GROUNDING,), "mIoU and R@IoU 0.3/0.5/0.7", agg.grounding(), official.charades_sta,
              lmms_task="temporal_grounding_charades"),
    Benchmark("stvg", "STVG", "stvg", ("test.json",), "videos", (PT.SPATIAL_TEMPORAL_GROUNDING,),
              "0.5 tIoU + 0.5 mean box IoU", agg.spatio_temporal("category"), official.stvg),
    Benchmark("ovobench", "OVO-Bench", "ovobench", ("ovo_bench_new.json",), "src_videos",
              (PT.MULTIPLE_CHOICE, PT.NUMERICAL, PT.BOOLEAN),
              "macro mean over tasks within backward/realtime/forward, then over the three",
              agg.nested_macro("category", "task"), official.ovobench, lmms_task="ovobench",
              meta_fields=("category", "task"), easyvideor1_meta=renamed(category="ovo_category", task="ovo_task")),
    Benchmark("odvbench", "ODV-Bench", "odvbench", ("odvbench.json",), "videos", MC, "accuracy, by task and subtask",
              agg.accuracy("task", "subtask"), official.odvbench,
              easyvideor1_meta=renamed(task="odv_task", subtask="odv_subtask")),
    Benchmark("livesports3k_qa", "LiveSports-3K QA", "livesports3k", ("qa.json",), "videos", MC,
              "accuracy, by question type", agg.accuracy("category"), official.livesports,
              easyvideor1_meta=renamed(category="q_type_livesports", ocr="ocr_livesports")),
]

for _bench in _ALL:
    BENCHMARKS.register(_bench.name, _bench)
