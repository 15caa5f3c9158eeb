"""The official scorers of the benchmarks that mix answer formats (their `Official`; see `evr1.eval.official_rules`):
Video-MMMU (multiple choice and numeric answers), TempCompass (multi-choice, yes/no, caption matching, with the
official ChatGPT fallback as a judge step, and captioning, whose judge answers the video's first multi-choice question
from the caption; with the side files its importer reads) and OVO-Bench (letters, counts, yes/no).

Each reader is written from the benchmark's published scorer, named in its `Official.source`, quirks included
(docs/benchmarks.md lists them); an item rule returns the official item score, or None when the scorer drops it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.official_choice import lmms_choice
from evr1.eval.official_prompts import (
    TEMPCOMPASS_CAPTION_MATCHING,
    TEMPCOMPASS_CAPTIONING,
    TEMPCOMPASS_MULTI_CHOICE,
    TEMPCOMPASS_YES_NO,
)
from evr1.eval.official_rules import visible
from evr1.eval.protocols import Official
from evr1.rewards.judge_client import chat

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.specs import JudgeSpec

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


# The domains of the MMMU subjects, as lmms-eval 0.7.3's videommmu task groups its per-subject accuracies.
MMMU_DOMAINS = {
    "Art and Design": ("Art", "Art_Theory", "Design", "Music"),
    "Business": ("Accounting", "Economics", "Finance", "Manage", "Marketing"),
    "Science": ("Biology", "Chemistry", "Geography", "Math", "Physics"),
    "Health and Medicine": ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
                            "Pharmacy", "Public_Health"),
    "Humanities and Social Science": ("History", "Literature", "Sociology", "Psychology"),
    "Tech and Engineering": ("Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics",
                             "Energy_and_Power", "Materials", "Mechanical_Engineering"),
}
_MMMU_DOMAIN_OF = {subject: domain for domain, subjects in MMMU_DOMAINS.items() for subject in subjects}


def mmmu_subject(rid: Any) -> str | None:
    """The subject an MMMU id names between its first segment and its final number ("dev_Art_Theory_12" ->
    "Art_Theory"), as lmms-eval's task reads it; None for an id of another form."""
    parts = str(rid).split("_")
    return "_".join(parts[1:-1]) if len(parts) >= 3 and parts[-1].isdigit() else None


def mmmu_domain(subject: str | None) -> str | None:
    """The domain of an MMMU subject; None for a subject outside the task's six domains."""
    return _MMMU_DOMAIN_OF.get(subject or "")


VIDEO_MMMU = Official(
    "Overall: mean of the Perception, Comprehension and Adaptation accuracies (multiple choice read as lmms-eval reads"
    " it; numeric answers by the MMMU open-answer parser, an empty one dropped); tables by track, and within each track"
    " by domain and subject (lmms-eval's per-task tables)",
    agg.macro("track", "track_domain", "track_subject", name="overall"), video_mmmu_item,
    source="EvolvingLMMs-Lab/VideoMMMU README leaderboard (Overall = mean of the three tracks); lmms-eval 0.7.3"
           " tasks/videommmu/utils.py (its reader: _task_utils/mcq_extract.py; parse_open_response, eval_open)",
)


# -- TempCompass: the matching rules of its eval scripts, then their ChatGPT fallback (a judge step) ---------------

