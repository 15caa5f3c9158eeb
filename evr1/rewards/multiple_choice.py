"""Multiple choice: the answer letter, limited to the actual number of options (A–Z).

Read in order: a bare letter (`B`, `(b)`, `B.`, `Option B`); the text of exactly one option
(`options` hold the texts, with or without an `A.` prefix); a leading letter (`B. the dog`, unless
its text names another option); else the one in-range capital letter in the answer, or the one
option text it mentions. Hedges ("A or B", "A/B") and several letters score 0.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evr1.rewards.extract import answer_of
from evr1.rewards.text_norm import normalise_text

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SHORT = re.compile(r"[(\[]?([A-Za-z])[)\]]?[.:)]?")
_PREFIX = re.compile(r"(?:the[ \t]+)?(?:correct[ \t]+)?(?:option|choice|answer)[ \t]*(?:[:：][ \t]*)?", re.IGNORECASE)
_LEAD = re.compile(r"[(\[]?([A-Z])(?:[)\]]|(?=[.:\s]|$))")
_HEDGE = re.compile(r"[ \t]*(?:,|/|&|\bor\b|\band\b|\bvs\.?)[ \t]*[(\[]?[A-Z](?![A-Za-z])", re.IGNORECASE)
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9'’])[(\[]?([A-Z])[)\]]?(?![A-Za-z0-9'’])")
_OPTION_PREFIX = re.compile(r"[ \t]*[(\[]?[A-Za-z][)\].:][ \t]+")


def option_count(options: Sequence[str] | None) -> int:
    return min(len(options), 26) if options else 26


def _option_texts(options: Sequence[str] | None) -> list[str]:
    if not options:
        return []
    return [normalise_text(_OPTION_PREFIX.sub("", o, count=1) if _OPTION_PREFIX.match(o) else o, punctuation=True) for o in options]


def _by_text(text: str, texts: list[str]) -> str | None:
    hits = [i for i, t in enumerate(texts) if t and t == text]
    return LETTERS[hits[0]] if len(hits) == 1 else None


def choice_letter(text: str | None, options: Sequence[str] | None, count: int | None = None) -> str | None:
    """The chosen letter, or None when there is none, it is out of range, or the answer hedges.

    `count` overrides the number of options (for labels without option texts).
    """
    if not text:
        return None
    n = count or option_count(options)
    t = unicodedata.normalize("NFKC", text).strip().strip("*`\"' ")
    t = _PREFIX.sub("", t, count=1) if _PREFIX.match(t) else t
    short = _SHORT.fullmatch(t)
    if short:
        letter = short.group(1).upper()
        return letter if LETTERS.index(letter) < n else None
    texts = _option_texts(options)
    norm = normalise_text(t, punctuation=True)
    named = _by_text(norm, texts)
    if named is not None:
        return named
    lead = _LEAD.match(t)
    if lead and LETTERS.index(lead.group(1)) < n:
        if _HEDGE.match(t, lead.end()):
            return None
        rest_letter = _by_text(normalise_text(t[lead.end() :], punctuation=True), texts)
        return lead.group(1) if rest_letter in (None, lead.group(1)) else None
    letters = {c for c in _CANDIDATE.findall(t) if LETTERS.index(c) < n}
    if letters:
        return letters.pop() if len(letters) == 1 else None
    padded = f" {norm} "
    mentioned = [i for i, o in enumerate(texts) if o and f" {o} " in padded]
    return LETTERS[mentioned[0]] if len(mentioned) == 1 else None


def reference_letter(inp: RewardInput) -> str:
    """The ground-truth letter; raises ValueError naming the bad answer."""
    letter = choice_letter(str(inp.answer), inp.options)
    if letter is None:
        raise ValueError(f"multiple_choice answer {inp.answer!r} is not one of {option_count(inp.options)} option letters")
    return letter


def suits(text: str, inp: RewardInput) -> bool:
    return choice_letter(text, inp.options) is not None


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Multiple choice: 1 when the answer's option letter equals the reference letter."""
    expected = reference_letter(inp)
    return 1.0 if choice_letter(answer_of(inp, spec), inp.options) == expected else 0.0
