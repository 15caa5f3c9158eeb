"""Multiple choice: the answer letter, limited to the actual number of options (A–Z).

Read in order: a bare letter (`B`, `(b)`, `B.`, `Option B`); the text of exactly one option
(`options` hold the texts, with or without an `A.` prefix); else the capital letters standing
alone in the answer (`B. the dog`, `The answer is B`), which must all be one in-range letter,
and a leading one must not be contradicted by the option text that follows it; else the one
option text the answer mentions. A letter right after a negation ("not B", "isn't B", "never B"),
and any letter joined to it by "or", "nor", "and", "/" or a comma, is rejected: "Definitely not B,
the answer is A" is A, "C, not A" is C, "not A or B" has none. An option text may be given without
its leading article ("cat" for "A cat"). `A` before a lowercase word (the article, at a sentence start)
and `I` before a lowercase word (the pronoun) are words, not letters, unless that word is a
connective such as "or", "is" or "because". Option texts are blanked out before the search, so
"Vitamin C" in an option is no letter. Hedges ("A or B", "A (or maybe B)", "A B") and any
out-of-range letter ("E, not A" with four options) leave the answer unparseable (scored 0).
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
_LONE = re.compile(r"(?<![A-Za-z0-9'’-])[(\[]?([A-Z])[)\]]?(?![A-Za-z0-9'’-])")
_CONNECTIVES = "or|and|nor|vs|versus|is|because|since|as|but|not|seems|appears|looks|fits|matches"
_BEFORE_WORD = re.compile(rf"[ \t]+(?!(?:{_CONNECTIVES})\b)[a-z]")
_SENTENCE_END = ".!?:;>\n"
_OPTION_PREFIX = re.compile(r"[ \t]*[(\[]?[A-Za-z][)\].:][ \t]+")
_NEGATED = re.compile(r"(?:\b(?:not|never)|n't|n’t)[ \t]+[(\[]?$", re.IGNORECASE)
_JOINED = re.compile(r"[)\]]?[ \t]*(?:,|/|\b(?:or|nor|and)\b)[ \t]*[(\[]?", re.IGNORECASE)
_ARTICLE = re.compile(r"(?:a|an|the)[ \t]+(?=\S)", re.IGNORECASE)


def option_count(options: Sequence[str] | None) -> int:
    return min(len(options), 26) if options else 26


def _bare_options(options: Sequence[str] | None) -> list[str]:
    """The option texts without an `A.`-style prefix."""
    return [_OPTION_PREFIX.sub("", o, count=1) if _OPTION_PREFIX.match(o) else o for o in options or []]


def _without_article(text: str) -> str:
    return _ARTICLE.sub("", text, count=1) if _ARTICLE.match(text) else text


def _by_text(text: str, texts: list[str]) -> str | None:
    """The letter of the one option equal to `text`, else of the one equal to it without articles."""
    for answer, options in ((text, texts), (_without_article(text), [_without_article(t) for t in texts])):
        hits = [i for i, t in enumerate(options) if t and t == answer]
        if hits:
            return LETTERS[hits[0]] if len(hits) == 1 else None
    return None


def _rejected(t: str, lone: list[re.Match[str]]) -> set[int]:
    """Indexes of the letters a negation rejects: one right after it and those joined to that one."""
    out: set[int] = set()
    for i, m in enumerate(lone):
        negated = _NEGATED.search(t, max(m.start() - 16, 0), m.start())
        if negated or (i - 1 in out and _JOINED.fullmatch(t, lone[i - 1].end(), m.start())):
            out.add(i)
    return out


def _mentioned(norm: str, texts: list[str]) -> str | None:
    """The letter of the one option text the answer contains, else of the one it contains without articles."""
    padded = f" {norm} "
    for options in (texts, [_without_article(t) for t in texts]):
        hits = [i for i, o in enumerate(options) if o and f" {o} " in padded]
        if hits:
            return LETTERS[hits[0]] if len(hits) == 1 else None
    return None


def _is_word(t: str, match: re.Match[str]) -> bool:
    """`I think…` (pronoun) or `A dog…` at a sentence start (article): a word, not an option letter."""
    letter = match.group(1)
    if letter not in "AI" or match.group(0) != letter or not _BEFORE_WORD.match(t, match.end()):
        return False
    before = t[: match.start()].rstrip(" \t\"'“‘([*")
    return letter == "I" or not before or before[-1] in _SENTENCE_END


def _blank_options(t: str, options: list[str]) -> str:
    """`t` with each option text (of two or more characters, with and without its article) blanked."""
    for option in sorted({*options, *map(_without_article, options)}, key=len, reverse=True):
        words = option.split()
        if len("".join(words)) >= 2:
            pattern = r"(?<![A-Za-z0-9])" + r"\s+".join(map(re.escape, words)) + r"(?![A-Za-z0-9])"
            t = re.sub(pattern, lambda m: " " * len(m.group(0)), t, flags=re.IGNORECASE)
    return t


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
    bare = [unicodedata.normalize("NFKC", o).strip() for o in _bare_options(options)]
    texts = [normalise_text(o, punctuation=True) for o in bare]
    norm = normalise_text(t, punctuation=True)
    named = _by_text(norm, texts)
    if named is not None:
        return named
    lone = [m for m in _LONE.finditer(_blank_options(t, bare)) if not _is_word(t, m)]
    if any(LETTERS.index(m.group(1)) >= n for m in lone):
        return None
    rejected = _rejected(t, lone)
    kept = [m for i, m in enumerate(lone) if i not in rejected]
    letters = {m.group(1) for m in kept}
    if len(letters) > 1 or letters & {m.group(1) for i, m in enumerate(lone) if i in rejected}:
        return None
    if letters:
        first = kept[0]
        if first.start() == 0:  # a leading letter must not be contradicted by the option text after it
            rest = _by_text(normalise_text(t[first.end() :], punctuation=True), texts)
            if rest not in (None, first.group(1)):
                return None
        return first.group(1)
    return None if lone else _mentioned(norm, texts)


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
