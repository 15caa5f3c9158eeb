"""The official answer readers of the multiple-choice benchmarks (their `Official`; see `evr1.eval.official_rules`).

Each reader is written from the benchmark's published scorer, named in its `Official.source`, quirks included
(docs/benchmarks.md lists them); an item rule returns the official item score, or None when the scorer drops it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.official_rules import visible
from evr1.eval.protocols import Official

Row = Mapping[str, Any]

# -- Video-MME -------------------------------------------------------------------------------------

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


def videomme_item(row: Row) -> float | None:
    """The first capital A-D after the official prefixes; none drops the item (not "answered"); more than 10 words
    without one is the same case."""
    letter = first_capital(visible(row), VIDEOMME_PREFIXES, "ABCD")
    return None if letter is None else float(letter == row["answer"])


VIDEOMME = Official(
    "accuracy over the answered items (a response without a letter A-D is dropped), by duration, domain,"
    " sub-category and task type",
    agg.accuracy("duration", "domain", "category", "task"), videomme_item,
    source="BradyFU/Video-MME evaluation/eval_your_results.py (commit 4e7566d)",
)


# -- MVBench ---------------------------------------------------------------------------------------


def mvbench_item(row: Row) -> float:
    """The response's first word (lower case, "." removed) is right when it lies inside the answer's "(x)" or holds
    it: "A", "a.", "A)", "(A)", "A or B" read A; an empty response is inside any answer, so it scores 1 (a quirk of
    the official check); a failed generation (no response) scores 0."""
    if row.get("response") is None:
        return 0.0
    first = visible(row).lower().split(" ")[0]
    truth = f"({str(row['answer']).lower()})"
    return 1.0 if first.replace(".", "") in truth or truth in first else 0.0


MVBENCH = Official(
    "Avg: correct / total over all items (the leaderboard's), with per-task accuracy; the first word read as the"
    " official check reads it",
    agg.accuracy("task", name="Avg"), mvbench_item,
    source="OpenGVLab/Ask-Anything video_chat2/mvbench.ipynb (check_ans; leaderboard Avg = correct / total)",
)


# -- VideoMathQA, LongVideoBench: Video-MME's reader in lmms-eval, with A-E --------------------------------------


def videomathqa_item(row: Row) -> float:
    """The first capital A-E after Video-MME's prefixes (the same missing commas); none is wrong and counted."""
    return float(first_capital(visible(row), VIDEOMME_PREFIXES, "ABCDE") == row["answer"])


VIDEOMATHQA = Official(
    "MBin (a question counts only if all its binary pairs are right) and MCQ accuracy, every item counted; the first"
    " capital A-E after the prefixes is the answer",
    agg.videomath("category", "duration"), videomathqa_item,
    source="lmms-eval 0.7.3 tasks/videomathqa/utils.py (the benchmark authors' lmms-eval task)",
)

LONGVIDEOBENCH_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                           "The best option is", "The correct option is", "Best answer:", "Best option:")


def longvideobench_item(row: Row) -> float:
    """The first capital A-E after the prefixes; with none, the official scorer answers a random option: its expected
    score, 1 / the number of options, stands for that draw (a random draw cannot be reproduced). A failed generation
    (no response at all) scores 0."""
    if row.get("response") is None:
        return 0.0
    letter = first_capital(visible(row), LONGVIDEOBENCH_PREFIXES, "ABCDE")
    if letter is None:
        return 1.0 / max(1, len(row.get("options") or []) or 5)
    return float(letter == row["answer"])


LONGVIDEOBENCH = Official(
    "accuracy (val) over all items, by duration group and category; an answer without a capital A-E scores the"
    " expected value of the official random guess (1 / options)",
    agg.accuracy("duration", "category"), longvideobench_item,
    source="lmms-eval 0.7.3 tasks/longvideobench/utils.py (the LongVideoBench authors' rule, random guess included)",
)


# -- LVBench -------------------------------------------------------------------------------------------


def lvbench_letter(text: str) -> str:
    """LVBench's polish: the text before the first ")", after a "(" in it, its first word, that word's first
    character ("(B) x" -> "B", "A. x" -> "A", "The answer is C" -> "T"); "" for none."""
    text = text.strip().split(")")[0].strip()
    if "(" in text:
        text = text.split("(")[1].strip()
    word = text.split(" ")[0]
    return word[:1]


def lvbench_item(row: Row) -> float | None:
    """Right when the polished letter is the answer (case kept); a sample with no answer recorded (a failed
    generation) is left out, as an id missing from the official answers file."""
    if row.get("response") is None:
        return None
    return float(lvbench_letter(visible(row)) == row["answer"])


