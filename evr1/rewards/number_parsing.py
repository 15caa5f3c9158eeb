"""Reading one number out of text: units, thousands separators, fractions, percentages,
scientific notation (`1.2e3`, `1.2 × 10^3`, LaTeX), number words (`twenty-one`), `3.5 million`.

Several different numbers in one answer ("5 or 6") make it ambiguous: `parse_number` returns None.
European decimal commas (`3,5`) are read as two numbers, hence ambiguous.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD = "(?:" + "|".join(sorted([*_UNITS, *_SCALES], key=len, reverse=True)) + ")"
_WORD_RUN = re.compile(rf"\b{_WORD}(?:(?:[ \t]+and)?[ \t-]+{_WORD})*\b", re.IGNORECASE)
_DIGIT_SCALE = re.compile(r"(?<![\w.,])(\d+(?:,\d{3})*(?:\.\d+)?)[ \t]*(thousand|million|billion)\b", re.IGNORECASE)
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*([-+]?[\d.]+)\s*\}\s*\{\s*([-+]?[\d.]+)\s*\}")
_SCI = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)[ \t]*(?:x|\*|×|\\times|\\cdot)[ \t]*10[ \t]*\^[ \t]*(?:\{[ \t]*)?([-+]?\d{1,4})[ \t]*\}?")
_POWER = re.compile(r"(?<![\w.])(\d{1,6}(?:\.\d+)?)[ \t]*\^[ \t]*(?:\{[ \t]*)?([-+]?\d{1,3})[ \t]*\}?")
_UNIT_POWER = re.compile(r"(?<=[A-Za-z])[ \t]*\^[ \t]*\{?[-+]?\d{1,3}\}?")
_MIXED = re.compile(r"(?<![\w./])(\d+)[ \t]+(\d+)[ \t]*/[ \t]*(\d+)(?![\d/])")
_ATOM = re.compile(
    r"(?<![\w.])(?P<sign>[-+])?(?P<num>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d{1,4}))?"
    r"(?:[ \t]*/[ \t]*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?"
    r"(?P<pct>[ \t]*(?:%|percent\b|per[ \t]?cent\b))?",
    re.IGNORECASE,
)
MAX_CHARS = 20_000  # answers longer than this are read only up to here


@dataclass(frozen=True)
class Number:
    """A number read from text; `percent` marks `50%` (equal to both 50 and 0.5)."""

    value: float
    percent: bool = False

    def candidates(self) -> tuple[float, ...]:
        return (self.value, self.value / 100.0) if self.percent else (self.value,)


def _words_to_number(run: str) -> str:
    total, current = 0, 0
    for word in re.split(r"[ \t-]+", run.lower()):
        if word in _UNITS:
            current += _UNITS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total += max(current, 1) * _SCALES[word]
            current = 0
    return str(total + current)


def _fmt(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "nan"


def _power(base: str, exp: str) -> str:
    try:
        return _fmt(float(base) ** int(exp))
    except OverflowError:
        return "nan"


def normalise(text: str) -> str:
    """Rewrite number notations into plain decimal text the atom pattern reads."""
    text = unicodedata.normalize("NFKC", text[:MAX_CHARS]).replace("−", "-").replace("\u2009", "")
    text = text.replace("{,}", ",").replace("\\,", "").replace("\\!", "").replace("\\%", "%").replace("$", "")
    text = _LATEX_FRAC.sub(lambda m: f"{m.group(1)}/{m.group(2)}", text)
    text = _SCI.sub(lambda m: f"{m.group(1)}e{m.group(2)}", text)
    text = _UNIT_POWER.sub("", text)  # m^2, cm^{3}: part of a unit, not a number
    text = _POWER.sub(lambda m: _power(m.group(1), m.group(2)), text)
    text = _DIGIT_SCALE.sub(lambda m: _fmt(float(m.group(1).replace(",", "")) * _SCALES[m.group(2).lower()]), text)
    text = _WORD_RUN.sub(lambda m: _words_to_number(m.group(0)), text)
    return _MIXED.sub(lambda m: _fmt(int(m.group(1)) + int(m.group(2)) / int(m.group(3))) if int(m.group(3)) else m.group(0), text)


def find_numbers(text: str) -> list[Number]:
    """Every number in `text`, in order."""
    out: list[Number] = []
    for m in _ATOM.finditer(normalise(text)):
        try:
            value = float(m.group("num").replace(",", "") + (f"e{m.group('exp')}" if m.group("exp") else ""))
            if m.group("den"):
                den = float(m.group("den"))
                if den == 0:
                    continue
                value /= den
        except (OverflowError, ValueError):
            continue
        if m.group("sign") == "-":
            value = -value
        if math.isfinite(value):
            out.append(Number(value, bool(m.group("pct"))))
    return out


def same_number(a: Number, b: Number, rel_tol: float = 0.0, abs_tol: float = 0.0) -> bool:
    """Equal after normalising representation; tolerances are opt-in (float rounding is always allowed)."""
    rel = max(rel_tol, 1e-9)
    return any(math.isclose(x, y, rel_tol=rel, abs_tol=max(abs_tol, 1e-12)) for x in a.candidates() for y in b.candidates())


def parse_number(value: Any) -> Number | None:
    """The one number of an answer (int, float or text); None when none or several different ones."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Number(float(value)) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    found = find_numbers(value)
    if not found:
        return None
    first = found[0]
    return first if all(same_number(first, other) for other in found[1:]) else None
