"""Video-Holmes: reasoning on suspense films, 7 question types (multiple choice, 6 options).

The official scorer is Video-Holmes's `evaluate.py` letter search; the lmms-eval task gives its item scores to the
stock aggregations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, mp4_file, option_list, video
from evr1.eval.definition import MC, Benchmark, RowContext
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.lmms import scoring
from evr1.eval.lmms.doc_fields import answer_letter, option_texts, source_id, video_stem
from evr1.eval.protocols import Official

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def video_holmes(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    return [mc(row["Question ID"], row["Question"], option_list(row["Options"]), row["Answer"],
               [video(ctx, mp4_file(row["video ID"]))], category=row.get("Question Type"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


_ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
HOLMES_LETTERS = "ABCDEF"


def video_holmes_letter(response: str) -> str | None:
    """The last `<answer>` part (else the whole response, thinking included); the first letter A-F, in alphabetical
    order, written "X ", "X:" or "[X" in it; else the first letter A-F, alphabetically, anywhere in it; else None."""
    tagged = _ANSWER_TAG.findall(response)
    choice = tagged[-1].strip() if tagged else response
    for forms in (("{} ", "{}:", "[{}"), ("{}",)):
        for letter in HOLMES_LETTERS:
            if any(form.format(letter) in choice for form in forms):
                return letter
    return None


def video_holmes_item(row: Row) -> float:
    """Right when the letter read is the answer; none (a failed generation too) is wrong and counted."""
    return float(video_holmes_letter(row.get("response") or "") == row["answer"])


VIDEO_HOLMES = Official(
    "accuracy over all items, by question type; the first letter A-F (alphabetically) written \"X \", \"X:\" or"
    " \"[X\" in the last <answer>, else anywhere",
    agg.accuracy("category"), video_holmes_item,
    source="TencentARC/Video-Holmes evaluate.py (commit ac9e119)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`video_holmes`: the official field names, options as a {letter: text} mapping."""
    return {
        "video ID": str(row.get("video ID", video_stem(record))),
        "Question ID": source_id(record), "Question Type": record.meta.get("category") or "",
        "Question": record.problem,
        "Options": dict(zip(LETTERS, option_texts(record, most=6))),
        "Answer": answer_letter(record),
    }


def video_holmes_process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The item (overall and per question type) with its official score (TencentARC/Video-Holmes evaluate.py's letter
    search: `video_holmes_letter`), which the stock aggregations average: the official accuracy and its
    per-type table (every item counted)."""
    from lmms_eval.tasks.video_holmes.utils import QUESTION_TYPES

    item = scoring.official_row(scoring.item_row(doc, results))
    item["question_type"] = doc.get("Question Type", "")
    return {"video_holmes_accuracy": item, **{f"video_holmes_{t}": item for t in QUESTION_TYPES}}


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"test_Video-Holmes.json": [
    {"video ID": "h1", "Question ID": "h1-1", "Question Type": "SR", "Question": "Why?",
     "Options": {"A": "a", "B": "b", "C": "c", "D": "d", "E": "e", "F": "f"}, "Answer": "F"},
    {"video ID": "h1", "Question ID": "h1-2", "Question Type": "IMC", "Question": "Who?",
     "Options": {"A": "a", "B": "b", "C": "c", "D": "d", "E": "e", "F": "f"}, "Answer": "A"},
]}


BENCHMARK = Benchmark(
    name="video_holmes",
    title="Video-Holmes",
    folder="video_holmes",
    annotations=("test_Video-Holmes.json",),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by question type",
    aggregate=agg.accuracy("category"),
    importer=video_holmes,
    lmms_task="video_holmes",
    official=VIDEO_HOLMES,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
