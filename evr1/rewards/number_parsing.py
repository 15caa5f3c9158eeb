"""Reading one number out of text: units, thousands separators, fractions, percentages,
scientific notation (`1.2e3`, `1.2 × 10^3`, `10²`, LaTeX), number words (`twenty-one`),
`3.5 million`, magnitude suffixes (`1.2k`, `$4.2B`, `1.5 bn`).

Several different numbers in one answer ("5 or 6") make it ambiguous: `parse_number` returns None.
European decimal commas (`3,5`) are read as two numbers, hence ambiguous. Units are ignored, never
converted (`5 km` is 5, `4 kB` is 4).

Suffixes and look-alikes, decided case by case:

| text | reads | why |
|---|---|---|
| `1.2k`, `3K`, `-3k`, `1,200k`, `20k+` | × 1e3 | `k`/`K` glued to the number |
| `2.5M`, `5M+` | × 1e6 | capital `M` glued to the number |
| `$4.2B`, `7B` | × 1e9 | capital `B` glued to the number |
| `1.5 bn`, `1.5bn`, `4 bln`, `3 mln` | × 1e9, × 1e6 | unambiguous abbreviations, space allowed |
| `2.5m`, `12b`, `3 mn`, `10 M`, `3 K`, `2 B`, `5 k` | unchanged | lower-case `m`/`b` are units (metres, minutes, bits); a single letter after a space is a unit or a label |
| `300K` | 300000 | a glued `K` is thousands, never kelvin |
| `5 km`, `3kg`, `10 ms`, `2mm`, `4kB`, `7 kHz`, `2.5Mb` | unchanged | a longer letter run is a unit, not a suffix |
| `5k-run`, `3M-rated` | unchanged (5, 3) | suffix + hyphen + letter is a compound word |
| `3k-4k` | None | a range: two numbers |
| `1e3k` | 1000 | suffixes only follow plain decimals |
| `K-pop` | None | no digits |
| `Qwen2.5-VL-7B`, `GPT-4`, `COVID-19`, `x1/2`, `A1,000` | None | digits in a word, or after a `-`, `+`, `/` or `,` that ends one, belong to a name |
| `abc1.2kdef` | None | inside a word |
| `3m 20s` | None | two numbers; durations are not converted |
| `3m20s`, `1h30m`, `0x1F`, `1920x1080`, `1_000`, `1.5.2`, `192.168.0.1` | None | digits, letters and digits (or dotted groups) in one token are not a number |

Percentages: `x%` is the quantity x/100, and `readings` is the one rule every numeric scorer uses
to compare an answer with a reference (see its docstring).
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
_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_MAGNITUDE_EXP = {"k": 3, "m": 6, "b": 9, "bn": 9, "bln": 9, "mln": 6}  # case checked by _ATOM
_WORD = "(?:" + "|".join(sorted([*_UNITS, *_SCALES], key=len, reverse=True)) + ")"
_WORD_RUN = re.compile(rf"\b{_WORD}(?:(?:[ \t]+and)?[ \t-]+{_WORD})*\b", re.IGNORECASE)
_DIGIT_SCALE = re.compile(
    r"(?<![\w.,])(\d+(?:,\d{3})*(?:\.\d+)?)[ \t]*(thousand|million|billion|trillion)\b", re.IGNORECASE
)
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*([-+]?[\d.]+)\s*\}\s*\{\s*([-+]?[\d.]+)\s*\}")
_SCI = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)[ \t]*(?:x|\*|×|\\times|\\cdot)[ \t]*10[ \t]*\^[ \t]*(?:\{[ \t]*)?([-+]?\d{1,4})[ \t]*\}?"
)
_POWER = re.compile(r"(?<![\w.])(\d{1,6}(?:\.\d+)?)[ \t]*\^[ \t]*(?:\{[ \t]*)?([-+]?\d{1,3})[ \t]*\}?")
_UNIT_POWER = re.compile(r"(?<=[A-Za-z])[ \t]*\^[ \t]*\{?[-+]?\d{1,3}\}?")
_UNIT_SQUARED = re.compile(r"(\d[ \t]*(?![xXeE][23])[A-Za-z]{1,3})[23](?!\w|\.\d)")  # 20m2, 5 cm3 (not 2x2, 1e3): a unit's power
_SUPERSCRIPT = re.compile(r"(?<=[^\W_])[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")  # before NFKC turns `10²` into `102`
_MIXED = re.compile(r"(?<![\w./])(\d+)[ \t]+(\d+)[ \t]*/[ \t]*(\d+)(?![\d/])")
_ATOM = re.compile(
    r"(?<![\w.])(?P<sign>[-+])?(?P<num>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:(?P<mag>(?-i:[kKMB])|[ \t]*(?:bn|bln|mln))(?!\w|-[^\W\d_])"
    r"|(?:[eE](?P<exp>[-+]?\d{1,4}))?"
    r"(?:[ \t]*/[ \t]*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?"
    r"(?P<pct>[ \t]*(?:%|percent\b|per[ \t]?cent\b))?)",
    re.IGNORECASE,
)
_GLUED = re.compile(r"[^\W\d]*\d|\.\d")  # what follows a number inside one token: `0x1F`, `3m20s`, `1.5.2`
MAX_CHARS = 20_000  # answers longer than this are read only up to here


@dataclass(frozen=True)
class Number:
    """A number read from text; `percent` marks `50%` (value 50, the quantity 0.5)."""

    value: float
    percent: bool = False


def readings(answer: Number, reference: Number) -> tuple[float, ...]:
    """The answer's possible values on the reference's scale: the one percent rule of every numeric scorer.

    `x%` is the quantity x/100. When exactly one side carries a percent sign, the other may have
    dropped it, so both readings count: against a plain reference, `x%` reads as x/100 and as x;
    against `r%`, a plain x reads as x percent and as the fraction x (100x percent). So a reference
    0.5 accepts `50%` and `0.5%` (its sign may have been dropped), a reference `50%` accepts 50, 0.5
    and `50%`, a reference 1 accepts `100%` and `1%`. Two percentages, or two plain numbers, compare
    as written (`0.5%` is not `50%`). A number has at most these two readings, 100x apart.
    """
    if answer.percent == reference.percent:
        return (answer.value,)
    if answer.percent:
        return (answer.value / 100, answer.value)
    return (answer.value, answer.value * 100)


def same_number(answer: Number, reference: Number, rel_tol: float = 0.0, abs_tol: float = 0.0) -> bool:
    """Equal to the reference in one of the answer's `readings`; tolerances (in the reference's units) are
    opt-in, float rounding is always allowed."""
    return any(math.isclose(got, reference.value, rel_tol=max(rel_tol, 1e-9), abs_tol=max(abs_tol, 1e-12))
               for got in readings(answer, reference))


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


def _superscript(m: re.Match[str]) -> str:
    """`10²` -> `10^2`; `km²` -> `km` (a unit's power)."""
    return "^" + m.group(0) if m.string[m.start() - 1].isdigit() else ""


def normalise(text: str) -> str:
    """Rewrite number notations into plain decimal text the atom pattern reads."""
    text = _SUPERSCRIPT.sub(_superscript, text[:MAX_CHARS])
    text = unicodedata.normalize("NFKC", text).replace("−", "-").replace("\u2009", "")
    text = text.replace("{,}", ",").replace("\\,", "").replace("\\!", "").replace("\\%", "%").replace("$", "")
    text = _LATEX_FRAC.sub(lambda m: f"{m.group(1)}/{m.group(2)}", text)
    text = _SCI.sub(lambda m: f"{m.group(1)}e{m.group(2)}", text)
    text = _UNIT_POWER.sub("", text)  # m^2, cm^{3}: part of a unit, not a number
    text = _UNIT_SQUARED.sub(r"\1", text)
    text = _POWER.sub(lambda m: _power(m.group(1), m.group(2)), text)
    text = _DIGIT_SCALE.sub(lambda m: _fmt(float(m.group(1).replace(",", "")) * _SCALES[m.group(2).lower()]), text)
    text = _WORD_RUN.sub(lambda m: _words_to_number(m.group(0)), text)
    return _MIXED.sub(
        lambda m: _fmt(int(m.group(1)) + int(m.group(2)) / int(m.group(3))) if int(m.group(3)) else m.group(0), text
    )


def _in_name(text: str, start: int) -> bool:
    """Whether the number at `start` continues a word: after `-`, `+`, `/` (`VL-7B`, `x1/2`, `v1e+5`)
    or a digit's `,` (`A1,000`)."""
    sep = text[start - 1] if start else ""
    if sep not in ("-", "+", "/", ",") or (sep == "," and not text[start - 2 : start - 1].isdigit()):
        return False
    j = start - 1
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "._"):
        j -= 1
    return j < start - 1 and text[j].isalpha()


def _value(m: re.Match[str]) -> float | None:
    exp = int(m.group("exp") or 0) + (_MAGNITUDE_EXP[m.group("mag").strip().lower()] if m.group("mag") else 0)
    try:
        value = float(f"{m.group('num').replace(',', '')}e{exp}")  # `1.2k` is 1.2e3, exactly 1200
        if m.group("den"):
            den = float(m.group("den"))
            if den == 0:
                return None
            value /= den
    except (OverflowError, ValueError):
        return None
    return -value if m.group("sign") == "-" else value


def find_numbers(text: str) -> list[Number]:
    """Every number in `text`, in order (names and mixed tokens like `GPT-4`, `0x1F` skipped)."""
    text = normalise(text)
    out: list[Number] = []
    for m in _ATOM.finditer(text):
        if _GLUED.match(text, m.end()) or _in_name(text, m.start()):
            continue
        value = _value(m)
        if value is not None and math.isfinite(value):
            out.append(Number(value, bool(m.group("pct"))))
    return out


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
    return first if all(same_number(other, first) for other in found[1:]) else None
