"""TempCompass.

TempCompass's official scoring (`evr1.eval.benchmarks.tempcompass`): the matching rules of its eval scripts worked by
hand (multi-choice, yes/no, caption matching), the ChatGPT fallback for an unmatched answer against the local stub
endpoint (prompt, request, verdict parsing, asking again), and 0 without a judge (--disable_llm).

TempCompass captioning's official scoring (`evr1.eval.benchmarks.tempcompass`, from `eval_captioning.py` and
`utils/eval_utils.py` `print_result`): the judge answers the video's first multi-choice question from the caption,
its reply read by the official rules (worked by hand), -1 for a failed request, and the tables `print_result` prints
(by dimension and by fine-grained aspect from `meta_info.json`, per format); annotations as released.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judge_server import Judge

from evr1.data.records import Record, RecordError
from evr1.eval.api import evaluate
from evr1.eval.benchmarks.tempcompass import (
    TEMPCOMPASS_CAPTION_MATCHING,
    TEMPCOMPASS_CAPTIONING,
    TEMPCOMPASS_TRIES,
    caption_rating,
    fallback_rating,
    tempcompass_item,
    tempcompass_judge,
    tempcompass_released,
    tempcompass_rule,
)
from evr1.eval.judging import official_judged
from evr1.eval.protocols import block
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from ..rows import sample_row

MC_Q, MC_A = "How fast?\nA. slow\nB. fast\nC. still", "B. fast"


CM_Q = "Which caption matches the video better?\nCaption A: A man runs.\nCaption B: A man walks."


OPT_Q, OPT_A = "Which description fits?\nOption 1: A man runs.\nOption 2: A man walks.", "Option 2: A man walks."


@pytest.mark.parametrize(("fmt", "prediction", "question", "answer", "rating"), [
    ("multi-choice", "B. fast", MC_Q, MC_A, 1), ("multi-choice", "B", MC_Q, MC_A, 1), ("multi-choice", "A", MC_Q, MC_A, 0),
    ("multi-choice", "B) fast", MC_Q, MC_A, 1), ("multi-choice", "C.", MC_Q, MC_A, 0),
    ("multi-choice", "b", MC_Q, MC_A, None), ("multi-choice", "The answer is B", MC_Q, MC_A, None),
    ("multi-choice", "(B) fast", MC_Q, MC_A, None), ("multi-choice", "fast", MC_Q, MC_A, None),
    ("multi-choice", "E.", MC_Q, MC_A, None),  # only A-D are letters to it
    ("yes_no", "Yes, it does.", "Is it?", "yes", 1), ("yes_no", "no", "Is it?", "yes", 0),
    ("yes_no", "Nothing moves", "Is it?", "no", 1),  # "no..." reads no
    ("yes_no", "I think yes", "Is it?", "yes", None),
    ("caption_matching", "Caption A: A man runs.", CM_Q, "Caption A: A man runs.", 1),  # the line
    ("caption_matching", "A man walks.", CM_Q, "Caption A: A man runs.", 0),  # a sentence
    ("caption_matching", "(A) A man runs.", CM_Q, "Caption A: A man runs.", 1),  # the sentence after ") "
    ("caption_matching", "Caption B", CM_Q, "Caption A: A man runs.", 0), ("caption_matching", "A", CM_Q,
                                                                            "Caption A: A man runs.", 1),
    ("caption_matching", "A.", CM_Q, "Caption A: A man runs.", 1),  # "." removed from a label
    ("caption_matching", "2", OPT_Q, OPT_A, 1), ("caption_matching", "Option 1", OPT_Q, OPT_A, 0),
    ("caption_matching", "Caption A is right", CM_Q, "Caption A: A man runs.", None),
    ("caption_matching", "a man runs.", CM_Q, "Caption A: A man runs.", None),  # case matters
])
def test_matching_rules(fmt: str, prediction: str, question: str, answer: str, rating: int | None) -> None:
    assert tempcompass_rule(fmt, prediction, question, answer) == rating


@pytest.mark.parametrize(("reply", "rating"), [
    ("Correct", 1), ("Incorrect.", 0), ("  Correct, the prediction matches", 1), ("The prediction is Correct.", 1),
    ("The prediction is Incorrect.", 0), ("Correct or Incorrect? Incorrect", 1),  # starts "Correct"
    ("Not Correct, rather Incorrect", 0), ("correct", None), ("INCORRECT", None), ("", None),
])
def test_fallback_rating(reply: str, rating: int | None) -> None:
    assert fallback_rating(reply) == rating


def test_released_question_rebuilt_without_meta() -> None:
    assert tempcompass_released("multi-choice", {}, ["slow", "fast"], "B", "How fast?") == (
        "How fast?\nA. slow\nB. fast", "B. fast")
    assert tempcompass_released("caption_matching", {}, ["runs", "walks"], "A", "Which?") == (
        "Which?\nCaption A: runs\nCaption B: walks", "Caption A: runs")


def _row(fmt: str, response: str | None, question: str, answer: str, official: dict | None = None) -> dict[str, Any]:
    meta = {"format": fmt, "dimension": "speed", "released_question": question, "released_answer": answer}
    return {"id": "t", "problem_type": "multiple_choice", "response": response, "answer": answer[:1], "score": 0.0,
            "error": None, "parsed": response, "options": None, "meta": meta,
            **({"official": official} if official is not None else {})}


def test_official_block_rules_fallback_and_match_rate() -> None:
    rows = [_row("multi-choice", "B</s> ", MC_Q, MC_A),  # "</s>" removed, stripped: "B", right
            _row("multi-choice", "The answer is B", MC_Q, MC_A, {"matched": False, "reply": "Correct", "rating": 1}),
            _row("multi-choice", "fast", MC_Q, MC_A),  # unmatched, no judge (--disable_llm): 0
            _row("yes_no", None, "Is it?", "yes")]  # a failed generation: 0, unmatched
    got = block(BENCHMARKS.get("tempcompass"), rows, "official")
    assert (got["score"], got["n"], got["metrics"]["match_success_rate"]) == (50.0, 4, 25.0)
    assert got["breakdowns"]["format"] == {"multi-choice": {"score": pytest.approx(200 / 3), "n": 3},
                                           "yes_no": {"score": 0.0, "n": 1}}


def test_fallback_asks_the_official_prompt_until_a_verdict(judge: Judge) -> None:
    record = Record(id="c", problem="Which caption matches the video better?", problem_type="multiple_choice",
                    answer="A", options=["A man runs.", "A man walks."],
                    meta={"format": "caption_matching", "released_question": CM_Q,
                          "released_answer": "Caption A: A man runs."})
    spec = JudgeSpec(base_url=judge.url, model="j")
    judge.reply = "maybe"  # no verdict: asked again, 11 times in all, then rated 0
    assert tempcompass_judge(record, "the first one", spec) == {"matched": False, "reply": "maybe", "rating": 0}
    assert len(judge.requests) == TEMPCOMPASS_TRIES
    body = judge.requests[0]
    assert body["messages"] == [
        {"role": "system", "content": "You are an AI assistant for question answering."},
        {"role": "user", "content": f"{TEMPCOMPASS_CAPTION_MATCHING}\nCaption Matching Question:\n{CM_Q}\n"
                                    "Ground-Truth Answer: Caption A: A man runs.\nModel Prediction: the first one"}]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["presence_penalty"]) == (128, 1.0, 1, 1)
    judge.reply = " Correct \n"
    assert tempcompass_judge(record, "the first one", spec)["rating"] == 1
    assert tempcompass_judge(record, "Caption A", spec) == {"matched": True, "rating": 1}  # no request
    assert len(judge.requests) == TEMPCOMPASS_TRIES + 1


def test_runs_without_a_judge_and_asks_one_when_set(tmp_path: Path, judge: Judge) -> None:
    folder = tmp_path / "tempcompass" / "questions"
    folder.mkdir(parents=True)
    (folder / "multi-choice.json").write_text(json.dumps({"v1": {"speed": [{"question": MC_Q, "answer": MC_A}]}}))
    (folder / "yes_no.json").write_text(json.dumps({"v1": {"speed": [{"question": "Is it fast?", "answer": "yes"}]}}))
    answers = {"tempcompass/multi-choice/v1/speed_0": "It is fast", "tempcompass/yes_no/v1/speed_0": "yes"}
    alone = evaluate(EvalSpec(), ScriptedResponder(answers), tmp_path / "a", benchmarks=["tempcompass"],
                     data_root=tmp_path)["benchmarks"]["tempcompass"]
    assert alone["protocols"]["official"]["score"] == 50.0  # "It is fast" unmatched: 0 (--disable_llm)
    judge.reply = "Correct"
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j"))
    judged = evaluate(spec, ScriptedResponder(answers), tmp_path / "b", benchmarks=["tempcompass"],
                      data_root=tmp_path)["benchmarks"]["tempcompass"]
    assert judged["protocols"]["official"]["score"] == 100.0 and len(judge.requests) == 1  # only the unmatched one


MC_A = "B. fast"


@pytest.mark.parametrize(("reply", "answer", "rating"), [
    ("Reasoning: it says fast.\nAnswer: B. fast", "B. fast", 1),
    ("Answer:B. fast", "B. fast", 1),
    ("B. fast", "B. fast", 1),  # no "Answer" line: the whole reply
    ("Answer: B", "B", 0),  # "B" before ". " is right, but it holds none of "A." to "D."
    ("Answer: B. fast or C. still", "B. fast or C. still", 0),  # two of them
    ("Answer: A. slow", "A. slow", 0),
    ("Reasoning: r\nAnswer: None of the choices are correct", "None of the choices are correct", 0),
    ("Answer: b. fast", "b. fast", 0),  # case kept
    ("Answer: A. slow\nFinal Answer: B. fast", "Final  B. fast", 0),  # the last line holding "Answer" wins
    ("Reasoning: the Answer is plain\nB. fast", "Reasoning: the Answer is plain", 0),  # a reasoning line holding it
    ("Answer: B. fast.\nReasoning: A. is wrong", "B. fast.", 1),  # only the answer's marks are counted
    ("", None, -1), ("invalid_request_error", None, -1),
])
def test_caption_rating(reply: str, answer: str | None, rating: int) -> None:
    assert caption_rating(reply, MC_A) == {"answer": answer, "rating": rating}


MC_Q = "How fast is the man?\nA. slow\nB. fast\nC. still"


RECORD = Record(id="tempcompass/captioning/v1/speed_0", problem="Describe it.", problem_type="open_ended",
                answer="A man runs fast.", meta={"format": "captioning", "dimension": "speed", "mc_question": MC_Q,
                                                 "mc_answer": MC_A})


def test_the_official_prompt_and_request(judge: Judge) -> None:
    judge.reply = " Reasoning: the caption says he runs fast.\nAnswer: B. fast \n"
    got = tempcompass_judge(RECORD, " A man runs fast.</s>", JudgeSpec(base_url=judge.url, model="j"))
    assert got == {"reply": "Reasoning: the caption says he runs fast.\nAnswer: B. fast", "answer": MC_A, "rating": 1}
    [body] = judge.requests
    assert body["messages"] == [
        {"role": "system", "content": "You are an AI assistant for question answering."},
        {"role": "user", "content": f"{TEMPCOMPASS_CAPTIONING}\nVideo Description:A man runs fast.\n"
                                    f"Multi-Choice Question:\n{MC_Q}\n"}]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["presence_penalty"]) == (128, 1.0, 1, 1)
    unlinked = RECORD.model_copy(update={"meta": {"format": "captioning"}})  # no multi-choice question: not asked
    assert tempcompass_judge(unlinked, "A man runs.", JudgeSpec(base_url=judge.url, model="j")) == {}
    assert len(judge.requests) == 1


def test_an_unreachable_judge_is_a_failed_request(judge: Judge) -> None:
    judge.fail_first = 1
    [got] = official_judged(BENCHMARKS.get("tempcompass"), [RECORD], ["A man runs."],
                            JudgeSpec(base_url=judge.url, model="j", retries=0))
    assert set(got) == {"error"}  # rated -1 by the item rule, asked again on a resume
    assert tempcompass_item(_captioning_row("captioning", got))["score"] == -1.0


def _captioning_row(fmt: str, official: dict | None, response: str | None = "x", score: float = 0.5, **meta: Any) -> dict:
    question, answer = (MC_Q, MC_A) if fmt == "multi-choice" else ("Describe it.", "A man runs fast.")
    return {"id": "t", "problem_type": "open_ended", "response": response, "answer": answer, "score": score,
            "error": None, "parsed": response, "options": None, "components": {},
            "meta": {"format": fmt, "dimension": "speed", "released_question": question, "released_answer": answer,
                     **meta}, **({"official": official} if official is not None else {})}


@pytest.mark.parametrize(("official", "response", "score"), [
    ({"reply": "Answer: B. fast", "answer": MC_A, "rating": 1}, "x", 1.0),
    ({"reply": "Answer: A. slow", "answer": "A. slow", "rating": 0}, "x", 0.0),
    ({"reply": "", "answer": None, "rating": -1}, "x", -1.0),  # an empty reply
    ({"error": "official judge: down"}, "x", -1.0),  # a failed request: the script's -1 (asked again on a resume)
    ({}, "x", 0.5), (None, "x", 0.5),  # no captioning judgement (an EasyVideoR1 row, an earlier row): evr1's score
    (None, None, 0.0),  # a failed generation
])
def test_captioning_item(official: dict | None, response: str | None, score: float) -> None:
    assert tempcompass_item(_captioning_row("captioning", official, response))["score"] == score


def test_a_failed_request_lowers_the_sum_and_each_format_prints_its_tables() -> None:
    rows = [_captioning_row("captioning", {"rating": 1}, fine_aspect="absolute speed"),
            _captioning_row("captioning", {"error": "official judge: down"}, fine_aspect="absolute speed"),
            _captioning_row("captioning", {"rating": 0}, fine_aspect="relative speed"),
            _captioning_row("multi-choice", None, response="B", fine_aspect="relative speed")]  # matched: right
    got = block(BENCHMARKS.get("tempcompass"), rows, "official")
    assert (got["score"], got["n"]) == (25.0, 4)  # (1 - 1 + 0 + 1) / 4, as print_result sums the ratings
    assert got["breakdowns"]["format"] == {"captioning": {"score": 0.0, "n": 3}, "multi-choice": {"score": 100.0, "n": 1}}
    assert got["breakdowns"]["captioning fine_aspect"] == {"absolute speed": {"score": 0.0, "n": 2},
                                                           "relative speed": {"score": 0.0, "n": 1}}
    assert got["breakdowns"]["multi-choice dimension"] == {"speed": {"score": 100.0, "n": 1}}
    assert got["breakdowns"]["fine_aspect"]["relative speed"] == {"score": 50.0, "n": 2}
    assert (got["metrics"]["captioning match_success_rate"], got["metrics"]["multi-choice match_success_rate"],
            got["metrics"]["match_success_rate"]) == (0.0, 100.0, 100.0)  # captioning stays out of the pooled rate


def _release(root: Path, meta_info: dict | None = None, multi_choice: bool = True) -> Path:
    questions = root / "tempcompass" / "questions"
    questions.mkdir(parents=True)
    mc = {"v1": {"speed": [{"question": MC_Q, "answer": MC_A}, {"question": "Second?\nA. x\nB. y", "answer": "A. x"}],
                 "order": [{"question": "First?\nA. sit\nB. run", "answer": "A. sit"}]}}
    if multi_choice:
        (questions / "multi-choice.json").write_text(json.dumps(mc))
    captions = {"v1": {"speed": [{"question": "Caption the video's speed.", "answer": "A man runs fast."}],
                       "order": [{"question": "Caption the order.", "answer": "He sits, then runs."}]}}
    (questions / "captioning.json").write_text(json.dumps(captions))
    if meta_info is not None:
        (root / "tempcompass" / "meta_info.json").write_text(json.dumps(meta_info))
    return root


META_INFO = {"v1": {"eval_dim": {"speed": {"subject": "man", "type": "absolute speed"}, "order": None,
                                 "action": None, "direction": None, "attribute_change": None}}}


def test_released_files_load_with_the_first_multi_choice_question_and_aspect(tmp_path: Path) -> None:
    records = {r.id: r for r in BENCHMARKS.get("tempcompass").load(_release(tmp_path, META_INFO))}
    speed, order = records["tempcompass/captioning/v1/speed_0"], records["tempcompass/captioning/v1/order_0"]
    assert (speed.meta["mc_question"], speed.meta["mc_answer"], speed.meta["fine_aspect"]) == (MC_Q, MC_A,
                                                                                               "absolute speed")
    assert (order.meta["mc_answer"], order.meta["fine_aspect"]) == ("A. sit", "order")  # order: no meta_info lookup
    assert records["tempcompass/multi-choice/v1/speed_1"].meta["fine_aspect"] == "absolute speed"


def test_without_meta_info_there_is_no_aspect(tmp_path: Path) -> None:
    records = BENCHMARKS.get("tempcompass").load(_release(tmp_path))
    assert {r.meta.get("fine_aspect") for r in records if r.meta["dimension"] == "speed"} == {None}


@pytest.mark.parametrize(("meta_info", "multi_choice", "message"), [
    (None, False, "needs multi-choice.json beside captioning.json"),
    ({"v2": META_INFO["v1"]}, True, "no eval_dim.speed.type for video 'v1'"),
])
def test_missing_side_files_name_what_is_missing(tmp_path: Path, meta_info: dict | None, multi_choice: bool,
                                                 message: str) -> None:
    with pytest.raises(RecordError, match=message):
        BENCHMARKS.get("tempcompass").load(_release(tmp_path, meta_info, multi_choice))


def test_captioning_through_evaluate(tmp_path: Path, judge: Judge) -> None:
    """multi-choice v1 speed_0 "B" matched right, speed_1 "B" wrong, order_0 "A" right; captioning: both judged, the
    reply "B. fast" right for speed (its first question's answer), wrong for order ("A. sit": only the letter is
    compared): (1 + 0 + 1 + 1 + 0) / 5."""
    root = _release(tmp_path / "data", META_INFO)
    judge.reply = "Reasoning: fast.\nAnswer: B. fast"
    answers = {"tempcompass/multi-choice/v1/speed_0": "B", "tempcompass/multi-choice/v1/speed_1": "B",
               "tempcompass/multi-choice/v1/order_0": "A", "tempcompass/captioning/v1/speed_0": "A man runs fast.",
               "tempcompass/captioning/v1/order_0": "He runs."}
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j"))
    got = evaluate(spec, ScriptedResponder(answers), tmp_path / "run", benchmarks=["tempcompass"],
                   data_root=root)["benchmarks"]["tempcompass"]["protocols"]["official"]
    assert (got["score"], got["n"]) == (60.0, 5)
    assert got["breakdowns"]["captioning dimension"] == {"order": {"score": 0.0, "n": 1}, "speed": {"score": 100.0, "n": 1}}
    assert got["breakdowns"]["multi-choice fine_aspect"] == {"absolute speed": {"score": 50.0, "n": 2},
                                                             "order": {"score": 100.0, "n": 1}}
    official = [b for b in judge.requests if b["messages"][-1]["content"].startswith(TEMPCOMPASS_CAPTIONING)]
    assert len(official) == 2  # the captions only: the multi-choice answers were read by the rules


@pytest.mark.parametrize(("fmt", "answer", "response", "score"), [
    ("multi-choice", "B", "B. fast", 1.0), ("multi-choice", "B", "A. slow", 0.0),
    ("multi-choice", "B", "The answer is B", 0.0),  # unmatched, no judge verdict: 0
    ("multi-choice", "B", " B</s>", 1.0),  # "</s>" removed, then stripped
    ("multi-choice", "B", None, 0.0), ("yes_no", "no", "no</s>", 1.0), ("yes_no", "no", "Nope", 1.0),
])
def test_tempcompass_matching_rules(fmt: str, answer: str, response: str | None, score: float) -> None:
    got = tempcompass_item({**sample_row(answer, response, format=fmt), "options": ["slow", "fast"]})
    assert got["score"] == score


def test_tempcompass_captioning_without_its_judgement_keeps_evr1s_score() -> None:
    assert tempcompass_item(sample_row("A man runs.", "A man runs", 1.0, "open_ended", format="captioning")) == {
        "score": 1.0}


def test_tempcompass_nested_questions_files(tmp_path: Path) -> None:
    folder = tmp_path / "tempcompass" / "questions"
    folder.mkdir(parents=True)
    mc = {"v1": {"speed": [{"question": "How fast?\nA. slow\nB. fast", "answer": "B. fast"}],
                 "direction": [{"question": "Where to?\nA. left\nB. right", "answer": "A. left"},
                               {"question": "From where?\nA. up\nB. down", "answer": "B. down"}]}}
    yes_no = {"v2": {"order": [{"question": "Is it first?", "answer": "yes"}]}}
    (folder / "multi-choice.json").write_text(json.dumps(mc))
    (folder / "yes_no.json").write_text(json.dumps(yes_no))
    records = {r.id: r for r in BENCHMARKS.get("tempcompass").load(tmp_path)}
    assert sorted(records) == ["tempcompass/multi-choice/v1/direction_0", "tempcompass/multi-choice/v1/direction_1",
                               "tempcompass/multi-choice/v1/speed_0", "tempcompass/yes_no/v2/order_0"]
    speed = records["tempcompass/multi-choice/v1/speed_0"]
    assert (speed.answer, speed.options, speed.meta["dimension"]) == ("B", ["slow", "fast"], "speed")
    assert records["tempcompass/yes_no/v2/order_0"].answer == "yes"