LVBENCH = Official(
    "accuracy over the answered items, by question type (a question counts under each of its types); the answer is the"
    " first character of the first word, after a \"(\" and before a \")\"",
    agg.accuracy("category"), lvbench_item,
    source="THUDM/LVBench lvbench/utils/answer_util.py (commit 1dd4612) and lvbench/metrics/compute_accuracy.py"
           " (commit dd7d99d)",
)


# -- MotionBench: LVBench's polish, every question counted ------------------------------------------------------


def motionbench_item(row: Row) -> float:
    """The polished letter (`lvbench_letter`) is the answer; no response reads "" (wrong, counted)."""
    return float(lvbench_letter(visible(row)) == row["answer"])


def motionbench_acc(rows: Sequence[Row]) -> Aggregate:
    """`acc` over every question (the headline the official leaderboard takes), `answered_acc` over the questions
    with a response, accuracy by category."""
    result = agg.accuracy("category", name="acc")(rows)
    answered = [r for r in rows if r.get("response") is not None]
    metrics = {**result.metrics, "answered_acc": agg.accuracy()(answered).score}
    return Aggregate(result.score, metrics, result.breakdowns)


MOTIONBENCH = Official(
    "acc: right / all questions (the polished first character of the first word is the letter), answered_acc beside"
    " it, by category",
    motionbench_acc, motionbench_item,
    source="THUDM/MotionBench motionbench/utils/answer_util.py, motionbench/metrics/compute_accuracy.py (commit 8c131ac)",
)


# -- MINERVA (lmms-eval's task: no scorer of the authors was found) -----------------------------------------------

_MINERVA_EXPLICIT = re.compile(r"(?:answer|option)\s*(?:is|:)\s*([ABCDE])", re.IGNORECASE)
MINERVA_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "Answer:", "Option:",
                    "Therefore, the final answer is:")


def minerva_letter(text: str) -> str:
    """The last "answer is X" / "option: X" (any case), else the last capital A-E once the prefixes are removed;
    "" for none."""
    text = text.strip()
    explicit = _MINERVA_EXPLICIT.findall(text)
    if explicit:
        return explicit[-1].upper()
    for prefix in MINERVA_PREFIXES:
        text = text.replace(prefix, "")
    found = re.findall("[ABCDE]", text)
    return found[-1] if found else ""


def minerva_item(row: Row) -> float:
    """Right when the letter read is the answer; with none, lmms-eval draws one of A-E: its expected score, 1/5. A
    failed generation (no response at all) scores 0."""
    if row.get("response") is None:
        return 0.0
    letter = minerva_letter(visible(row))
    return 0.2 if letter == "" else float(letter == row["answer"])


MINERVA = Official(
    "accuracy over all items, by question type; the last explicit \"answer is X\", else the last capital A-E; none"
    " scores the expected value of lmms-eval's random letter (1/5)",
    agg.accuracy("category"), minerva_item,
    source="lmms-eval 0.7.3 tasks/minerva/utils.py (no scorer of the MINERVA authors was found)",
)


# -- Video-Holmes ---------------------------------------------------------------------------------------

_ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
HOLMES_LETTERS = "ABCDEF"


def video_holmes_letter(response: str) -> str | None:
    """The last `<answer>` part (else the whole response, thinking included); the first letter A-F, in alphabetical
    order, written "X ", "X:" or "[X" in it; else the first letter A-F, alphabetically, anywhere in it; else None."""
    tagged = _ANSWER_TAG.findall(response)
    choice = tagged[-1].strip() if tagged else response
    for forms in (("{} ", "{}:", "[{}"), ("{}",)):
        for letter in HOLMES_LETTERS:
            if any(form.format(letter) in choice for form in forms):
                return letter
    return None


def video_holmes_item(row: Row) -> float:
    """Right when the letter read is the answer; none (a failed generation too) is wrong and counted."""
    return float(video_holmes_letter(row.get("response") or "") == row["answer"])


VIDEO_HOLMES = Official(
    "accuracy over all items, by question type; the first letter A-F (alphabetically) written \"X \", \"X:\" or"
    " \"[X\" in the last <answer>, else anywhere",
    agg.accuracy("category"), video_holmes_item,
    source="TencentARC/Video-Holmes evaluate.py (commit ac9e119)",
)


# -- MLVU ------------------------------------------------------------------------------------------


def mlvu_item(row: Row) -> float:
    """The response (stripped), cut before its first ")", must be the answer letter itself: "A" and "A) a cat" read
    A; "A.", "(A)", "The answer is A" and "a" do not (the official prompt ends in "Best option:(")."""
    text = visible(row)
    if ")" in text:
        text = text[: text.index(")")]
    return 1.0 if text == str(row["answer"]) else 0.0


