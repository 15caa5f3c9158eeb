"""Preference: which of two responses is better, by label (`A`/`B`, also `1`/`2`, `first`/
`second`, `Response A`), or a tie (`tie`, `equal`). An answer naming both scores 0, unless it
compares them: "Response 1 is worse than Response 2" is B, "A is better than B" is A (every
comparison in the answer must agree; a negated one, "is not better than", is no comparison).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from evr1.rewards.extract import answer_of
from evr1.rewards.multiple_choice import choice_letter

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

_WORDS = {
    "first": "A", "1": "A", "former": "A",
    "second": "B", "2": "B", "latter": "B",
    "tie": "tie", "equal": "tie", "equally": "tie", "same": "tie", "neither": "tie",
}  # fmt: skip
_PREFIX = re.compile(r"(?:response|answer|output|assistant|candidate)[ \t]*", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")
_LABEL = r"(?:the[ \t]+)?(?:(?:response|answer|output|assistant|candidate)[ \t]*)?([AB12]|first|second|former|latter)\b"
_BETTER = {"better", "superior", "stronger", "preferable", "preferred"}
_WORSE = {"worse", "inferior", "weaker"}
_ADVERB = r"(?:(?:much|far|slightly|clearly|a[ \t]+bit)[ \t]+)?"
_COMPARISON = re.compile(
    rf"(?<![\w-]){_LABEL}(?:[ \t]+(?:one|response|answer))?[ \t]+(?:is|was|seems|looks)[ \t]+{_ADVERB}"
    rf"({'|'.join(sorted(_BETTER | _WORSE))})[ \t]+(?:than|to)[ \t]+{_LABEL}",
    re.IGNORECASE,
)


def _compared(text: str) -> str | None:
    """The winner of the answer's comparisons ('A' or 'B'); None when there are none or they disagree."""
    winners: set[str] = set()
    for m in _COMPARISON.finditer(text):
        first, second = (_WORDS.get(g.casefold(), g.upper()) for g in (m.group(1), m.group(3)))
        if first == second:
            return None
        winners.add(first if m.group(2).casefold() in _BETTER else second)
    return winners.pop() if len(winners) == 1 else None


def read_label(value: Any) -> str | None:
    """'A', 'B' or 'tie'; None when there is none or both A and B are named."""
    if isinstance(value, int) and not isinstance(value, bool) and value in (1, 2):
        return "A" if value == 1 else "B"
    if not isinstance(value, str) or not value.strip():
        return None
    compared = _compared(value[:20_000])
    if compared is not None:
        return compared
    text = _PREFIX.sub("", value[:20_000])
    letter = choice_letter(text, None, count=2)
    if letter is not None:
        return letter
    found = {_WORDS[w] for w in (w.casefold() for w in _WORD.findall(text)[:2000]) if w in _WORDS}
    return found.pop() if len(found) == 1 else None


def suits(text: str, inp: RewardInput) -> bool:
    return read_label(text) is not None


def reference_label(inp: RewardInput) -> str:
    label = read_label(inp.answer)
    if label is None:
        raise ValueError(f"preference answer {inp.answer!r} is not a label (A, B or tie)")
    return label


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Preference: 1 when the answer's label (A, B or tie) equals the reference label."""
    expected = reference_label(inp)
    return 1.0 if read_label(answer_of(inp, spec)) == expected else 0.0
