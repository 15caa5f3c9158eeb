"""Answers chosen by the model's logits over the option letters, as an official scorer that never reads generated text
does (LiveSports-3K QA: `Official.choice`). The sample loop (`evr1.eval.samples`) asks a responder that can
(`EngineResponder.chooses`) for the choice of every sample it prepares, and stores it in the sample row's `official`
(`{"choice": "B", "logits": [...]}`, or `{"error": ...}`), so a resume or a rescoring keeps it; rows without one (given
responses) leave the official block unavailable (`missing_choice`).

The rule of one benchmark (LiveSports-3K: `LIVECC`) lives in its module, `evr1.eval.benchmarks.livesports3k_qa`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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

