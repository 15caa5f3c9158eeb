"""Answer readers shared by several official scorers: the response as a scorer sees it (`visible`), the first capital
letter after answer prefixes (Video-MME's reader, reused by VideoMathQA, LongVideoBench and Video-MME-v2), LVBench's
polished letter (LVBench, MotionBench) and lmms-eval 0.7.3's multiple-choice reader (Video-MMMU).

Each is written from the published scorer that defines it, quirks included; a benchmark's own reader lives in its
module (`evr1.eval.benchmarks.<name>`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def visible(row: Row) -> str:
    """The response as the official scorer sees it: "" for none (a failed generation), think part removed."""
    return _THINK.sub("", row.get("response") or "").strip()


# The official prefixes, as its list reads: two commas are missing there, so "The best option is" + "The correct option
# is" and "Best answer:" + "Best option:" are each one prefix (never found in a normal answer).
VIDEOMME_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                     "The best option isThe correct option is", "Best answer:Best option:")


def first_capital(text: str, prefixes: Sequence[str], letters: str) -> str | None:
    """The first of `letters` (capitals) anywhere in `text` once each prefix is removed ("Because ..." reads B), as
    the Video-MME script and the lmms-eval readers derived from it read answers; None when there is none."""
    for prefix in prefixes:
        text = text.replace(prefix, "")
    found = re.search(f"[{letters}]", text)
    return found.group(0) if found else None


def lvbench_letter(text: str) -> str:
    """LVBench's polish: the text before the first ")", after a "(" in it, its first word, that word's first
    character ("(B) x" -> "B", "A. x" -> "A", "The answer is C" -> "T"); "" for none."""
    text = text.strip().split(")")[0].strip()
    if "(" in text:
        text = text.split("(")[1].strip()
    word = text.split(" ")[0]
    return word[:1]


LMMS_PHRASES = ("the answer is", "answer is", "the correct answer is", "correct answer is", "the best answer is",
                "best answer is", "the correct option is", "correct option is", "the best option is", "best option is",
                "the choice is", "choice is", "the correct choice is", "correct choice is", "i choose", "i select",
                "i pick", "my answer is", "my choice is", "옵션", "정답은", "답은", "답:", "答案是", "答案为", "选", "答えは")


# a letter's forms, each with its rank (a higher rank wins; within a rank, the later position)
_LMMS_FORMS = (("({})", 6), ("{}.", 5), ("{}:", 4), ("{})", 3), ("{} ", 2))


def lmms_choice(response: str, choices: Sequence[str]) -> str:
    """The letter lmms-eval's `extract_mcq_answer` reads ("" for none): the text stripped of spaces, then of each of
    , . ! ? ; : ' " in turn, padded with a space; candidates are a letter standing alone at the start (rank 10) or
    the end (9), after the first answer phrase (7: its first occurrence after it), as "(A)" (6), "A." (5), "A:" (4),
    "A)" (3) or "A " (2), each at its last occurrence; with none of these, any occurrence (0, the last). The highest
    rank wins, then the later position, then the earlier choice."""
    if not response or not response.strip():
        return ""
    text = response.strip()
    for char in ",.!?;:'\"":
        text = text.strip(char)
    text = f" {text} "
    found: list[tuple[int, int, int, str]] = []  # (rank, position, -choice index, letter)
    for i, ch in enumerate(choices):
        found += [(rank, text.rfind(form.format(ch)), -i, ch) for form, rank in _LMMS_FORMS if form.format(ch) in text]
    lower = text.lower()
    for phrase in LMMS_PHRASES:
        at = lower.find(phrase)
        if at != -1:
            found += [(7, pos, -i, ch) for i, ch in enumerate(choices) if (pos := text.find(ch, at + len(phrase))) != -1]
    bare = text.strip()
    for i, ch in enumerate(choices):
        if bare.startswith(ch) and (len(bare) == 1 or not bare[1].isalpha()):
            found.append((10, 0, -i, ch))
        if bare.endswith(ch) and (len(bare) == 1 or not bare[-2].isalpha()):
            found.append((9, len(text) - 1, -i, ch))
    if not found:
        found = [(0, text.rfind(ch), -i, ch) for i, ch in enumerate(choices) if ch in text]
    return max(found, key=lambda c: (c[0], c[1]))[3] if found else ""

