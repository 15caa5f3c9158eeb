"""Text normalisation shared by scorers: Unicode NFKC, case folding, punctuation and spacing."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")


def strip_punctuation(text: str) -> str:
    """Remove every Unicode punctuation and symbol character (P* and S* categories)."""
    return "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)


def normalise_text(text: str, *, punctuation: bool = False) -> str:
    """NFKC, case-folded, spaces collapsed; `punctuation=True` also removes punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if punctuation:
        text = strip_punctuation(text)
    return _SPACE.sub(" ", text).strip()
