"""Boolean: yes/no, true/false, correct/incorrect (and yeah/yep/nope; y/n alone).

A leading polarity word decides ("Yes, there is no dog" is yes) unless a conjunction joins it to
the other polarity ("yes or no", "yes/no"). Otherwise the answer must contain words of exactly
one polarity: both present ("yes and no", "yes/no", "true ... false") scores 0.

Negation: not, never or a word ending in n't directly before a polarity adjective (true, false,
correct, incorrect, affirmative, negative), with only spaces between, flips it ("That is not true",
"Not correct." are no). Anything less clear is ambiguous (None, scored 0): a negated yes/no ("not
yes"), a negation one word further ("not entirely correct"), a negated word next to another polarity
word ("it is not true that it is false"), or a leading word the negation contradicts ("Yes, that
isn't correct").

A bare negation with no polarity word is no: "Not.", "Absolutely not.", "Certainly not!", "Not at
all", "Never" (only intensifiers may come before it; "Why not?" is no answer).
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
_ADJECTIVES = {"true", "false", "correct", "incorrect", "affirmative", "negative"}
_NEGATIONS = {"not", "never"}
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CONJ = {"or", "and", "nor", "vs"}
MAX_WORDS = 2000
_BARE_NO = re.compile(
    r"(?:(?:absolutely|certainly|definitely|surely|obviously|clearly|probably|most[ \t]+likely|really|of[ \t]+course)"
    r"[ \t,]+)*(?:not|never)(?:[ \t]+at[ \t]+all)?[ \t]*[.!]*",
    re.IGNORECASE,
)


def _is_negation(word: str) -> bool:
    return word in _NEGATIONS or word.endswith("n't")


def _reading(words: list[str], joined: list[bool], i: int) -> tuple[bool | None, bool]:
    """(polarity or None when unclear, whether negated) of the polarity word `words[i]`; `joined[i]`
    says whether only spaces separate it from the word before."""
    value = _POLARITY[words[i]]
    if i >= 1 and joined[i] and _is_negation(words[i - 1]):
        return (not value if words[i] in _ADJECTIVES else None), True
    if i >= 2 and joined[i] and joined[i - 1] and _is_negation(words[i - 2]):
        return None, True
    return value, False


def read_bool(value: Any) -> bool | None:
    """The polarity of an answer, or None when it has none, both, or an unclear negation."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if not isinstance(value, str):
        return None
    text = value[:20_000].replace("\u2019", "'")
    matches = list(_WORD.finditer(text))[:MAX_WORDS]
    words = [m.group().casefold() for m in matches]
    joined = [i > 0 and text[matches[i - 1].end() : m.start()].isspace() for i, m in enumerate(matches)]
    if len(words) == 1 and words[0] in _ALONE:
        return _ALONE[words[0]]
    if _BARE_NO.fullmatch(text.strip(" \t\r\n*`\"'")):
        return False
    readings = [_reading(words, joined, i) for i, w in enumerate(words) if w in _POLARITY]
    if any(v is None for v, _ in readings):
        return None
    negated = [v for v, n in readings if n]
    if words and words[0] in _POLARITY:
        first = _POLARITY[words[0]]
        rest = words[2:3] if len(words) > 2 and words[1] in _CONJ else words[1:2]
        both = bool(rest) and _POLARITY.get(rest[0]) is (not first)
        return None if both or any(v is not first for v in negated) else first
    if negated and len(readings) > 1:
        return None
    found = {v for v, _ in readings}
    return found.pop() if len(found) == 1 else None


def suits(text: str, inp: RewardInput) -> bool:
    return read_bool(text) is not None


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Boolean: 1 when the answer's polarity equals the reference's."""
    expected = read_bool(inp.answer)
    if expected is None:
        raise ValueError(f"boolean answer {inp.answer!r} is neither yes nor no")
    return 1.0 if read_bool(answer_of(inp, spec)) is expected else 0.0
