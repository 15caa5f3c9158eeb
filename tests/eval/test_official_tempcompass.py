"""TempCompass's official scoring (`evr1.eval.official_formats`): the matching rules of its eval scripts worked by
hand (multi-choice, yes/no, caption matching), the ChatGPT fallback for an unmatched answer against the local stub
endpoint (prompt, request, verdict parsing, asking again), and 0 without a judge (--disable_llm)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judge_server import Judge

from evr1.data.records import Record
from evr1.eval import official_formats as formats
from evr1.eval.api import evaluate
from evr1.eval.official_prompts import TEMPCOMPASS_CAPTION_MATCHING
from evr1.eval.protocols import block
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

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
    assert formats.tempcompass_rule(fmt, prediction, question, answer) == rating


@pytest.mark.parametrize(("reply", "rating"), [
    ("Correct", 1), ("Incorrect.", 0), ("  Correct, the prediction matches", 1), ("The prediction is Correct.", 1),
    ("The prediction is Incorrect.", 0), ("Correct or Incorrect? Incorrect", 1),  # starts "Correct"
    ("Not Correct, rather Incorrect", 0), ("correct", None), ("INCORRECT", None), ("", None),
])
def test_fallback_rating(reply: str, rating: int | None) -> None:
    assert formats.fallback_rating(reply) == rating


def test_released_question_rebuilt_without_meta() -> None:
    assert formats.tempcompass_released("multi-choice", {}, ["slow", "fast"], "B", "How fast?") == (
        "How fast?\nA. slow\nB. fast", "B. fast")
    assert formats.tempcompass_released("caption_matching", {}, ["runs", "walks"], "A", "Which?") == (
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
    assert formats.tempcompass_judge(record, "the first one", spec) == {"matched": False, "reply": "maybe", "rating": 0}
    assert len(judge.requests) == formats.TEMPCOMPASS_TRIES
    body = judge.requests[0]
    assert body["messages"] == [
        {"role": "system", "content": "You are an AI assistant for question answering."},
        {"role": "user", "content": f"{TEMPCOMPASS_CAPTION_MATCHING}\nCaption Matching Question:\n{CM_Q}\n"
                                    "Ground-Truth Answer: Caption A: A man runs.\nModel Prediction: the first one"}]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["presence_penalty"]) == (128, 1.0, 1, 1)
    judge.reply = " Correct \n"
    assert formats.tempcompass_judge(record, "the first one", spec)["rating"] == 1
    assert formats.tempcompass_judge(record, "Caption A", spec) == {"matched": True, "rating": 1}  # no request
    assert len(judge.requests) == formats.TEMPCOMPASS_TRIES + 1


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
