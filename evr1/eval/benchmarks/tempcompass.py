"""TempCompass: temporal perception (speed, direction, order, attribute change) in four formats: multi-choice,
yes/no, caption matching and captioning.

The official scorer is the format's eval script: its matching rules, then its ChatGPT fallback prompt as a judge
step for an answer they cannot read; captioning is judged by asking the video's first multi-choice question of the
dimension about the caption. The importer reads lmms-eval's flat rows or the authors' nested files, with the side
files the official score needs (`multi-choice.json` beside the captioning questions, `meta_info.json`). The judge
prompts are quoted from `prompt_templates.py` (commit 3cdb5d4), typos included.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError, Evr1Error
from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import labelled_option, mc, mp4_file, plain, split_embedded, video
from evr1.eval.definition import JUDGE, Benchmark, RowContext
from evr1.eval.lmms import scoring
from evr1.eval.lmms.doc_fields import answer_index, is_mc, lettered, official_fields, option_texts, required, video_stem
from evr1.eval.lmms.scoring import Doc, ItemRow, item_row, percent, response_of
from evr1.eval.protocols import Official
from evr1.problem_types import ProblemType as PT
from evr1.rewards.judge_client import chat

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.specs import JudgeSpec

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def tempcompass(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """Rows of `<format>.json` (multi-choice, yes_no, caption_matching, captioning): lmms-eval's flat rows (`video_id`,
    `dim`, `question`, `answer`), or the file as the authors release it (`questions/<format>.json` of
    github.com/llyx97/TempCompass): one object `{video_id: {dimension: [question, ...]}}`, ids
    `<format>/<video_id>/<dimension>_<n>`."""
    if "video_id" not in row and row and all(isinstance(v, Mapping) for v in row.values()):
        return [record for vid, dims in row.items() for dim, items in dims.items()
                for i, item in enumerate(items if isinstance(items, list) else [items])
                for record in _tempcompass_row({**item, "video_id": vid, "dim": dim, "id": f"{dim}_{i}"}, ctx, True)]
    return _tempcompass_row(row, ctx)


def _tempcompass_row(row: Row, ctx: RowContext, released: bool = False) -> list[dict[str, Any]]:
    """One question; `released`: from the authors' nested file, whose captioning question takes its multi-choice
    question from `multi-choice.json` beside it (lmms-eval's rows carry `mc_question` / `mc_answer`). The fine-grained
    aspect comes from the benchmark folder's `meta_info.json`, where there is one."""
    fmt, media, dim = ctx.stem, [video(ctx, mp4_file(row["video_id"]))], row.get("dim")
    rid = f"{fmt}/{row['video_id']}/{row.get('id', ctx.item)}"
    meta = {"format": fmt, "dimension": dim, "fine_aspect": fine_aspect(ctx.file, str(row["video_id"]), str(dim))}
    if fmt != "captioning":  # the official matching rules and judge prompt read them as released
        meta |= {"released_question": str(row["question"]), "released_answer": str(row["answer"])}
    if fmt == "yes_no":
        return [plain(rid, row["question"], "boolean", str(row["answer"]).strip().lower().rstrip("."), media, **meta)]
    if fmt == "captioning":  # the official judge answers the video's first multi-choice question from the caption
        if released:
            meta |= captioning_question(ctx.file, str(row["video_id"]), str(dim))
        elif "mc_question" in row:
            meta |= {"mc_question": str(row["mc_question"]), "mc_answer": str(row["mc_answer"])}
        return [plain(rid, row["question"], "open_ended", row["answer"], media, **meta)]
    question, options = split_embedded(row["question"])
    label = labelled_option(str(row["answer"]))  # caption matching answers with its option line ("Option 2: x")
    return [mc(rid, question, options, label[0] if label else row["answer"], media, **meta)]


# -- official scorer ---------------------------------------------------------------------------------------------------


TEMPCOMPASS_MULTI_CHOICE = (
    '\n'
    'You will receive a multi-choice question, the ground-truth answer and the prediction from a '
    'question answering (QA) model. Your task is to determine whether QA model prediction is '
    'correct, based on the question and ground-truth answer. If the prediction is correct, respond '
    '"Correct". If the prediction is incorrect, respond "Incorrect".\n'
)


TEMPCOMPASS_YES_NO = (
    '\n'
    'You will receive a Yes/No question, the ground-truth answer and the prediction from a question '
    'answering (QA) model. Your task is to determine whether QA model prediction is correct, based '
    'on the question and ground-truth answer. If the prediction is correct, respond "Correct". If '
    'the prediction is incorrect, respond "Incorrect".\n'
)


TEMPCOMPASS_CAPTION_MATCHING = (
    '\n'
    'You will receive a caption matching question, the ground-truth answer and the prediction from a '
    'question answering (QA) model. Your task is to determine whether QA model prediction is '
    'correct, based on the question and ground-truth answer. If the prediction is correct, respond '
    '"Correct". If the prediction is incorrect, respond "Incorrect".\n'
)


TEMPCOMPASS_CAPTIONING = (
    '\n'
    'You will receive a video description and a multi-choice question. Your task is to choose the correct '
    'answer and briefly explain the reason why you choose the answer. If none of the choice candidates are '
    'correct or the video description lacks enough information to answer the question, just answer "None '
    'of the choices are correct". Please organize your response in this format:\n'
    '```\n'
    'Reasoning: [Your reason to obtain the answer]\n'
    'Answer: [Your answer]\n'
    '```\n'
    '\n'
    'Here are some examples of video description, multi-choice question and the expected answer:\n'
    '```\n'
    'Video Description: A person is palying football.\n'
    'Multi-Choice Question:\n'
    'What is the person doing in the video?\n'
    'A. cooking\n'
    'B. palying football\n'
    'C. playing basketball\n'
    'D. reading book\n'
    'Reasoning: The video description mentions that the person is playing football.\n'
    'Answer: B. palying football\n'
    '\n'
    'Video Description: A bird is flying clockwise.\n'
    'Multi-Choice Question:\n'
    'In which direction is the bird flying?\n'
    'A. backwark\n'
    'B. counter-clockwise\n'
    'C. clockwise\n'
    'D. downward\n'
    'Reasoning: The video description mentions that the bird is flying clockwise\n'
    'Answer: C. clockwise\n'
    '\n'
    'Video Description: An air balloon is inflating.\n'
    'Multi-Choice Question:\n'
    'What is happening to the air balloon?\n'
    'A. exploding\n'
    'B. getting smaller\n'
    'C. flying\n'
    'Reasoning: The video description mentions that the air balloon is inflating, while none of the coices '
    'can be explained as inflating.\n'
    'Answer: None of the choices are correct\n'
    '```\n'
)


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


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """The stock prompt is the question as published: multi-choice "A. x" lines, caption matching its own
    "Caption A: x" / "Sentence A: x" / "Option 1: x" lines; from an EasyVideoR1 row they are rebuilt
    ("A. x", "Caption A: x"). Captioning needs the official row's `mc_question`/`mc_answer` (the judge's question)."""
    raw = official_fields(row)
    fmt = required(record, "format")
    doc = {"evr1_subset": fmt, "dim": required(record, "dimension"),
           "video_id": str(raw.get("video_id", video_stem(record))),
           "question": str(raw.get("question", record.problem)), "answer": str(raw.get("answer", record.answer))}
    if is_mc(record) and not raw:
        form = "Caption {letter}: {text}" if fmt == "caption_matching" else "{letter}. {text}"
        lines = lettered(option_texts(record), form)
        doc.update(question="\n".join([record.problem, *lines]), answer=lines[answer_index(record)])
    if fmt == "captioning":  # the stock judge answers this multiple-choice question from the caption
        missing = [k for k in ("mc_question", "mc_answer") if not raw.get(k)]
        if missing:
            raise ValueError(f"TempCompass captioning record {record.id} has no {' or '.join(missing)}: the stock judge"
                             " needs the official captioning row (an EasyVideoR1 row does not carry them)")
        doc.update(mc_question=str(raw["mc_question"]), mc_answer=str(raw["mc_answer"]))
    return doc


Aggregation = Callable[[Sequence[ItemRow]], float]
TEMPCOMPASS_DIMENSIONS = ("action", "speed", "direction", "order", "attribute_change")


def tempcompass_by_metric(item: ItemRow) -> dict[str, ItemRow]:
    """The item under `avg_accuracy` and every `<dimension>_accuracy`: each metric sees every item, so
    lmms-eval's task size (the item count of the last metric) is right and the group mean is weighted by it."""
    return {"avg_accuracy": item, **{f"{d}_accuracy": item for d in TEMPCOMPASS_DIMENSIONS}}


def tempcompass_process_results(doc: Doc, results: Sequence[Any]) -> dict[str, ItemRow]:
    """multi-choice, yes_no, caption_matching: the official item score (the matching rules, then the fallback judge
    when one is set: `tempcompass_item`); the stock aggregation reads `rating`."""
    item = scoring.official_row(item_row(doc, results))
    item["rating"] = int(item["score"] >= 1.0)
    return tempcompass_by_metric(item)


def judged(rows: Sequence[ItemRow]) -> Sequence[ItemRow]:
    """The rows, once no captioning judge failed (rating -1); else an Evr1Error naming the items.

    Raised at aggregation, not in `process_results`: lmms-eval retries a raising `process_results` 5
    times (tenacity), paying for the judge calls again and hiding the error in a RetryError."""
    failed = [r["id"] for r in rows if r.get("rating") == -1]
    if failed:
        raise Evr1Error(f"TempCompass captioning: the LLM judge gave no answer for {len(failed)} item(s) ({', '.join(failed[:5])});"
                        " check OPENAI_API_URL / OPENAI_API_KEY and run again")
    return rows


def dimension_metric(dimension: str) -> Aggregation:
    """An aggregation giving the accuracy over the items of one dimension (NaN when the task has none)."""

    def metric(rows: Sequence[ItemRow]) -> float:
        chosen = [r for r in judged(rows) if r["meta"].get("dimension") == dimension]
        return percent(chosen) if chosen else float("nan")

    metric.__name__ = metric.__qualname__ = f"tempcompass_{dimension}"
    return metric


# Module attributes: the templates name them (`!function evr1.eval.benchmarks.tempcompass.tempcompass_<dimension>`).
tempcompass_action = dimension_metric("action")
tempcompass_speed = dimension_metric("speed")
tempcompass_direction = dimension_metric("direction")
tempcompass_order = dimension_metric("order")
tempcompass_attribute_change = dimension_metric("attribute_change")


def tempcompass_captioning_accuracy(rows: Sequence[ItemRow]) -> float:
    """The share of captions the judge rated right, once no judging failed."""
    return percent(judged(rows))


def tempcompass_doc_to_text_captioning(doc: Doc, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The stock prompt; without the stock judge's key this fails here, before generation."""
    from lmms_eval.tasks.tempcompass import utils as stock

    if os.getenv("API_TYPE", "openai") == "openai" and not os.getenv("OPENAI_API_KEY"):
        raise ConfigError(f"TempCompass captioning item {doc.get('evr1_id')!r} needs the stock LLM judge: set OPENAI_API_KEY (and OPENAI_API_URL)")
    return stock.tempcompass_doc_to_text_captioning(doc, lmms_eval_specific_kwargs)


def tempcompass_process_results_captioning(doc: Doc, results: Sequence[Any]) -> dict[str, ItemRow]:
    """captioning: the stock judge (gpt-3.5 at OPENAI_API_URL) rates the caption; an empty one is wrong
    unjudged; a judge failure (rating -1) is kept and raised by the aggregations (`judged`)."""
    from lmms_eval.tasks.tempcompass import utils as stock

    item: ItemRow = {"id": doc["evr1_id"], "response": response_of(results), "rating": 0, "meta": doc["evr1_record"]["meta"]}
    if item["response"].strip():
        judged_item = stock.tempcompass_process_results_captioning(doc, [item["response"]])["avg_accuracy"]
        item = {**judged_item, **item, "rating": judged_item["rating"]}
    return tempcompass_by_metric({**item, "score": float(item["rating"] == 1)})


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {
    "questions/multi-choice.json": [
        {"video_id": "t1", "dim": "direction", "question": "Which way does it move?\nA. left\nB. right\nC. up", "answer": "B. right"},
        {"video_id": "t1", "dim": "speed", "question": "How fast?\nA. slow\nB. fast", "answer": "A. slow"},
    ],
    "questions/yes_no.json": [
        {"video_id": "t1", "dim": "direction", "question": "Does it move right?", "answer": "yes"},
        {"video_id": "t1", "dim": "speed", "question": "Is it fast?", "answer": "no"},
    ],
    "questions/caption_matching.json": [
        {"video_id": "t1", "dim": "order", "answer": "Caption A: first red then blue",
         "question": "Which caption matches the video better?\nCaption A: first red then blue\nCaption B: first blue then red"},
    ],
}


BENCHMARK = Benchmark(
    name="tempcompass",
    title="TempCompass",
    folder="tempcompass",
    annotations=("questions",),
    media_dir="videos",
    question_types=(PT.MULTIPLE_CHOICE, PT.BOOLEAN, PT.OPEN_ENDED),
    metric="accuracy over all items (captions judged correct or incorrect), by format and dimension",
    aggregate=agg.accuracy("format", "dimension"),
    importer=tempcompass,
    routes=JUDGE,
    lmms_task="tempcompass",
    official=TEMPCOMPASS,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
