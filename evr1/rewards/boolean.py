"""Boolean: yes/no, true/false, correct/incorrect (and yeah/yep/nope; y/n alone).

A leading polarity word decides ("Yes, there is no dog" is yes) unless a conjunction joins it to
the other polarity ("yes or no", "yes/no"). Otherwise the answer must contain words of exactly
one polarity: both present ("yes and no", "yes/no", "true ... false") scores 0.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from evr1.rewards.extract import answer_of

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

_POLARITY = {
    "yes": True, "true": True, "correct": True, "yeah": True, "yep": True, "affirmative": True,
    "no": False, "false": False, "incorrect": False, "nope": False, "negative": False,
}  # fmt: skip
_ALONE = {"y": True, "n": False, "1": True, "0": False}
_WORD = re.compile(r"[^\W_]+")
_CONJ = {"or", "and", "nor", "vs"}
MAX_WORDS = 2000


def read_bool(value: Any) -> bool | None:
    """The polarity of an answer, or None when it has none or both."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if not isinstance(value, str):
        return None
    words = [w.casefold() for w in _WORD.findall(value[:20_000])][:MAX_WORDS]
    if len(words) == 1 and words[0] in _ALONE:
        return _ALONE[words[0]]
    if words and words[0] in _POLARITY:
        first = _POLARITY[words[0]]
        rest = words[2:3] if len(words) > 2 and words[1] in _CONJ else words[1:2]
        joined = bool(rest) and _POLARITY.get(rest[0]) is (not first)
        return None if joined else first
    found = {_POLARITY[w] for w in words if w in _POLARITY}
    return found.pop() if len(found) == 1 else None


def suits(text: str, inp: RewardInput) -> bool:
    return read_bool(text) is not None


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Boolean: 1 when the answer's polarity equals the reference's."""
    expected = read_bool(inp.answer)
    if expected is None:
        raise ValueError(f"boolean answer {inp.answer!r} is neither yes nor no")
    return 1.0 if read_bool(answer_of(inp, spec)) is expected else 0.0
