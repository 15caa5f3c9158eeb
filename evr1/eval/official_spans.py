"""Charades-STA's official span reader: how lmms-eval 0.7.3's task (`tasks/charades_sta/utils.py`, `extract_time`)
reads a predicted span, restated (not its code):

1. The text is lower-cased; every copy of the sentence "a specific example is : 20.8 - 30.0 seconds" is cut out;
   then every "to", inside words too ("tomato", "stops"), becomes "-" (so "from 8 to 11" reads "from 8 - 11").
2. The sentences are the pieces between "!", "?" and line breaks (a full stop ends none). The candidates are the
   sentences holding "start", "end" or "happen" anywhere ("weekend" counts); all of them when none does.
3. The first of these readings that finds something gives the span:
   a. clock range: the first "m:ss - m:ss" (or h:mm:ss; a hyphen or an en dash, spaces around it optional, each
      clock a whole token) of the first candidate holding one;
   b. number range: the first "x - y" (numbers with optional decimals, not whole tokens: "-2 - 4" reads 2 - 4) of the
      first candidate holding one;
   c. clock times: the first two whole-token clock times across the candidates;
   d. numbers: the first whole-token number of each candidate, the first two of those (so two numbers in one
      sentence give one, "[8, 11]" reads only 8, and one number alone gives nothing);
   e. number range with "s": as b, with an "s" allowed between the first number and the dash ("8s - 11s").
4. The span is that pair, smaller value first; None when nothing was found (the task scores it 0, a bad prediction).
"""

from __future__ import annotations

import re

EXAMPLE = "a specific example is : 20.8 - 30.0 seconds"  # the sentence cut out before reading
KEYWORDS = ("start", "end", "happen")  # the task's eight keywords all hold one of these
_DASH = r"\s*[-–]\s*"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?"  # m:ss or h:mm:ss; the first field one or two digits
_NUM = r"\d+(?:\.\d+)?"
_CLOCK_RANGE = re.compile(rf"\b({_CLOCK}){_DASH}({_CLOCK})\b")
_NUMBER_RANGE = re.compile(rf"({_NUM}){_DASH}({_NUM})")
_CLOCK_TIME = re.compile(rf"\b({_CLOCK})\b")
_NUMBER = re.compile(rf"\b({_NUM})\b")
_SECONDS_RANGE = re.compile(rf"({_NUM})\s*s?{_DASH}({_NUM})")

Span = tuple[float, float]


def clock_seconds(clock: str) -> float:
    """Seconds of "m:ss" or "h:mm:ss"."""
    fields = [float(f) for f in clock.split(":")]
    return sum(value * 60 ** power for power, value in enumerate(reversed(fields)))


def candidates(text: str) -> list[str]:
    """The sentences the task reads (rules 1 and 2)."""
    sentences = re.split(r"[!?\n]", text.lower().replace(EXAMPLE, "").replace("to", "-"))
    named = [s for s in sentences if any(k in s for k in KEYWORDS)]
    return named or sentences


def first_range(pattern: re.Pattern[str], sentences: list[str], clocks: bool) -> Span | None:
    """The first match of a two-value `pattern` in the first sentence holding one (readings a, b and e)."""
    for sentence in sentences:
        found = pattern.search(sentence)
        if found:
            read = clock_seconds if clocks else float
            return read(found.group(1)), read(found.group(2))
    return None


def first_two(values: list[float]) -> Span | None:
    return (values[0], values[1]) if len(values) >= 2 else None


def charades_span(text: str) -> Span | None:
    """The span Charades-STA's official reader takes from a response (see the module docstring), or None."""
    sentences = candidates(text)
    span = (first_range(_CLOCK_RANGE, sentences, clocks=True) or first_range(_NUMBER_RANGE, sentences, clocks=False)
            or first_two([clock_seconds(c) for s in sentences for c in _CLOCK_TIME.findall(s)])
            or first_two([float(m.group(1)) for m in map(_NUMBER.search, sentences) if m])
            or first_range(_SECONDS_RANGE, sentences, clocks=False))
    return None if span is None else (min(span), max(span))
