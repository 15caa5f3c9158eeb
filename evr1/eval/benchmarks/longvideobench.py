"""LongVideoBench: long-context referring reasoning (multiple choice, 4-5 options; the val split).

The official scorer is the authors' lmms-eval task: the first capital A-E after its prefixes, and with none a random
option, whose expected score (1 / options) stands for the draw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, video
from evr1.eval.definition import MC, Benchmark, RowContext
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.lmms.doc_fields import answer_index, option_texts, source_id, video_name
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import first_capital, visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def longvideobench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    return [mc(row["id"], row["question"], [str(c) for c in row["candidates"]], int(row["correct_choice"]),
               [video(ctx, row["video_path"])], duration=row.get("duration_group"), category=row.get("question_category"))]


# -- official scorer ---------------------------------------------------------------------------------------------------


LONGVIDEOBENCH_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                           "The best option is", "The correct option is", "Best answer:", "Best option:")


def longvideobench_item(row: Row) -> float:
    """The first capital A-E after the prefixes; with none, the official scorer answers a random option: its expected
    score, 1 / the number of options, stands for that draw (a random draw cannot be reproduced). A failed generation
    (no response at all) scores 0."""
    if row.get("response") is None:
        return 0.0
    letter = first_capital(visible(row), LONGVIDEOBENCH_PREFIXES, "ABCDE")
    if letter is None:
        return 1.0 / max(1, len(row.get("options") or []) or 5)
    return float(letter == row["answer"])


LONGVIDEOBENCH = Official(
    "accuracy (val) over all items, by duration group and category; an answer without a capital A-E scores the"
    " expected value of the official random guess (1 / options)",
    agg.accuracy("duration", "category"), longvideobench_item,
    source="lmms-eval 0.7.3 tasks/longvideobench/utils.py (the LongVideoBench authors' rule, random guess included)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """`longvideobench_val_v`: `option0`..`option4` ("N/A" past the last) and the answer index."""
    options = option_texts(record, most=5)
    return {
        "id": source_id(record), "video_path": video_name(record), "question": record.problem,
        **{f"option{i}": options[i] if i < len(options) else "N/A" for i in range(5)},
        "correct_choice": answer_index(record),
        "duration_group": record.meta.get("duration"), "question_category": record.meta.get("category"),
    }


def longvideobench_doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The stock prompt: question, "A. text" lines up to the first "N/A" option, post prompt."""
    kwargs = lmms_eval_specific_kwargs or {}
    options = [doc[f"option{i}"] for i in range(5) if doc.get(f"option{i}") not in (None, "N/A")]
    lines = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}\n{lines}\n{kwargs.get('post_prompt', '')}"


longvideobench_process_results = official_results("lvb_acc")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"lvb_val.json": [
    {"id": "lvb1", "video_path": "lvb1.mp4", "question": "What is shown?", "candidates": ["a", "b", "c", "d", "e"],
     "correct_choice": 4, "duration_group": 15, "question_category": "E2O"},
    {"id": "lvb2", "video_path": "lvb1.mp4", "question": "What next?", "candidates": ["a", "b", "c", "d"],
     "correct_choice": 0, "duration_group": 60, "question_category": "O2E"},
]}


BENCHMARK = Benchmark(
    name="longvideobench",
    title="LongVideoBench",
    folder="longvideobench",
    annotations=("lvb_val.json",),
    media_dir="videos",
    question_types=MC,
    metric="accuracy (val), by duration group and category",
    aggregate=agg.accuracy("duration", "category"),
    importer=longvideobench,
    lmms_task="longvideobench_val_v",
    official=LONGVIDEOBENCH,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
