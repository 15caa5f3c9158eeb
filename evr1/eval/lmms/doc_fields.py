"""Record fields as the benchmarks' lmms-eval converters (`Benchmark.lmms_doc`) put them into lmms-eval documents.

Option letters are evr1's (`evr1.eval.eval_prompt.LETTERS`); every error is a ValueError naming the record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from evr1.data.records import Record
from evr1.eval.definition import is_easyvideor1
from evr1.eval.eval_prompt import LETTERS
from evr1.problem_types import ProblemType


def official_fields(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row's own fields when it is in the official format (an EasyVideoR1 row carries none of the stock's)."""
    return {} if is_easyvideor1(row) else row


def is_mc(record: Record) -> bool:
    return record.problem_type is ProblemType.MULTIPLE_CHOICE


def source_id(record: Record) -> str:
    """The record id without the `<benchmark>/` prefix."""
    return record.id.split("/", 1)[-1]


def video_name(record: Record) -> str:
    """File name of the record's first video."""
    videos = [m for m in record.media if m.kind == "video"]
    if not videos:
        raise ValueError(f"record {record.id!r} has no video")
    return PurePosixPath(videos[0].path).name


def video_stem(record: Record) -> str:
    """File name of the record's first video without its extension (the benchmarks' video ids)."""
    return PurePosixPath(video_name(record)).stem


def required(record: Record, key: str) -> Any:
    """A meta value the lmms-eval task cannot do without."""
    value = record.meta.get(key)
    if value is None or value == "":
        raise ValueError(f"record {record.id!r}: meta field {key!r} is missing; the lmms-eval task needs it")
    return value


def option_texts(record: Record, most: int | None = None) -> list[str]:
    """The record's option texts (at least two; at most `most`, the letters the stock task shows)."""
    options = record.options or []
    if len(options) < 2:
        raise ValueError(f"record {record.id!r}: a multiple-choice record needs at least two options")
    if most is not None and len(options) > most:
        raise ValueError(f"record {record.id!r}: {len(options)} options, the stock task shows at most {most}")
    return list(options)


def lettered(options: Sequence[str], form: str = "{letter}. {text}") -> list[str]:
    """Options with their letters, e.g. "A. text" (`form="({letter}) {text}"`: "(A) text")."""
    return [form.format(letter=LETTERS[i], text=text) for i, text in enumerate(options)]


def answer_index(record: Record) -> int:
    """Position of the answer letter (case and spaces ignored) among the record's options."""
    letter = str(record.answer).strip().upper()
    if len(letter) != 1 or letter not in LETTERS[: len(option_texts(record))]:
        raise ValueError(f"record {record.id!r}: answer {record.answer!r} is not one of its option letters")
    return LETTERS.index(letter)


def answer_letter(record: Record) -> str:
    """The answer letter, upper case ("B")."""
    return LETTERS[answer_index(record)]


def answer_text(record: Record) -> str:
    """The text of the right option."""
    return option_texts(record)[answer_index(record)]
