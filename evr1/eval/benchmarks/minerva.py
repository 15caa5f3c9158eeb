"""MINERVA: multi-step video reasoning (multiple choice, 5 options).

No scorer of the MINERVA authors was found: the official block is lmms-eval 0.7.3's task (the last explicit
"answer is X", else the last capital A-E; none scores the expected value of its random letter, 1/5).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, mp4_file, video
from evr1.eval.definition import MC, Benchmark, RowContext
from evr1.eval.lmms.doc_fields import answer_index, option_texts, source_id, video_stem
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def minerva(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    options = [str(row[f"answer_choice_{i}"]) for i in range(10) if f"answer_choice_{i}" in row]
    return [mc(row["key"], row["question"], options, int(row["answer_id"]), [video(ctx, mp4_file(row["video_id"]))],
               category=row.get("question_type") or row.get("category"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


_MINERVA_EXPLICIT = re.compile(r"(?:answer|option)\s*(?:is|:)\s*([ABCDE])", re.IGNORECASE)
MINERVA_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "Answer:", "Option:",
                    "Therefore, the final answer is:")


def minerva_letter(text: str) -> str:
    """The last "answer is X" / "option: X" (any case), else the last capital A-E once the prefixes are removed;
    "" for none."""
    text = text.strip()
    explicit = _MINERVA_EXPLICIT.findall(text)
    if explicit:
        return explicit[-1].upper()
    for prefix in MINERVA_PREFIXES:
        text = text.replace(prefix, "")
    found = re.findall("[ABCDE]", text)
    return found[-1] if found else ""


def minerva_item(row: Row) -> float:
    """Right when the letter read is the answer; with none, lmms-eval draws one of A-E: its expected score, 1/5. A
    failed generation (no response at all) scores 0."""
    if row.get("response") is None:
        return 0.0
    letter = minerva_letter(visible(row))
    return 0.2 if letter == "" else float(letter == row["answer"])


MINERVA = Official(
    "accuracy over all items, by question type; the last explicit \"answer is X\", else the last capital A-E; none"
    " scores the expected value of lmms-eval's random letter (1/5)",
    agg.accuracy("category"), minerva_item,
    source="lmms-eval 0.7.3 tasks/minerva/utils.py (no scorer of the MINERVA authors was found)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
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


minerva_process_results = official_results("minerva_acc")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"minerva.json": [
    {"key": "mi1", "video_id": "mi", "question": "Which step?", **{f"answer_choice_{i}": f"step {i}" for i in range(5)},
     "answer_id": 3, "answer": "step 3", "question_type": "Temporal Reasoning"},
    {"key": "mi2", "video_id": "mi", "question": "What count?", **{f"answer_choice_{i}": f"{i}" for i in range(5)},
     "answer_id": 0, "answer": "0", "question_type": "Counting"},
]}


BENCHMARK = Benchmark(
    name="minerva",
    title="MINERVA",
    folder="minerva",
    annotations=("minerva.json",),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by question type",
    aggregate=agg.accuracy("category"),
    importer=minerva,
    lmms_task="minerva",
    official=MINERVA,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
