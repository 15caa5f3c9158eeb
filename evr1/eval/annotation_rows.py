"""Reading official annotation rows into record dicts: option lists, answer letters, options embedded in the
question, media references, and the record dicts themselves (`mc`, `plain`).

The benchmarks' importers (`evr1.eval.benchmarks.<name>`) build on these. Field names follow the official releases as the lmms-eval 0.7.3 tasks read them (the Hugging Face
dataset rows, exported to JSON/JSONL where the release is Parquet); where the benchmark's own files
differ (MLVU `json/`, MMVU `validation.json`, Video-MMMU `data/<track>_video.json`), both shapes are
read. Each importer maps one row to record dicts (`id` without the benchmark prefix) with canonical
meta keys for the aggregation: `task`, `category` (a list where a question has several, as LVBench's),
`duration`, `format`, `dimension`, `track`, `setting`, `question_id`, ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from evr1.data.importers import strip_option_letters
from evr1.eval.definition import RowContext
from evr1.eval.eval_prompt import LETTERS

# A letter answer: "(A)", "A", "A.", "A)" or "A:", then nothing or the option's text.
_LETTER_FORM = re.compile(r"\(([A-Z])\)\s*(.*)|([A-Z])(?:[.):]\s*(.*))?", re.DOTALL)


_EMBEDDED = re.compile(r"^\s*\(?([A-Z])[.)]\s*(.+?)\s*$")


# TempCompass caption matching: "Caption A: x", "Sentence A: x", "Option 1: x" (its three question templates).
_LABELLED = re.compile(r"^\s*(?:Caption|Sentence|Option)\s+([A-Z]|[1-9])\s*(?::\s*(.*?))?\s*$")


Row = Mapping[str, Any]


def option_list(value: Any) -> list[str]:
    """Option texts from a list ("A. x" or plain), a {"A": x} mapping, or "A. x\\nB. y" text."""
    if isinstance(value, Mapping):
        return [str(value[k]).strip() for k in sorted(value)]
    if isinstance(value, str):
        value = [line for line in value.splitlines() if line.strip()]
    if not isinstance(value, Sequence) or not value:
        raise ValueError(f"expected a list of options, got {value!r}")
    return strip_option_letters([str(o) for o in value])


def _normalised(text: str) -> str:
    """Option text compared loosely: case, inner spaces and trailing punctuation ignored."""
    return " ".join(text.casefold().split()).rstrip(" .。!?;")


def letter_of(answer: Any, options: Sequence[str]) -> str:
    """The option letter of an answer given as an index, the option text, or a letter form.

    Option text wins over a letter reading: first an exact match, then one after `_normalised`
    (so "A dog." is the option "A dog", never the letter A). A letter form is "A", "(A)", "A.",
    "A)" or "A:", alone or followed by that option's own text ("A. red"). An answer whose loose text
    match and letter reading name different options ("B" among options "b", "a") is an error.
    """
    if isinstance(answer, int) and not isinstance(answer, bool):
        if not 0 <= answer < len(options):
            raise ValueError(f"answer index {answer} is out of range for {len(options)} options")
        return LETTERS[answer]
    text = str(answer).strip()
    for i, option in enumerate(options):
        if text == str(option).strip():
            return LETTERS[i]
    loose = [i for i, option in enumerate(options) if _normalised(str(option)) == _normalised(text)]
    letter = _letter_reading(text, options)
    if len(loose) == 1 and letter not in (None, LETTERS[loose[0]]):
        raise ValueError(f"answer {answer!r} reads as option {LETTERS[loose[0]]} by its text but as the letter {letter}"
                         f" ({list(options)!r})")
    if len(loose) == 1:
        return LETTERS[loose[0]]
    if letter is not None and not loose:
        return letter
    raise ValueError(f"answer {answer!r} is not one of {len(options)} options ({list(options)!r}) nor a letter of one")


def _letter_reading(text: str, options: Sequence[str]) -> str | None:
    """The letter of a letter form naming one of `options` (see `letter_of`), else None."""
    form = _LETTER_FORM.fullmatch(text)
    if form is None:
        return None
    letter, rest = (form.group(1), form.group(2)) if form.group(1) else (form.group(3), form.group(4))
    index = LETTERS.index(letter)
    if index < len(options) and (not rest or _normalised(rest) == _normalised(str(options[index]))):
        return letter
    return None


def labelled_option(line: str) -> tuple[str, str] | None:
    """(letter, text) of an option line "A. x", "(A) x", "Caption A: x", "Sentence A: x" or "Option 1: x"
    (text "" for a bare label such as "Caption A"); None for any other line."""
    labelled = _LABELLED.match(line)
    if labelled:
        label = labelled.group(1)
        return (LETTERS[int(label) - 1] if label.isdigit() else label), labelled.group(2) or ""
    embedded = _EMBEDDED.match(line)
    return (embedded.group(1), embedded.group(2)) if embedded else None


def split_embedded(question: str) -> tuple[str, list[str]]:
    """A question whose options follow it as lines ("(A) x", "A. x", "Caption A: x", "Sentence A: x",
    "Option 1: x"; see `labelled_option`): (question, option texts)."""
    stem, options = [], []
    for line in question.splitlines():
        option = labelled_option(line)
        if option and option[1] and option[0] == LETTERS[len(options)]:
            options.append(option[1])
        elif not options:
            stem.append(line)
    if len(options) < 2:
        raise ValueError(f"question holds no lettered options: {question[:80]!r}")
    return "\n".join(stem).strip(), options


def video(ctx: RowContext, name: str, start: float | None = None, end: float | None = None) -> dict[str, Any]:
    media: dict[str, Any] = {"kind": "video", "path": ctx.media(name)}
    if start is not None:
        media["start"] = float(start)
    if end is not None:
        media["end"] = float(end)
    return media


def mc(rid: Any, question: str, options: list[str], answer: Any, media: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """A multiple-choice record dict."""
    return {
        "id": str(rid), "problem": str(question).strip(), "problem_type": "multiple_choice",
        "answer": letter_of(answer, options), "options": options, "media": media,
        "meta": {k: v for k, v in meta.items() if v is not None},
    }


def plain(rid: Any, question: str, ptype: str, answer: Any, media: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """A non-choice record dict."""
    return {
        "id": str(rid), "problem": str(question).strip(), "problem_type": ptype, "answer": answer, "media": media,
        "meta": {k: v for k, v in meta.items() if v is not None},
    }


def mp4_file(name: Any) -> str:
    name = str(name)
    return name if "." in name.rsplit("/", 1)[-1] else f"{name}.mp4"

