"""The official scorers of the benchmarks that mix answer formats (their `Official`; see `evr1.eval.official_rules`):
Video-MMMU (multiple choice and numeric answers), TempCompass (multi-choice, yes/no, caption matching, with the
official ChatGPT fallback as a judge step) and OVO-Bench (letters, counts, yes/no).

Each reader is written from the benchmark's published scorer, named in its `Official.source`, quirks included
(docs/benchmarks.md lists them); an item rule returns the official item score, or None when the scorer drops it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.official_choice import lmms_choice
from evr1.eval.official_rules import visible
from evr1.eval.protocols import Official

Row = Mapping[str, Any]


# -- Video-MMMU ------------------------------------------------------------------------------------


# The MMMU open-answer parser as lmms-eval's videommmu task (and the authors' copy of it) runs it.
MMMU_KEY_PHRASES = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ", "are ",
                    "in total ", "total ", "identify ", "recognize ", "calculated as ", "counted as ", "measured as ",
                    "observed as ", "concluded as ", "found to be ", "equals ", "determined to be ", "number of ",
                    "value is ", "adds up to ", "have ", "has ")
_MMMU_TRIVIAL = (":", ",", ".", "!", "?", ";", "'")
_GROUPED = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")  # 1,234,567
_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")  # 1.5e3
_PLAIN = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")  # 12, 1.5, .5; not of the two above
MMMU_DROPPED = ("", "API Error")  # responses lmms-eval's aggregation leaves out (its parser returns "API Error")


def mmmu_key_parts(text: str) -> list[str]:
    """The parts of a response that may hold the answer: the text stripped, "." stripped, lower case, cut into lines
    (the official split also at ". " before a capital, which never fires on lower-case text); of each line, the
    shortest tail after one of the key phrases ("=" too on the last line), unless it is empty or one punctuation mark;
    with none, the whole text."""
    text = text.strip().strip(".").lower()
    lines = text.split("\n")
    parts = []
    for i, line in enumerate(lines):
        best: str | None = None
        for phrase in MMMU_KEY_PHRASES + (("=",) if i == len(lines) - 1 else ()):
            if phrase in line:
                tail = line.split(phrase)[-1].strip()
                if not best or len(tail) < len(best):
                    best = tail
        if best and best.strip() not in _MMMU_TRIVIAL:
            parts.append(best)
    return parts or [text]


def mmmu_numbers(text: str) -> list[str]:
    """The numbers written in `text`: comma-grouped ones, then scientific ones, then plain ones."""
    return _GROUPED.findall(text) + _SCIENTIFIC.findall(text) + _PLAIN.findall(text)


def mmmu_normalised(text: str) -> list[float | str]:
    """A number (commas removed; anything `float` reads, "inf" too) as a float rounded to 2 decimals; other text lower
    case, a single character padded to " x" and "x " (so that it matches only as a word's edge)."""
    text = text.strip()
    try:
        return [round(float(text.replace(",", "")), 2)]
    except ValueError:
        text = text.lower()
        return [" " + text, text + " "] if len(text) == 1 else [text]


def mmmu_open_right(response: str, answer: Any) -> bool:
    """Right when a normalised prediction (each key part, and each number in one) is a float equal to the normalised
    answer, or text containing it."""
    parts = mmmu_key_parts(response)
    preds = [v for p in parts + [n for part in parts for n in mmmu_numbers(part)] for v in mmmu_normalised(p)]
    gold = mmmu_normalised(str(answer))
    return any(any(isinstance(g, str) and g in p for g in gold) if isinstance(p, str) else p in gold for p in preds)


def video_mmmu_item(row: Row) -> float | None:
    """Multiple choice: the letter lmms-eval's reader finds among the question's letters (none: wrong, counted);
    numeric: the MMMU open-answer parser (`mmmu_open_right`), an empty response (a failed generation too) dropped, as
    lmms-eval's aggregation drops its "API Error"."""
    text = visible(row)
    if row.get("problem_type") != "multiple_choice":
        return None if text in MMMU_DROPPED else float(mmmu_open_right(text, row["answer"]))
    letters = [chr(ord("A") + i) for i in range(len(row.get("options") or []))] or list("ABCDEFGHIJKLMN")
    return 1.0 if lmms_choice(text, letters) == row["answer"] else 0.0


VIDEO_MMMU = Official(
    "Overall: mean of the Perception, Comprehension and Adaptation accuracies (multiple choice read as lmms-eval reads"
    " it; numeric answers by the MMMU open-answer parser, an empty one dropped)",
    agg.macro("track", name="overall"), video_mmmu_item,
    source="EvolvingLMMs-Lab/VideoMMMU README leaderboard (Overall = mean of the three tracks); lmms-eval 0.7.3"
           " tasks/videommmu/utils.py (its reader: _task_utils/mcq_extract.py; parse_open_response, eval_open)",
)


# -- TempCompass (rule matching, as its scripts run with --disable_llm) ---------------------------------------------


def tempcompass_item(row: Row) -> float:
    """multi-choice: the response equal to the answer line ("B. fast"), a bare letter A-D, or starting "X." / "X)"
    with the right letter; yes_no: the response, lower case, starting "yes" / "no"; anything else is not matched
    and scores 0 (the scripts' --disable_llm; their ChatGPT fallback is not reproduced). Other formats (caption
    matching, captioning) keep evr1's reading."""
    fmt, response = (row.get("meta") or {}).get("format"), row.get("response")
    if fmt not in ("multi-choice", "yes_no"):
        return float(row["score"])
    if response is None:
        return 0.0
    text = response.replace("</s>", "")
    if fmt == "yes_no":
        said = next((w for w in ("yes", "no") if text.lower().startswith(w)), None)
        return float(said is not None and said == str(row["answer"]).lower())
    letter = str(row["answer"])
    options = row.get("options") or []
    index = ord(letter) - ord("A")
    line = f"{letter}. {options[index]}" if 0 <= index < len(options) else None
    if text == line or text in ("A", "B", "C", "D"):
        return float(text == line or text == letter)
    for mark in (".", ")"):
        if any(text.startswith(f"{c}{mark}") for c in "ABCD"):
            return float(text.split(mark)[0] == letter)
    return 0.0


TEMPCOMPASS = Official(
    "accuracy over all items, by format and dimension; multi-choice and yes/no read by the official matching rules"
    " (unmatched: 0, as with --disable_llm)",
    agg.accuracy("format", "dimension"), tempcompass_item,
    source="llyx97/TempCompass eval_multi-choice.py (commit 7bdcfa2), eval_yes_no.py (commit 75361fd)",
)


# -- OVO-Bench (offline) ---------------------------------------------------------------------------


def ovobench_item(row: Row) -> float:
    """Backward and real-time questions: right when the answer letter appears anywhere in the response; REC: all the
    digits of the response, joined, equal the count ("3 or 4" reads 34); SSR and CRR: a bare "Y" / "N", else
    "Yes" / "No" (capitalised) anywhere in the response. No response: 0."""
    response = row.get("response")
    if response is None:
        return 0.0
    kind, answer = row.get("problem_type"), row["answer"]
    if kind == "numerical":
        return float("".join(re.findall(r"\d+", response)) == str(int(float(answer))))
    if kind == "boolean":
        yes = str(answer).strip().lower() == "yes"
        if response == ("Y" if yes else "N"):
            return 1.0
        return float(("Yes" if yes else "No") in response)
    return float(str(answer) in response)


def ovobench_tasks(rows: Sequence[Row]) -> Aggregate:
    """Each task's accuracy; each category's mean of its tasks; the headline "Total Avg." is the mean over all the
    tasks (as the official script prints it), `category_mean` the mean of the three category means."""
    cats = {label: agg.breakdown(members, "task") for label, members in agg.groups(rows, "category").items()}
    tasks = [s for per in cats.values() for s, _ in per.values()]
    metrics = {label: sum(s for s, _ in per.values()) / len(per) for label, per in cats.items()}
    total = sum(tasks) / len(tasks) if tasks else 0.0
    metrics = {"Total Avg.": total, **metrics, "category_mean": sum(metrics.values()) / len(metrics) if metrics else 0.0}
    return Aggregate(total, metrics, {k: agg.breakdown(rows, k) for k in ("category", "task")})


OVOBENCH = Official(
    "Total Avg.: mean over the tasks of their accuracies (letter anywhere in the response; REC digits; SSR/CRR"
    " Yes/No), with each category's mean of its tasks",
    ovobench_tasks, ovobench_item,
    source="JoeLeelyf/OVO-Bench utils/OVOBenchScore.py (commit 19677d2, OVOBenchOfflineScore)",
)
