"""Documents for the stock lmms-eval 0.7.3 tasks of MVBench, TempCompass, MMVU, Video-MMMU, VideoMathQA,
VSI-Bench, Charades-STA and OVO-Bench.

Each converter gives the fields the stock task's `doc_to_text` reads, built from the record
(question, options, answer, meta) and, for fields only the official row has (TempCompass's
`video_id`, VSI-Bench's `dataset`, OVO-Bench's `test_info`), from the row; and the subset of
grouped benchmarks (`evr1_subset`). Scoring reads the record the binder adds (`evr1_record`); the
stock fields feed the stock prompts (and the stock TempCompass captioning judge, VSI-Bench's task names).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from evr1.data.records import Record
from evr1.eval.benchmark import is_easyvideor1
from evr1.eval.lmms.tasks import Converter
from evr1.problem_types import ProblemType

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
Row = Mapping[str, Any]


def official(row: Row) -> Row:
    """The row's own fields when it is in the official format (an EasyVideoR1 row carries none of the stock's)."""
    return {} if is_easyvideor1(row) else row


def meta(record: Record, key: str) -> Any:
    """A meta value the document cannot do without; ValueError names the record and the key."""
    value = record.meta.get(key)
    if value is None or value == "":
        raise ValueError(f"record {record.id} has no meta {key!r} (needed for its lmms-eval subtask)")
    return value


def is_mc(record: Record) -> bool:
    return record.problem_type is ProblemType.MULTIPLE_CHOICE


def options_of(record: Record) -> list[str]:
    if not record.options:
        raise ValueError(f"multiple-choice record {record.id} has no options")
    return list(record.options)


def lettered(record: Record, sep: str = ". ") -> list[str]:
    """Options as "A. text" lines."""
    return [f"{LETTERS[i]}{sep}{o}" for i, o in enumerate(options_of(record))]


def answer_text(record: Record) -> str:
    """The text of the right option."""
    return options_of(record)[LETTERS.index(str(record.answer))]


def video_name(record: Record) -> str:
    video = next((m for m in record.media if m.kind == "video"), None)
    if video is None:
        raise ValueError(f"record {record.id} has no video")
    return PurePosixPath(video.path).name


def source_id(record: Record) -> str:
    """The record id without the benchmark prefix."""
    return record.id.split("/", 1)[1] if "/" in record.id else record.id


def mvbench(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": meta(record, "task"), "video": video_name(record),
            "question": record.problem, "candidates": options_of(record), "answer": answer_text(record)}


def tempcompass(record: Record, row: Row) -> dict[str, Any]:
    """The stock prompt is the question as published: multi-choice "A. x" lines, caption matching its own
    "Caption A: x" / "Sentence A: x" / "Option 1: x" lines; from an EasyVideoR1 row they are rebuilt
    ("A. x", "Caption A: x"). Captioning needs the official row's `mc_question`/`mc_answer` (the judge's question)."""
    raw = official(row)
    fmt = meta(record, "format")
    doc = {"evr1_subset": fmt, "dim": meta(record, "dimension"),
           "video_id": str(raw.get("video_id", PurePosixPath(video_name(record)).stem)),
           "question": str(raw.get("question", record.problem)), "answer": str(raw.get("answer", record.answer))}
    if is_mc(record) and not raw:
        label = "Caption " if fmt == "caption_matching" else ""
        sep = ": " if label else ". "
        doc.update(question="\n".join([record.problem, *(f"{label}{line}" for line in lettered(record, sep))]),
                   answer=f"{label}{record.answer}{sep}{answer_text(record)}")
    if fmt == "captioning":  # the stock judge answers this multiple-choice question from the caption
        missing = [k for k in ("mc_question", "mc_answer") if not raw.get(k)]
        if missing:
            raise ValueError(f"TempCompass captioning record {record.id} has no {' or '.join(missing)}: the stock judge"
                             " needs the official captioning row (an EasyVideoR1 row does not carry them)")
        doc.update(mc_question=str(raw["mc_question"]), mc_answer=str(raw["mc_answer"]))
    return doc


def mmvu(record: Record, row: Row) -> dict[str, Any]:
    subject = str(record.meta.get("category") or "unknown")
    doc = {"id": source_id(record), "question": record.problem,
           "video_path": f"{subject}/{video_name(record)}", "answer": str(record.answer)}
    if not is_mc(record):
        return {**doc, "question_type": "open-ended", "choices": {}}
    if len(options_of(record)) != 5:
        raise ValueError(f"MMVU record {record.id} has {len(options_of(record))} options; the stock mmvu prompt lists exactly A-E")
    return {**doc, "question_type": "multiple-choice", "choices": dict(zip(LETTERS, options_of(record)))}


def video_mmmu(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": meta(record, "track"), "id": source_id(record),
            "question": record.problem, "options": list(record.options or []), "answer": str(record.answer),
            "question_type": "multiple-choice" if is_mc(record) else "open"}


def videomathqa(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": meta(record, "setting"),
            "question_id": str(meta(record, "question_id")), "videoID": PurePosixPath(video_name(record)).stem,
            "question": record.problem, "options": lettered(record), "answer": str(record.answer),
            "category": record.meta.get("category"), "length": record.meta.get("duration")}


def vsibench(record: Record, row: Row) -> dict[str, Any]:
    """`question_type` is the official one (object_rel_direction_easy|medium|hard, not the merged task)."""
    raw = official(row)
    scene = PurePosixPath(video_name(record)).stem
    task = meta(record, "task")
    qtype = raw.get("question_type") or (f"{task}_{meta(record, 'difficulty')}" if task == "object_rel_direction" else task)
    doc = {"id": source_id(record), "question_type": str(qtype),
           "dataset": str(raw.get("dataset", record.meta.get("dataset") or "")), "scene_name": str(raw.get("scene_name", scene)),
           "question": record.problem}
    if is_mc(record):
        return {**doc, "options": lettered(record), "ground_truth": str(record.answer)}
    return {**doc, "options": None, "ground_truth": f"{float(record.answer):g}"}


def charades_sta(record: Record, row: Row) -> dict[str, Any]:
    raw = official(row)
    start, end = record.answer["time"]
    return {"video": video_name(record), "caption": str(raw.get("caption", record.problem)),
            "timestamp": [float(start), float(end)]}


def ovobench(record: Record, row: Row) -> dict[str, Any]:
    """Backward/real-time: one question; forward: one probe of `test_info` (its own clip up to the probe's time)."""
    raw = official(row)
    category, task = meta(record, "category"), meta(record, "task")
    doc = {"evr1_subset": category, "id": source_id(record), "task": task,
           "question": str(raw.get("question", record.problem))}
    if category != "forward":
        return {**doc, "options": options_of(record), "gt": LETTERS.index(str(record.answer))}
    probes = raw.get("test_info") or []
    index = int(source_id(record).rsplit("/", 1)[-1]) if probes else 0
    probe = dict(probes[index]) if probes else {}
    probe.setdefault("step", doc["question"])  # the SSR prompt shows the step
    return {**doc, "activity": str(raw.get("activity", record.problem)), "test_info": [probe]}


CONVERTERS: dict[str, Converter] = {
    "mvbench": mvbench,
    "tempcompass": tempcompass,
    "mmvu": mmvu,
    "video_mmmu": video_mmmu,
    "videomathqa": videomathqa,
    "vsibench": vsibench,
    "charades_sta": charades_sta,
    "ovobench": ovobench,
}
