"""Video-MME: general video QA on short, medium and long videos (multiple choice, 4 options, without subtitles).

The importer reads the rows lmms-eval's `videomme` task reads; the official scorer is Video-MME's
`eval_your_results.py` (the first capital A-D after its prefixes, an answer without one dropped); the lmms-eval
task keeps the stock prompt and reports the official block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, mp4_file, option_list, video
from evr1.eval.definition import MC, Benchmark, RowContext, renamed
from evr1.eval.lmms.doc_fields import answer_letter, lettered, option_texts, source_id, video_stem
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import VIDEOMME_PREFIXES, first_capital, visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def videomme(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    return [mc(row["question_id"], row["question"], option_list(row["options"]), row["answer"],
               [video(ctx, mp4_file(row["videoID"]))], duration=row.get("duration"), task=row.get("task_type"),
               domain=row.get("domain"), category=row.get("sub_category"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


def videomme_item(row: Row) -> float | None:
    """The first capital A-D after the official prefixes; none drops the item (not "answered"); more than 10 words
    without one is the same case."""
    letter = first_capital(visible(row), VIDEOMME_PREFIXES, "ABCD")
    return None if letter is None else float(letter == row["answer"])


VIDEOMME = Official(
    "accuracy over the answered items (a response without a letter A-D is dropped), by duration, domain,"
    " sub-category and task type",
    agg.accuracy("duration", "domain", "category", "task"), videomme_item,
    source="BradyFU/Video-MME evaluation/eval_your_results.py (commit 4e7566d)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
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


# Module attributes, as the templates name them.
videomme_process_results = official_results("videomme_perception_score")


# -- fixtures ----------------------------------------------------------------------------------------------------------


ABCD = ["A. red", "B. green", "C. blue", "D. yellow"]


FIXTURES: dict[str, Any] = {"videomme.json": [
    {"videoID": "v1", "question_id": "001-1", "duration": "short", "domain": "Sports", "sub_category": "Football",
     "task_type": "Counting Problem", "question": "How many squares?", "options": ["A. 1", "B. 2", "C. 3", "D. 4"], "answer": "A"},
    {"videoID": "v1", "question_id": "001-2", "duration": "short", "domain": "Sports", "sub_category": "Football",
     "task_type": "Object Recognition", "question": "What colour?", "options": ABCD, "answer": "C"},
    {"videoID": "v2", "question_id": "002-1", "duration": "long", "domain": "Film", "sub_category": "Drama",
     "task_type": "Counting Problem", "question": "How many people?", "options": ["A. 0", "B. 1", "C. 2", "D. 5"], "answer": "B"},
]}


BENCHMARK = Benchmark(
    name="videomme",
    title="Video-MME",
    folder="videomme",
    annotations=("videomme.json", "videomme.jsonl"),
    media_dir="data",
    question_types=MC,
    metric="accuracy (w/o subtitles), by duration and task type",
    aggregate=agg.accuracy("duration", "task"),
    importer=videomme,
    lmms_task="videomme",
    easyvideor1=renamed(task="task_type", category="sub_category"),
    official=VIDEOMME,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
