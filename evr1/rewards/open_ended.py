"""Open-ended answers: exact after normalisation, else the mean ROUGE-1/2/L F1 with stemming.

Normalisation: NFKC, case folding, punctuation removed, spaces collapsed. ROUGE comes from
`rouge-score` with a Unicode-aware tokenizer (words of letters/digits, each CJK character a
token, Porter stemming of Latin words), so non-English answers are scored too. A list of
references scores against the best one.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from evr1.rewards.extract import answer_of
from evr1.rewards.text_norm import normalise_text

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

MAX_CHARS = 20_000
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+")


class _Tokenizer:
    """Unicode words (CJK characters one by one), Porter-stemmed when longer than three letters."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self._stem = functools.lru_cache(maxsize=65536)(porter.PorterStemmer().stem)

    def tokenize(self, text: str) -> list[str]:
        tokens = _TOKEN.findall(normalise_text(text[:MAX_CHARS]))
        return [self._stem(t) if len(t) > 3 and t.isascii() else t for t in tokens]


@functools.lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=_Tokenizer())


def warm_up() -> None:
    """Import rouge-score and build the scorer (about 2 s), so that the first sample does not pay for it."""
    rouge_mean("warm up", "warm up")


def references(answer: Any) -> list[str]:
    refs = [str(a) for a in answer] if isinstance(answer, (list, tuple)) else [str(answer)]
    refs = [r for r in refs if r.strip()]
    if not refs:
        raise ValueError(f"open_ended answer {answer!r} is empty")
    return refs


def rouge_mean(prediction: str, reference: str) -> float:
    """Mean of ROUGE-1, ROUGE-2 and ROUGE-L F1."""
    scores = _scorer().score(reference, prediction)
    return sum(s.fmeasure for s in scores.values()) / 3.0


def similarity(prediction: str, reference: str) -> float:
    if normalise_text(prediction, punctuation=True) == normalise_text(reference, punctuation=True):
        return 1.0
    return min(1.0, rouge_mean(prediction, reference))


def suits(text: str, inp: RewardInput) -> bool:
    return bool(text.strip())


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Open-ended: 1 when equal after normalisation, else mean ROUGE-1/2/L F1 (stemmed)."""
    refs = references(inp.answer)
    text = answer_of(inp, spec)
    return max(similarity(text, ref) for ref in refs) if text else 0.0