TEMPCOMPASS_SYSTEM = "You are an AI assistant for question answering."  # `get_llm_output`'s default system message
# `get_llm_output`: gpt-3.5-turbo-1106 (here the configured model), max_tokens 128, temperature 1.0, top_p 1,
# presence_penalty 1; `get_eval_result` asks again until the reply holds a verdict, 11 times at most, then rates 0.
TEMPCOMPASS_REQUEST = {"max_tokens": 128, "temperature": 1.0, "top_p": 1, "presence_penalty": 1}
TEMPCOMPASS_TRIES = 11
_FALLBACK = {"multi-choice": (TEMPCOMPASS_MULTI_CHOICE, "Multi-Choice Question"),
             "yes_no": (TEMPCOMPASS_YES_NO, "Yes/No Question"),
             "caption_matching": (TEMPCOMPASS_CAPTION_MATCHING, "Caption Matching Question")}
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tempcompass_released(fmt: str, meta: Mapping[str, Any], options: Sequence[str] | None, answer: Any,
                         problem: str = "") -> tuple[str, str]:
    """(question, answer) as the released file words them: the importer's `released_question` / `released_answer`,
    else rebuilt: the stem, then option lines "A. x" (multi-choice) or "Caption A: x" (caption matching), the answer
    its option's line; a yes/no answer as it is."""
    if "released_question" in meta and "released_answer" in meta:
        return str(meta["released_question"]), str(meta["released_answer"])
    if fmt == "yes_no" or not options:
        return problem, str(answer)
    lines = [f"{_LETTERS[i]}. {o}" if fmt == "multi-choice" else f"Caption {_LETTERS[i]}: {o}" for i, o in enumerate(options)]
    index = _LETTERS.index(str(answer)) if str(answer) in _LETTERS[: len(lines)] else -1
    return "\n".join([problem, *lines]), (lines[index] if index >= 0 else str(answer))


def caption_matching_rule(prediction: str, question: str, answer: str) -> int | None:
    """`eval_caption_matching.py`'s `eval_rule`: the prediction read as an option line, an option's sentence (also
    after a ") "), or a label ("Caption A", "A", "Option 1", "1"; "." removed), the later kind winning; None when it is
    none of them; else 1 when it is the answer line, its label, its sentence or its label's letter."""
    lines = question.split("\n")[1:]
    if any(": " not in line for line in lines):
        raise ValueError(f"TempCompass caption matching question {question[:60]!r}: an option line without ': '")
    sentences = [line.split(": ")[1] for line in lines]
    labels = [line.split(": ")[0] for line in lines]
    labels += [label.replace("Sentence ", "").replace("Option ", "").replace("Caption ", "") for label in labels]
    pred = None
    for line in lines:
        if line == prediction:
            pred = line
    for sentence in sentences:
        if sentence == prediction or (") " in prediction and sentence == prediction.split(") ")[1]):
            pred = sentence
    for label in labels:
        if label == prediction or label == prediction.replace(".", ""):
            pred = label
    if pred is None:
        return None
    return int(pred == answer or pred == answer.split(":")[0] or pred == answer.split(": ")[1]
               or pred == answer.split(": ")[0].split()[1])


def tempcompass_rule(fmt: str, prediction: str, question: str, answer: str) -> int | None:
    """The official matching rule of one prediction (`</s>` removed, stripped): 1 or 0, None when unmatched.
    multi-choice: the answer line itself, a bare A-D, or "X." / "X)" first, against the answer's first character;
    yes_no: starting "yes" / "no" (any case) against the answer; caption matching: `caption_matching_rule`."""
    if fmt == "yes_no":
        said = next((w for w in ("yes", "no") if prediction.lower().startswith(w)), None)
        return None if said is None else int(said == answer)
    if fmt == "caption_matching":
        return caption_matching_rule(prediction, question, answer)
    if prediction == answer:
        return 1
    if prediction in ("A", "B", "C", "D"):
        return int(prediction == answer[:1])
    for mark in (".", ")"):
        if any(prediction.startswith(f"{c}{mark}") for c in "ABCD"):
            return int(prediction.split(mark)[0] == answer[:1])
    return None


def fallback_rating(reply: str) -> int | None:
    """`llm_output_to_rating` of the stripped reply: None without "Correct" or "Incorrect" in it (asked again);
    starting "Correct" 1, "Incorrect" 0; else 1 unless "Incorrect" is in it."""
    text = reply.strip()
    if "Correct" not in text and "Incorrect" not in text:
        return None
    if text.startswith("Correct"):
        return 1
    if text.startswith("Incorrect"):
        return 0
    return int("Incorrect" not in text)


