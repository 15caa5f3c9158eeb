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
from typing import Any

from evr1.data.records import Record
from evr1.eval.benchmark import is_easyvideor1
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.lmms.doc_fields import (
    answer_index,
    answer_letter,
    answer_text,
    lettered,
    option_texts,
    required,
    source_id,
    video_name,
    video_stem,
)
from evr1.eval.lmms.tasks import Converter
from evr1.problem_types import ProblemType

Row = Mapping[str, Any]


def official(row: Row) -> Row:
    """The row's own fields when it is in the official format (an EasyVideoR1 row carries none of the stock's)."""
    return {} if is_easyvideor1(row) else row


def is_mc(record: Record) -> bool:
    return record.problem_type is ProblemType.MULTIPLE_CHOICE


def mvbench(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": required(record, "task"), "video": video_name(record),
            "question": record.problem, "candidates": option_texts(record), "answer": answer_text(record)}


def tempcompass(record: Record, row: Row) -> dict[str, Any]:
    """The stock prompt is the question as published: multi-choice "A. x" lines, caption matching its own
    "Caption A: x" / "Sentence A: x" / "Option 1: x" lines; from an EasyVideoR1 row they are rebuilt
    ("A. x", "Caption A: x"). Captioning needs the official row's `mc_question`/`mc_answer` (the judge's question)."""
    raw = official(row)
    fmt = required(record, "format")
    doc = {"evr1_subset": fmt, "dim": required(record, "dimension"),
           "video_id": str(raw.get("video_id", video_stem(record))),
           "question": str(raw.get("question", record.problem)), "answer": str(raw.get("answer", record.answer))}
    if is_mc(record) and not raw:
        form = "Caption {letter}: {text}" if fmt == "caption_matching" else "{letter}. {text}"
        lines = lettered(option_texts(record), form)
        doc.update(question="\n".join([record.problem, *lines]), answer=lines[answer_index(record)])
    if fmt == "captioning":  # the stock judge answers this multiple-choice question from the caption
        missing = [k for k in ("mc_question", "mc_answer") if not raw.get(k)]
        if missing:
            raise ValueError(f"TempCompass captioning record {record.id} has no {' or '.join(missing)}: the stock judge"
                             " needs the official captioning row (an EasyVideoR1 row does not carry them)")
        doc.update(mc_question=str(raw["mc_question"]), mc_answer=str(raw["mc_answer"]))
    return doc


def mmvu(record: Record, row: Row) -> dict[str, Any]:
    subject = str(record.meta.get("category") or "unknown")
    doc = {"id": source_id(record), "question": record.problem, "video_path": f"{subject}/{video_name(record)}"}
    if not is_mc(record):
        return {**doc, "question_type": "open-ended", "choices": {}, "answer": str(record.answer)}
    options = option_texts(record)
    if len(options) != 5:
        raise ValueError(f"MMVU record {record.id!r} has {len(options)} options; the stock mmvu prompt lists exactly A-E")
    return {**doc, "question_type": "multiple-choice", "choices": dict(zip(LETTERS, options)), "answer": answer_letter(record)}


def video_mmmu(record: Record, row: Row) -> dict[str, Any]:
    doc = {"evr1_subset": required(record, "track"), "id": source_id(record).split("/", 1)[-1], "question": record.problem}  # official id, without our track prefix
    if is_mc(record):
        return {**doc, "options": option_texts(record), "answer": answer_letter(record), "question_type": "multiple-choice"}
    return {**doc, "options": [], "answer": str(record.answer), "question_type": "open"}


def videomathqa(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": required(record, "setting"),
            "question_id": str(required(record, "question_id")), "videoID": video_stem(record),
            "question": record.problem, "options": lettered(option_texts(record)), "answer": answer_letter(record),
            "category": record.meta.get("category"), "length": record.meta.get("duration")}


def vsibench(record: Record, row: Row) -> dict[str, Any]:
    """`question_type` is the official one (object_rel_direction_easy|medium|hard, not the merged task)."""
    raw = official(row)
    task = required(record, "task")
    qtype = raw.get("question_type") or (f"{task}_{required(record, 'difficulty')}" if task == "object_rel_direction" else task)
    doc = {"id": source_id(record), "question_type": str(qtype),
           "dataset": str(raw.get("dataset", record.meta.get("dataset") or "")), "scene_name": str(raw.get("scene_name", video_stem(record))),
           "question": record.problem}
    if is_mc(record):
        return {**doc, "options": lettered(option_texts(record)), "ground_truth": answer_letter(record)}
    return {**doc, "options": None, "ground_truth": f"{float(record.answer):g}"}


def charades_sta(record: Record, row: Row) -> dict[str, Any]:
    raw = official(row)
    start, end = record.answer["time"]
    return {"video": video_name(record), "caption": str(raw.get("caption", record.problem)),
            "timestamp": [float(start), float(end)]}


def ovobench(record: Record, row: Row) -> dict[str, Any]:
    """Backward/real-time: one question; forward: one probe of `test_info` (its own clip up to the probe's time)."""
    raw = official(row)
    category, task = required(record, "category"), required(record, "task")
    text = str(record.meta.get("ovo_text", record.problem))  # EasyVideoR1 rows: the probe's text before our wording
    doc = {"evr1_subset": category, "id": source_id(record), "task": task, "question": str(raw.get("question", text))}
    if category != "forward":
        return {**doc, "options": option_texts(record), "gt": answer_index(record)}
    probes = raw.get("test_info") or []
    index = int(source_id(record).rsplit("/", 1)[-1]) if probes else 0
    probe = dict(probes[index]) if probes else {}
    probe.setdefault("step", doc["question"])  # the SSR prompt shows the step
    return {**doc, "activity": str(raw.get("activity", text)), "test_info": [probe]}


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
