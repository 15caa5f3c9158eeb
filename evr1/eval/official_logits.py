"""Answers chosen by the model's logits over the option letters, as an official scorer that never reads generated text
does (LiveSports-3K QA: `Official.choice`). The runner asks a responder that can (`EngineResponder.chooses`) for the
choice of every sample it prepares, and stores it in the sample row's `official` (`{"choice": "B", "logits": [...]}`,
or `{"error": ...}`), so a resume or a rescoring keeps it; rows without one (given responses) leave the official block
unavailable (`missing_choice`).

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evr1.eval.eval_prompt import LETTERS

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


@dataclass(frozen=True)
class LogitChoice:
    """How an official scorer chooses an answer by logits: its user text, the start it gives the assistant's turn,
    its candidate letters and the text before each when their tokens are read (the last token of `before + letter`)."""

    question: Callable[[Record], str]
    answer_prefix: str
    letters: str
    before_letter: str
    source: str

    def candidates(self, tokenizer: Any) -> list[int]:
        """The candidate token ids, one per letter."""
        tok = getattr(tokenizer, "tokenizer", tokenizer)  # a processor carries its tokenizer
        return [int(tok(f"{self.before_letter}{letter}")["input_ids"][-1]) for letter in self.letters]

    def made(self, logits: Sequence[float]) -> dict[str, Any]:
        """The row `official` of one sample from its candidates' logits: the letter of the first maximum."""
        values = [float(v) for v in logits]
        return {"choice": self.letters[max(range(len(values)), key=values.__getitem__)], "logits": values}


def livecc_question(record: Record) -> str:
    """LiveCC's user text: the question, the lettered options one a line, "Please select the correct answer."."""
    options = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(record.options or ()))
    return f"{record.problem}\n{options}\nPlease select the correct answer."


LIVECC = LogitChoice(livecc_question, "Answer:", "ABCD", ": ",
                     source="showlab/livecc commit fdaa91e evaluation/distributed_mcq_predictor.py (mcq_predict)")


def choice_item(row: Row) -> dict[str, Any]:
    """The official item of a row by its recorded choice (correct when it is the answer); a row without one (its
    preparation or its choice failed) scores 0 as failed."""
    made = row.get("official") or {}
    if "choice" in made:
        return {"score": float(made["choice"] == row.get("answer")), "parsed": made["choice"], "error": None}
    return {"score": 0.0, "parsed": None, "error": made.get("error") or row.get("error") or "no official choice"}


def missing_choice(choice: LogitChoice, rows: Sequence[Row]) -> str | None:
    """Why the official block cannot be scored from `rows` (answered rows that hold no choice), or None."""
    lacking = sum(1 for r in rows if r.get("response") is not None and not {"choice", "error"} & set(r.get("official") or {}))
    if not lacking:
        return None
    return (f"the official scorer chooses each answer by the model's logits over the option letters ({choice.source}),"
            f" and {lacking} of {len(rows)} samples hold no such choice (given responses hold no logits): run the model"
            " with evr1's HF engine for official numbers")
