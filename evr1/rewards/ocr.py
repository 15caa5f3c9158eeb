"""OCR: the mean of 1 − WER and 1 − CER (each capped to [0, 1]) on normalised text, via `jiwer`.

Normalisation: NFKC, case folding, punctuation removed, spaces collapsed. Components: `word`
(1 − WER) and `char` (1 − CER).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evr1.rewards.contract import RewardOutput
from evr1.rewards.extract import answer_of
from evr1.rewards.text_norm import normalise_text

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

MAX_CHARS = 20_000


def _accuracy(error: float) -> float:
    return max(0.0, 1.0 - min(1.0, error))


def text_accuracy(prediction: str, reference: str) -> tuple[float, float]:
    """(1 − WER, 1 − CER) of normalised texts; raises ValueError for an empty reference."""
    import jiwer

    hyp = normalise_text(prediction[:MAX_CHARS], punctuation=True)
    ref = normalise_text(reference, punctuation=True)
    if not ref:
        raise ValueError(f"ocr answer {reference!r} is empty")
    if not hyp:
        return (0.0, 0.0)
    return _accuracy(jiwer.wer(ref, hyp)), _accuracy(jiwer.cer(ref, hyp))


def suits(text: str, inp: RewardInput) -> bool:
    return bool(text.strip())


def score(inp: RewardInput, spec: RewardSpec) -> RewardOutput:
    """OCR: mean of 1 − WER and 1 − CER on normalised text."""
    text = answer_of(inp, spec) or ""
    word, char = text_accuracy(text, str(inp.answer))
    accuracy = 0.5 * (word + char)
    return RewardOutput(score=accuracy, components={"accuracy": accuracy, "word": word, "char": char})
