"""VideoMathQA: math in videos, 10 categories (420 five-option MCQ, and 1,680 binary pairs for MBin).

MBin counts a question only when all its binary pairs are right. The official scorer is the authors' lmms-eval task
(Video-MME's reader with A-E).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate, Aggregator
from evr1.eval.annotation_rows import mc, mp4_file, option_list, video
from evr1.eval.definition import MC, Benchmark, Records, RowContext, easyvideor1_record
from evr1.eval.lmms.doc_fields import answer_letter, lettered, option_texts, required, video_stem
from evr1.eval.lmms.scoring import named_metric, official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import VIDEOMME_PREFIXES, first_capital, visible

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def videomathqa(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """Rows of `mcq.json` (5 options) and `mbin.json` (binary pairs sharing a `question_id`)."""
    setting = ctx.stem
    rid = f"{setting}/{row['question_id']}" + (f"/{row['pair']}" if setting == "mbin" else "")
    return [mc(rid, row["question"], option_list(row["options"]), row["answer"], [video(ctx, mp4_file(row["videoID"]))],
               setting=setting, question_id=str(row["question_id"]), category=row.get("category"), duration=row.get("duration"))]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


def videomathqa_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's videomathqa.jsonl: a question's MCQ row and its 4 binary rows (`mbinary_id`) share `problem_id`;
    a binary row's id is `<problem_id>/<mbinary_id>`, and `problem_id` is the question every pair belongs to."""
    pid, binary = row.get("problem_id"), row.get("mbinary_id") not in (None, "")
    record = easyvideor1_record({**row, "problem_id": f"{pid}/{row['mbinary_id']}"} if binary else row, ctx)
    found = {"setting": "mbin" if binary else "mcq", "question_id": None if pid in (None, "") else str(pid),
             "duration": record["meta"].get("length")}
    record["meta"] = {**{k: v for k, v in found.items() if v not in (None, "")}, **record["meta"]}
    return [record]


# -- official scorer ---------------------------------------------------------------------------------------------------


def videomath(*keys: str) -> Aggregator:
    """VideoMathQA: MBin (a question counts only when all its binary pairs are right) and MCQ accuracy.

    Breakdowns are labelled by metric: `<key> (MBin)` over MBin questions (a question takes its first
    pair's label, as lmms-eval's per-category MBin), `<key> (MCQ)` over MCQ items.
    """

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        mcq = [r for r in rows if agg.meta_value(r, "setting") == "mcq"]
        mbin = [r for r in rows if agg.meta_value(r, "setting") == "mbin"]
        questions = [
            {"score": 1.0 if all(r["score"] >= 1.0 for r in members) else 0.0, "meta": members[0].get("meta") or {}}
            for members in agg.groups(mbin, "question_id").values()
        ]
        mbin_score = agg.pct(q["score"] for q in questions)
        metrics = {"MBin": mbin_score, "MCQ": agg.pct(r["score"] for r in mcq), "mbin_questions": float(len(questions))}
        tables = {f"{key} (MBin)": table for key, table in agg.breakdowns_by(questions, keys).items()}
        tables.update({f"{key} (MCQ)": table for key, table in agg.breakdowns_by(mcq, keys).items()})
        return Aggregate(mbin_score if mbin else metrics["MCQ"], metrics, tables)

    return aggregate


def videomathqa_item(row: Row) -> float:
    """The first capital A-E after Video-MME's prefixes (the same missing commas); none is wrong and counted."""
    return float(first_capital(visible(row), VIDEOMME_PREFIXES, "ABCDE") == row["answer"])


VIDEOMATHQA = Official(
    "MBin (a question counts only if all its binary pairs are right) and MCQ accuracy, every item counted; the first"
    " capital A-E after the prefixes is the answer",
    videomath("category", "duration"), videomathqa_item,
    source="lmms-eval 0.7.3 tasks/videomathqa/utils.py (the benchmark authors' lmms-eval task)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    return {"evr1_subset": required(record, "setting"),
            "question_id": str(required(record, "question_id")), "videoID": video_stem(record),
            "question": record.problem, "options": lettered(option_texts(record)), "answer": answer_letter(record),
            "category": record.meta.get("category"), "length": record.meta.get("duration")}


videomathqa_process_results = official_results("videomathqa_perception_score")


# The official block's MBin (a question right only when all its binary pairs are) and MCQ accuracy.
videomathqa_mbin = named_metric("MBin")
videomathqa_mcq = named_metric("MCQ")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {
    "mcq.json": [
        {"question_id": "q1", "videoID": "vm1", "question": "Area?", "options": ["A. 1", "B. 2", "C. 3", "D. 4", "E. 5"],
         "answer": "E", "category": "Geometry", "duration": "short"},
        {"question_id": "q2", "videoID": "vm1", "question": "Sum?", "options": ["A. 1", "B. 2", "C. 3", "D. 4", "E. 5"],
         "answer": "A", "category": "Arithmetic", "duration": "short"},
    ],
    "mbin.json": [
        {"question_id": "q1", "pair": 0, "videoID": "vm1", "question": "Area?", "options": ["A. 5", "B. 1"], "answer": "A",
         "category": "Geometry", "duration": "short"},
        {"question_id": "q1", "pair": 1, "videoID": "vm1", "question": "Area?", "options": ["A. 2", "B. 5"], "answer": "B",
         "category": "Geometry", "duration": "short"},
        {"question_id": "q2", "pair": 0, "videoID": "vm1", "question": "Sum?", "options": ["A. 1", "B. 3"], "answer": "A",
         "category": "Arithmetic", "duration": "short"},
        {"question_id": "q2", "pair": 1, "videoID": "vm1", "question": "Sum?", "options": ["A. 4", "B. 1"], "answer": "B",
         "category": "Arithmetic", "duration": "short"},
    ],
}


BENCHMARK = Benchmark(
    name="videomathqa",
    title="VideoMathQA",
    folder="videomathqa",
    annotations=("mcq.json", "mbin.json", "videomathqa.jsonl"),
    media_dir="videos",
    question_types=MC,
    metric="MBin (a question counts only if all its binary pairs are right) and MCQ accuracy",
    aggregate=videomath("category", "duration"),
    importer=videomathqa,
    lmms_task="videomathqa_mbin",
    meta_fields=("setting", "question_id"),
    easyvideor1=videomathqa_easyvideor1,
    official=VIDEOMATHQA,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
