"""Documents for the stock lmms-eval 0.7.3 tasks of eight multiple-choice video QA benchmarks.

Each converter turns one record (and the annotation row it came from) into the fields the stock
task's `utils.py` reads in `doc_to_text`, `process_results` and its aggregation. Questions,
options, answer letters and categories come from the record (the same for official and
EasyVideoR1-format rows); source ids and video names come from the row where it has them.
Options are rendered the way the stock task expects them (lettered lines, a dict, fields).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evr1.data.records import Record
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.lmms.doc_fields import (
    answer_index,
    answer_letter,
    lettered,
    option_texts,
    required,
    source_id,
    video_name,
    video_stem,
)
from evr1.eval.lmms.tasks import Converter

Row = Mapping[str, Any]


def videomme(record: Record, row: Row) -> dict[str, Any]:
    """`videomme`: options as "A. text" lines; domain, sub-category, task type and duration for the logs."""
    meta = record.meta
    return {
        "question_id": str(row.get("question_id", source_id(record))),
        "videoID": str(row.get("videoID", video_stem(record))),
        "duration": meta.get("duration"), "domain": meta.get("domain"),
        "sub_category": meta.get("category"), "task_type": meta.get("task"),
        "question": record.problem,
        "options": lettered(option_texts(record, most=4)),
        "answer": answer_letter(record),
    }


def videomme_v2(record: Record, row: Row) -> dict[str, Any]:
    """`videomme_v2`: options as one "A. text\\n..." string; questions grouped by `video_id` for the group score."""
    question_id = str(record.meta.get("question_id") or source_id(record))
    if not re.search(r"-\d+$", question_id):
        raise ValueError(f"record {record.id!r}: question_id {question_id!r} must end in '-<n>' (its place in the group)")
    group_type = required(record, "group_type")
    structure = required(record, "group_structure") if group_type == "logic" else record.meta.get("group_structure")
    return {
        "video_id": str(required(record, "group_id")), "question_id": question_id,
        "question": record.problem,
        "options": "\n".join(lettered(option_texts(record, most=8))),
        "answer": answer_letter(record),
        "group_type": group_type, "group_structure": None if structure is None else str(structure),  # "[1, [2, 3], 4]"
        "level": record.meta.get("level"),
        "second_head": row.get("second_head"), "third_head": row.get("third_head"),
    }


def motionbench(record: Record, row: Row) -> dict[str, Any]:
    """`motionbench_full`: options as `{label, text}` items (the stock `process_docs` output schema)."""
    return {
        "id": source_id(record), "key": str(row.get("key") or video_stem(record)),
        "video_path": video_name(record), "video_type": str(row.get("video_type", "Unknown")),
        "question_type": str(record.meta.get("category") or "Unknown"),
        "question": record.problem,
        "options": [{"label": k, "text": o} for k, o in zip(LETTERS, option_texts(record, most=6))],
        "answer": answer_letter(record),
    }


def lvbench(record: Record, row: Row) -> dict[str, Any]:
    """`lvbench`: the question stem and an `options` list (shown as "(A) text" lines)."""
    return {
        "uid": source_id(record), "video_path": video_name(record),
        "question": record.problem, "options": option_texts(record, most=4),
        "answer": answer_letter(record),
        "question_type": record.meta.get("category"),
    }


def longvideobench(record: Record, row: Row) -> dict[str, Any]:
    """`longvideobench_val_v`: `option0`..`option4` ("N/A" past the last) and the answer index."""
    options = option_texts(record, most=5)
    return {
        "id": source_id(record), "video_path": video_name(record), "question": record.problem,
        **{f"option{i}": options[i] if i < len(options) else "N/A" for i in range(5)},
        "correct_choice": answer_index(record),
        "duration_group": record.meta.get("duration"), "question_category": record.meta.get("category"),
    }


def mlvu(record: Record, row: Row) -> dict[str, Any]:
    """`mlvu_dev`: options inside the question as "(A) text" lines; `task_type` for the M-Avg."""
    options = option_texts(record)
    lines = "\n".join(lettered(options, "({letter}) {text}"))
    return {
        "video_name": video_name(record), "question": f"{record.problem}\n{lines}", "candidates": options,
        "answer": answer_letter(record), "task_type": str(required(record, "task")),
    }


def video_holmes(record: Record, row: Row) -> dict[str, Any]:
    """`video_holmes`: the official field names, options as a {letter: text} mapping."""
    return {
        "video ID": str(row.get("video ID", video_stem(record))),
        "Question ID": source_id(record), "Question Type": record.meta.get("category") or "",
        "Question": record.problem,
        "Options": dict(zip(LETTERS, option_texts(record, most=6))),
        "Answer": answer_letter(record),
    }


def minerva(record: Record, row: Row) -> dict[str, Any]:
    """`minerva`: exactly five `answer_choice_<i>` fields and the answer index."""
    options = option_texts(record, most=5)
    if len(options) != 5:
        raise ValueError(f"record {record.id!r}: MINERVA questions have 5 choices, this one has {len(options)}")
    index = answer_index(record)
    return {
        "key": source_id(record), "video_id": str(row.get("video_id", video_stem(record))),
        "question": record.problem, **{f"answer_choice_{i}": o for i, o in enumerate(options)},
        "answer_id": index, "answer": options[index],
        "question_type": record.meta.get("category") or "UNKNOWN",
    }


CONVERTERS: dict[str, Converter] = {
    "videomme": videomme,
    "videomme_v2": videomme_v2,
    "motionbench": motionbench,
    "lvbench": lvbench,
    "longvideobench": longvideobench,
    "mlvu": mlvu,
    "video_holmes": video_holmes,
    "minerva": minerva,
}
