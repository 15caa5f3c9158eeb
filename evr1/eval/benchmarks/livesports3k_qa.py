"""LiveSports-3K QA: sports video QA (who/what/when, with or without OCR; multiple choice, 4 options).

The official scorer never reads generated text: it chooses each answer by the model's logits over the option letters
(`Official.choice`, `evr1.eval.logit_choice`), so its block needs an engine that gives logits (evr1's HF engine).
The rule of LiveCC (showlab/livecc commit fdaa91e, `evaluation/distributed_mcq_predictor.py` `mcq_predict` with the
defaults `evaluation/livesports3kqa/distributed_evaluate_livesports3kqa.py` calls it with):
- the user turn is the video, then `question + "\\n" + "\\n".join(options) + "\\nPlease select the correct answer."`
  (the options as released, "A. x"; evr1 writes them "A. x" from the record's option texts);
- the chat template renders it with its generation prompt (and its own default system turn, if it has one), and
  "Answer:" is appended: the assistant's turn starts with it;
- one forward of that prompt; at its last position (the batch is left-padded), the logits of the tokens that end
  ": A", ": B", ": C", ": D" as the tokenizer splits them (the letter with its leading space on Qwen's vocabulary);
- the arg-max of those four (the first on a tie, as torch's argmax) picks the option; the item is correct when the
  chosen option's first character (its letter) is the answer. The letters are A-D whatever the option count: a letter
  past the options scores incorrect here (the authors' script would fail on it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate, Aggregator
from evr1.eval.annotation_rows import mc, mp4_file, option_list, video
from evr1.eval.definition import MC, Benchmark, Records, RowContext, renamed
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.logit_choice import LogitChoice, choice_item
from evr1.eval.protocols import Official

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def livesports(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A LiveSports-3K QA row as the LiveCC evaluation code reads it: four "A. x" options, a letter answer,
    `q_type`, `OCR` (0/1), and the question's span `video_start`/`video_end` of the full video `<video_id>.mp4`."""
    media = [video(ctx, mp4_file(row["video_id"]), row.get("video_start"), row.get("video_end"))]
    return [mc(row["question_id"], row["question"], option_list(row["options"]), row["answer"], media,
               category=row.get("q_type"), ocr=row.get("OCR"))]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


def livesports_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """Ids `<problem_id>/<q_type>`: in EasyVideoR1's livesports3k_qa.json four problem ids are each shared by
    questions of different types."""
    qtype = row.get("q_type_livesports")
    if qtype not in (None, ""):
        row = {**row, "problem_id": f"{row.get('problem_id')}/{qtype}"}
    return renamed(category="q_type_livesports", ocr="ocr_livesports")(row, ctx)


# -- official scorer ---------------------------------------------------------------------------------------------------


def livecc_question(record: Record) -> str:
    """LiveCC's user text: the question, the lettered options one a line, "Please select the correct answer."."""
    options = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(record.options or ()))
    return f"{record.problem}\n{options}\nPlease select the correct answer."


LIVECC = LogitChoice(livecc_question, "Answer:", "ABCD", ": ",
                     source="showlab/livecc commit fdaa91e evaluation/distributed_mcq_predictor.py (mcq_predict)")


def with_ocr(base: Aggregator) -> Aggregator:
    """`base`, plus the OCR sub-score: accuracy over the questions marked OCR (and over the others)."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        result = base(rows)
        ocr = agg.breakdown(rows, "ocr") if any("ocr" in (r.get("meta") or {}) for r in rows) else {}
        metrics = dict(result.metrics)
        for label, name in (("1", "OCR"), ("0", "non-OCR"), ("True", "OCR"), ("False", "non-OCR")):
            if label in ocr:
                metrics[name] = ocr[label][0]
        return Aggregate(result.score, metrics, {**result.breakdowns, **({"ocr": ocr} if ocr else {})})

    return aggregate


LIVESPORTS = Official(
    "accuracy of the answers chosen by the model's logits over the option letters, by question type, with the OCR"
    " accuracy sub-score",
    with_ocr(agg.accuracy("category")), choice_item,
    source="showlab/livecc commit fdaa91e evaluation/livesports3kqa/distributed_evaluate_livesports3kqa.py (accuracy by"
           " q_type and by OCR) and evaluation/distributed_mcq_predictor.py (the choice by logits)",
    choice=LIVECC,
)


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"qa.json": [  # fields read by LiveCC's evaluation/livesports3kqa script
    {"video_id": "s1", "question_id": "s1_e1_q1", "q_type": "Who", "OCR": 0, "question": "Who scores?",
     "options": ["A. a", "B. b", "C. c", "D. d"], "answer": "C", "video_start": 0.5, "video_end": 3.5},
    {"video_id": "s1", "question_id": "s1_e2_q1", "q_type": "When", "OCR": 1, "question": "When?",
     "options": ["A. a", "B. b", "C. c", "D. d"], "answer": "D", "video_start": 1.0, "video_end": 4.0},
]}


BENCHMARK = Benchmark(
    name="livesports3k_qa",
    title="LiveSports-3K QA",
    folder="livesports3k",
    annotations=("qa.json",),
    media_dir="videos",
    question_types=MC,
    metric="accuracy, by question type",
    aggregate=agg.accuracy("category"),
    importer=livesports,
    easyvideor1=livesports_easyvideor1,
    official=LIVESPORTS,
    fixtures=FIXTURES,
)