@lru_cache(maxsize=8)
def _json_file(path: str, stamp: tuple[int, int]) -> Any:
    """A JSON side file, read once per (path, mtime and size)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _side_file(path: Path) -> Any:
    """The JSON at `path`, or None when there is no such file."""
    if not path.is_file():
        return None
    stat = path.stat()
    return _json_file(str(path), (stat.st_mtime_ns, stat.st_size))


def captioning_question(questions_file: Path, video_id: str, dim: str) -> dict[str, str]:
    """`mc_question` / `mc_answer`: the first question of `video_id` and `dim` in the released `multi-choice.json`
    beside `questions_file`, the one `eval_captioning.py` asks its judge; ValueError when there is none."""
    beside = questions_file.with_name("multi-choice.json")
    released = _side_file(beside)
    if released is None:
        raise ValueError(f"TempCompass captioning needs {beside.name} beside {questions_file.name}: its official score"
                         " asks each video's first multi-choice question of the dimension")
    try:
        first = released[video_id][dim][0]
        return {"mc_question": str(first["question"]), "mc_answer": str(first["answer"])}
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"{beside}: no multi-choice question of video {video_id!r}, dimension {dim!r} (the official"
                         " captioning score asks the first one)") from None


def fine_aspect(questions_file: Path, video_id: str, dim: str) -> str | None:
    """The fine-grained aspect `print_result` files a question under: "order" for the order dimension, else the
    `eval_dim.<dim>.type` of the video in the released `meta_info.json` of the benchmark folder (above `questions/`);
    None without that file; ValueError when it lacks the video's entry."""
    if dim == "order":
        return "order"
    path = questions_file.parent.parent / "meta_info.json"
    infos = _side_file(path)
    if infos is None:
        return None
    try:
        return str(infos[video_id.replace(".jpg", "").replace(".mp4", "")]["eval_dim"][dim]["type"])
    except (KeyError, TypeError):
        raise ValueError(f"{path}: no eval_dim.{dim}.type for video {video_id!r}") from None


TEMPCOMPASS_CHOICE_MARKS = ("A.", "B.", "C.", "D.")


def caption_rating(reply: str, mc_answer: str) -> dict[str, Any]:
    """`eval_captioning.py`'s `parse_llm_output` of the stripped reply: an empty one (or "invalid_request_error")
    rates -1; the answer is the last line holding "Answer" ("Answer:" removed, stripped), else the whole reply; it
    rates 1 when its part before the first ". " is the reference's and it holds exactly one of "A." to "D."."""
    if not reply or reply == "invalid_request_error":
        return {"answer": None, "rating": -1}
    answer = reply
    for line in reply.split("\n"):
        if "Answer" in line.strip():
            answer = line.strip().replace("Answer:", "").strip()
    marks = sum(answer.count(mark) for mark in TEMPCOMPASS_CHOICE_MARKS)
    return {"answer": answer, "rating": int(answer.split(". ")[0] == mc_answer.split(". ")[0] and marks == 1)}


def captioning_judge(record: Record, response: str, judge: JudgeSpec) -> dict[str, Any]:
    """The official captioning judgement: the caption (`</s>` removed, stripped) and the video's first multi-choice
    question (meta `mc_question`) in the official prompt, the reply read by `caption_rating` against `mc_answer`;
    `{}` for a record without them (an EasyVideoR1 row: its official score is evr1's)."""
    if "mc_question" not in record.meta:
        return {}
    prediction = response.replace("</s>", "").strip()
    prompt = (f"{TEMPCOMPASS_CAPTIONING}\nVideo Description:{prediction}\nMulti-Choice Question:\n"
              f"{record.meta['mc_question']}\n")
    reply = chat(judge, TEMPCOMPASS_SYSTEM, prompt, options=TEMPCOMPASS_REQUEST).strip()
    return {"reply": reply, **caption_rating(reply, str(record.meta["mc_answer"]))}


def tempcompass_judge(record: Record, response: str, judge: JudgeSpec) -> dict[str, Any]:
    """The official ChatGPT fallback of an answer the matching rule cannot read: `{"matched": True, "rating"}` with no
    request when it can, else the official prompt asked until a verdict (`TEMPCOMPASS_TRIES` at most: rating 0); a
    captioning answer goes to `captioning_judge`."""
    fmt = record.meta.get("format")
    if fmt == "captioning":
        return captioning_judge(record, response, judge)
    if fmt not in _FALLBACK:
        return {}
    prediction = response.replace("</s>", "").strip()
    question, answer = tempcompass_released(fmt, record.meta, record.options, record.answer, record.problem)
    rating = tempcompass_rule(fmt, prediction, question, answer)
    if rating is not None:
        return {"matched": True, "rating": rating}
    base, label = _FALLBACK[fmt]
    prompt = f"{base}\n{label}:\n{question}\nGround-Truth Answer: {answer}\nModel Prediction: {prediction}"
    reply = ""
    for _ in range(TEMPCOMPASS_TRIES):
        reply = chat(judge, TEMPCOMPASS_SYSTEM, prompt, options=TEMPCOMPASS_REQUEST).strip()
        found = fallback_rating(reply)
        if found is not None:
            return {"matched": False, "reply": reply, "rating": found}
    return {"matched": False, "reply": reply, "rating": 0}


