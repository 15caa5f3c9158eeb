"""Structural similarity of two SVG/HTML documents.

Each document becomes a sequence of element tokens `tag[attribute names]`, read by one linear
regular expression over start tags (the standard library's `html.parser` is quadratic on
unclosed tags such as `<svg <svg <svg …`, which model outputs do produce). The similarity is the
mean of the token-multiset F1 and the order-aware `difflib` ratio of the token sequences (both
capped to MAX_TOKENS tokens). Documents equal up to whitespace score 1.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

MAX_TOKENS = 400
MAX_CHARS = 200_000
_START_TAG = re.compile(r"<([A-Za-z][\w:.-]*)([^<>]*)>")
_ATTRIBUTE = re.compile(r"([A-Za-z_:][\w:.-]*)\s*=")


def element_tokens(markup: str) -> list[str]:
    """`tag[sorted attribute names]` for each start tag, in document order (at most MAX_TOKENS)."""
    tokens: list[str] = []
    for m in _START_TAG.finditer(markup[:MAX_CHARS]):
        names = sorted({a.lower() for a in _ATTRIBUTE.findall(m.group(2))})
        tokens.append(f"{m.group(1).lower()}[{','.join(names)}]")
        if len(tokens) >= MAX_TOKENS:
            break
    return tokens


def similarity(prediction: str, reference: str) -> float:
    """1 for identical documents (up to whitespace), else mean of tag-multiset F1 and sequence ratio."""
    if " ".join(prediction.split()) == " ".join(reference.split()):
        return 1.0
    got, expected = element_tokens(prediction), element_tokens(reference)
    if not got or not expected:
        return 0.0
    common = sum((Counter(got) & Counter(expected)).values())
    f1 = 2 * common / (len(got) + len(expected))
    ratio = difflib.SequenceMatcher(None, got, expected, autojunk=False).ratio()
    return min(1.0, 0.5 * f1 + 0.5 * ratio)
