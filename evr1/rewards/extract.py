"""Answer extraction shared by every scorer.

Order (lenient): the last complete `<answer>…</answer>` (tag names case-insensitive, spaces inside
the brackets tolerated); else the last final-answer statement ("The final answer is …",
"Answer: …"); else the last complete `\\boxed{…}`; else the text after `</think>`; else the whole
response. Text inside `<think>…</think>` (or after an unclosed `<think>`, or before a stray
`</think>`) never counts. Strict: only an `<answer>` tag counts.

Everything here is a linear scan (no regex that can backtrack catastrophically).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

Source = Literal["tag", "statement", "boxed", "after_think", "whole"]

_TAG = re.compile(r"<\s*(?:(/)\s*)?(think|answer)\s*>", re.IGNORECASE)
_STATEMENT = re.compile(r"\banswer\b[ \t*]*(?:is\b[ \t*]*:?|[:：])", re.IGNORECASE)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TRIM = " \t\r\n*`$"


@dataclass(frozen=True)
class Extraction:
    """The answer text (None when there is none) and where it was found."""

    text: str | None
    source: Source | None
    tagged: bool  # a complete <answer> tag was found


def _visible(response: str) -> tuple[str, bool]:
    """The response without thinking, and whether a `</think>` was seen."""
    parts: list[str] = []
    depth, start, closed = 0, 0, False
    for m in _TAG.finditer(response):
        if m.group(2).lower() != "think":
            continue
        if not m.group(1):  # <think>
            if depth == 0:
                parts.append(response[start : m.start()])
            depth += 1
        else:  # </think>
            closed = True
            if depth == 0:
                parts.clear()  # a stray close: everything before it was thinking
            depth = max(depth - 1, 0)
            start = m.end()
    if depth == 0:
        parts.append(response[start:])
    return "\n".join(parts), closed


def _last_tag(text: str) -> str | None:
    """Content of the last complete <answer>…</answer> (the latest opening before the last close)."""
    last_open: int | None = None
    found: str | None = None
    for m in _TAG.finditer(text):
        if m.group(2).lower() != "answer":
            continue
        if not m.group(1):
            last_open = m.end()
        elif last_open is not None:
            found = text[last_open : m.start()]
            last_open = None
    return found


def _last_statement(text: str) -> str | None:
    """The rest of the line after the last 'answer is' / 'answer:' (or the next non-empty line)."""
    last = None
    for last in _STATEMENT.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end() :]
    line_end = rest.find("\n")
    line = (rest if line_end < 0 else rest[:line_end]).strip(_TRIM)
    if not line and line_end >= 0:
        for candidate in rest[line_end + 1 :].split("\n", 3)[:3]:
            if candidate.strip(_TRIM):
                line = candidate.strip(_TRIM)
                break
    return line.rstrip(".").strip(_TRIM) or None


def _last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{…}` whose braces are balanced."""
    starts = [m.end() - 1 for m in _BOXED.finditer(text)]
    if not starts:
        return None
    match: dict[int, int] = {}
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            match[stack.pop()] = i
    for brace in reversed(starts):
        if brace in match:
            return text[brace + 1 : match[brace]]
    return None


@functools.lru_cache(maxsize=8192)
def extract_answer(response: str, strict: bool = False) -> Extraction:
    """The answer of a response by the rules of this module; `text` is None when empty."""
    visible, closed = _visible(response)
    tagged = _last_tag(visible)
    if tagged is not None:
        return Extraction(tagged.strip() or None, "tag", True)
    if strict:
        return Extraction(None, None, False)
    for source, finder in (("statement", _last_statement), ("boxed", _last_boxed)):
        found = finder(visible)
        if found is not None and found.strip():
            return Extraction(found.strip(), source, False)  # type: ignore[arg-type]
    text = visible.strip()
    return Extraction(text or None, ("after_think" if closed else "whole") if text else None, False)


def answer_of(inp: RewardInput, spec: RewardSpec) -> str | None:
    """The extracted answer of a reward input under the spec's strictness."""
    return extract_answer(inp.response, spec.strictness == "strict").text