def tempcompass_item(row: Row) -> dict[str, Any]:
    """multi-choice, yes/no, caption matching: the matching rule's rating, else the fallback judge's (row `official`),
    else 0 (no judge set: the scripts' --disable_llm; an unreachable judge: its rating 0 after the retries); captioning:
    the captioning judge's rating (an unreachable judge -1, the script's rating after its retries), evr1's judged score
    for a row without one (an EasyVideoR1 row, a row stored before this step); a failed generation (no prediction) 0;
    `components.matched` for the match success rate (a captioning answer is never matched by a rule)."""
    meta = row.get("meta") or {}
    fmt, response = meta.get("format"), row.get("response")
    if response is None:
        return {"score": 0.0, "components": {"matched": 0}}
    if fmt == "captioning":
        official = row.get("official") or {}
        rating = -1 if "error" in official else official.get("rating")
        return {"score": float(row["score"] if rating is None else rating)}
    if fmt not in _FALLBACK:
        return {"score": float(row["score"])}
    prediction = response.replace("</s>", "").strip()
    question, answer = tempcompass_released(fmt, meta, row.get("options"), row["answer"])
    rating = tempcompass_rule(fmt, prediction, question, answer)
    if rating is not None:
        return {"score": float(rating), "components": {"matched": 1}}
    return {"score": float((row.get("official") or {}).get("rating", 0)), "components": {"matched": 0}}


def _match_rate(rows: Sequence[Row]) -> float:
    return 100.0 * sum((r.get("components") or {}).get("matched", 0) for r in rows) / len(rows)


def tempcompass_metrics(rows: Sequence[Row]) -> Aggregate:
    """Accuracy over all items, by format, dimension and fine-grained aspect (`fine_aspect`), and the tables each
    format's script prints (`print_result`): its accuracy by dimension (`<format> dimension`) and by fine-grained
    aspect (`<format> fine_aspect`), its `<format> match_success_rate` (the share of its items the rules read; for
    captioning 0); `match_success_rate` over the multi-choice, yes/no and caption-matching items."""
    result = agg.accuracy("format", "dimension", "fine_aspect")(rows)
    metrics, breakdowns = dict(result.metrics), dict(result.breakdowns)
    ruled = [r for r in rows if (r.get("meta") or {}).get("format") in _FALLBACK]
    if ruled:
        metrics["match_success_rate"] = _match_rate(ruled)
    for fmt, members in agg.groups(rows, "format").items():
        metrics[f"{fmt} match_success_rate"] = _match_rate(members)
        for key in ("dimension", "fine_aspect"):
            if any(key in (r.get("meta") or {}) for r in members):
                breakdowns[f"{fmt} {key}"] = agg.breakdown(members, key)
    return Aggregate(result.score, metrics, breakdowns)


TEMPCOMPASS = Official(
    "accuracy over all items, by format, dimension and fine-grained aspect, and each format's tables; multi-choice,"
    " yes/no and caption matching by the official matching rules, an unmatched answer by the official ChatGPT fallback"
    " prompt to the judge (none set: 0, as --disable_llm); captioning by the judge answering the video's first"
    " multi-choice question from the caption (a failed request -1); match_success_rate",
    tempcompass_metrics, tempcompass_item,
    source="llyx97/TempCompass eval_multi-choice.py (commit 7bdcfa2), eval_yes_no.py (commit 75361fd),"
           " eval_caption_matching.py (commit c2ec41e), eval_captioning.py, utils/eval_utils.py and prompt_templates.py"
           " (commit 3cdb5d4), meta_info.json",
    judge=tempcompass_judge, judge_optional=True,
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