MLVU = Official(
    "M-Avg: mean of the per-task-type accuracies, each answer right only when it is the letter (before a \")\")",
    agg.macro("task", name="M-Avg"), mlvu_item,
    source="JUNJIE99/MLVU videochat2/choice_bench.py (commit 0b16f40: check_ans, Avg over task types)",
)


# -- lmms-eval 0.7.3's multiple-choice reader (the reference scorer of the lmms-eval team's own benchmarks) ---------

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


# -- Video-MME-v2 ----------------------------------------------------------------------------------

VIDEOMME_V2_PREFIXES = ("Final Answer:", "The best answer is", "The correct answer is", "The answer is", "The answer",
                        "The best option is", "The correct option is", "Best answer:", "Best option:", "Answer:",
                        "Option:")


def videomme_v2_item(row: Row) -> dict[str, Any]:
    """The first capital A-H after the prefixes: mark 1 right, 0 wrong, -1 none read (`components.mark`); `score`
    is 1 for right (the simple accuracy counts marked items only)."""
    letter = first_capital(visible(row), VIDEOMME_V2_PREFIXES, "ABCDEFGH")
    mark = -1 if letter is None else int(letter == row["answer"])
    return {"score": float(mark == 1), "components": {"mark": mark}}


def _v2_group(marks: Sequence[int], kind: str, structure: Any) -> float:
    """A group's official score (0-1) from its marks in question order, -1 as the official script counts it: it
    lowers a relevance group's count (a count below 0 scores 0) and, being true, continues a logic chain."""
    if kind == "relevance":
        count = sum(marks)
        return agg.RELEVANCE[count] if 0 <= count <= 4 else 0.0
    shape = agg.as_tuple(ast.literal_eval(structure) if isinstance(structure, str) else structure)
    chain = 0
    while chain < len(marks) and marks[chain]:
        chain += 1
    if shape == (1, (2, 3), 4) and chain == 1 and len(marks) > 2 and marks[2]:
        chain = 2
    if shape == ((1, 2), 3, 4) and chain == 0 and len(marks) > 1 and marks[1]:
        chain = 1
    return agg.LOGIC[shape][min(chain, 4)]


def videomme_v2_groups(rows: Sequence[Row]) -> Aggregate:
    """The grouped non-linear score with the official -1 for an unread answer; group tables labelled by each group's
    last question; `accuracy` over the items with an answer read; `relevance_linear_score` = count x 25."""
    scored = []
    for members in agg.groups(rows, "group_id").values():
        ordered = sorted(members, key=agg.question_order)
        marks = [int((r.get("components") or {}).get("mark", -1)) for r in ordered]
        meta = ordered[-1].get("meta") or {}
        group = {"score": _v2_group(marks, meta.get("group_type"), meta.get("group_structure")), "meta": meta,
                 "linear": sum(marks) / 4}
        scored.append(group)
    pct = (lambda xs: 100.0 * sum(xs) / len(xs) if xs else 0.0)
    metrics = {"group_score": pct([g["score"] for g in scored])}
    read = [r for r in rows if (r.get("components") or {}).get("mark", -1) >= 0]
    metrics["accuracy"] = pct([r["score"] for r in read])
    for kind in ("relevance", "logic"):
        chosen = [g for g in scored if agg.meta_value(g, "group_type") == kind]
        if chosen:
            metrics[f"{kind}_score"] = pct([g["score"] for g in chosen])
        if chosen and kind == "relevance":
            metrics["relevance_linear_score"] = pct([g["linear"] for g in chosen])
    tables = {k: agg.breakdown(scored, k) for k in agg.GROUP_KEYS if any(k in g["meta"] for g in scored)}
    return Aggregate(metrics["group_score"], metrics, tables)


VIDEOMME_V2 = Official(
    "grouped non-linear score (relevance: quadratic in the right count, logic: chain), an unread answer marked -1 as"
    " the official script marks it; accuracy over the answers read",
    videomme_v2_groups, videomme_v2_item,
    source="MME-Benchmarks/Video-MME-v2 evaluation/test_video_mme_v2.py (commit 013b6c9)",
)


# -- LongVideo-Reason ----------------------------------------------------------------------------------------------

_LVR_TAGGED = re.compile(r"<answer>(.*?)</answer>")  # no DOTALL: the answer must sit on one line
_LVR_FINAL = "Therefore the final answer is:"
_LVR_FINAL_TAGGED = re.compile(r"<answer>Therefore the final answer is: (.*?)</answer>")
_LVR_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)


def longvideo_reason_answer(response: str) -> str:
    """The official string-match reading of the whole response (thinking included): with "Therefore the final answer
    is:" anywhere, the first `<answer>Therefore the final answer is: X</answer>`; else the first one-line
    `<answer>X</answer>`; no match: the whole response; stripped. (The symbolic `math_verify` check comes first in the
    official scorer, but it finds nothing in a `<answer>X</answer>` letter reference, so it never decides.)"""
    found = (_LVR_FINAL_TAGGED if _LVR_FINAL in response else _LVR_TAGGED).search(response)
    return (found.group(1) if found else response).strip()


def longvideo_reason_item(row: Row) -> dict[str, Any] | None:
    """Right when the official reading equals the answer letter exactly ("b", "B.", "The answer is B" are wrong);
    `format` 1 when the response starts `<think>...</think> <answer>...</answer>`. A failed generation (no response)
    is dropped: the official loop skips a video whose generation raised."""
    response = row.get("response")
    if response is None:
        return None
    return {"score": float(longvideo_reason_answer(response) == str(row["answer"])),
            "format": float(_LVR_FORMAT.match(response) is not None)}


def longvideo_reason_metrics(rows: Sequence[Row]) -> Aggregate:
    """`accuracy` and `format_accuracy` over the generated answers, the two metrics the official script saves (the
    by-category table is evr1's addition)."""
    result = agg.accuracy("category")(rows)
    fmt = 100.0 * sum(r["format"] for r in rows) / len(rows) if rows else 0.0
    return Aggregate(result.score, {**result.metrics, "format_accuracy": fmt}, result.breakdowns)


LONGVIDEO_REASON = Official(
    "accuracy over the generated answers (a failed generation is dropped): the first one-line <answer>X</answer>"
    " (else the whole response) equal to the letter; format_accuracy beside it",
    longvideo_reason_metrics, longvideo_reason_item,
    source="NVlabs/Long-RL eval/eval.py (commit 97abc84: accuracy_reward, format_reward)",
)


# -- ODV-Bench (the authors' lmms-eval task in MCG-NJU/StreamForest) ---------------------------------------------

_ODV_OPTION = re.compile(r"^([A-E])\.\s*(.+)$", re.IGNORECASE)
_ODV_PUNCT = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
_ODV_DIGIT_COMMA = re.compile(r"(\d)(,)(\d)")
_ODV_PERIOD = re.compile(r"\.(?!\d)")  # the official pattern's look-behind is malformed: every "." not before a digit
_ODV_PERIODS_CUT = 32  # it passes re.UNICODE (32) as the count: at most 32 periods go
_ODV_LETTER = re.compile(r"\b([A-E])\b", re.IGNORECASE)


def _odv_punctuation(text: str) -> str:
    """Each mark removed where it stands beside a space somewhere in `text` (or `text` holds a digit,digit), else
    replaced by a space; then the periods not before a digit removed (the first 32)."""
    out = text
    for mark in _ODV_PUNCT:
        spaced = f"{mark} " in text or f" {mark}" in text or _ODV_DIGIT_COMMA.search(text) is not None
        out = out.replace(mark, "" if spaced else " ")
    return _ODV_PERIOD.sub("", out, count=_ODV_PERIODS_CUT)


def odvbench_letter(text: str) -> str:
    """The official reading: "X. text" (X in A-E, any case, on one line) is X; else, once cleaned (tabs and newlines
    to spaces, punctuation, quotes and parentheses stripped, lower case), the first lone letter a-e as a word, upper
    case ("The answer is D" -> D, but "I think a car" -> A); else the cleaned text itself."""
    found = _ODV_OPTION.match(text.strip())
    if found:
        return found.group(1).upper()
    cleaned = _odv_punctuation(text.replace("\n", " ").replace("\t", " ").strip())
    cleaned = cleaned.strip("'").strip('"').strip(")").strip("(").strip().lower()
    letter = _ODV_LETTER.search(cleaned)
    return letter.group(1).upper() if letter else cleaned


def odvbench_item(row: Row) -> float | None:
    """Right when the reading is the answer letter; an empty response (a failed generation too: no text) is dropped,
    as the official aggregation counts only predictions that are not ""; a blank "  " is counted."""
    response = row.get("response") or ""
    if response == "":
        return None
    return float(odvbench_letter(response) == row["answer"])


ODVBENCH = Official(
    "accuracy over the answered items (an empty prediction is dropped), by task, subtask and subsubtask; the"
    " official letter reading",
    agg.accuracy("task", "subtask", "subsubtask"), odvbench_item,
    source="MCG-NJU/StreamForest lmms_eval/tasks/odvbench/utils.py (commit 81cbd38: mcq_acc,"
           " odvbench_aggregate_results)",
)
