"""MMVU's official judge step (`evr1.eval.official_judge`): the official prompt and request, its verdict parsing,
and the official block of a run against the local stub endpoint, a failed judge and its resume included."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_server import Judge

from evr1.data.records import Record
from evr1.errors import ConfigError
from evr1.eval.api import evaluate
from evr1.eval.official_judge import (
    MMVU_MULTI_CHOICE,
    MMVU_OPEN_ENDED,
    VIDEOREASON_PROMPT,
    mmvu_messages,
    mmvu_verdict,
    videoreason_final_answer,
    videoreason_judge,
)
from evr1.eval.official_rules import videoreason_item
from evr1.eval.responders import ScriptedResponder
from evr1.specs import EvalSpec, JudgeSpec

from .verdict_judge import running_verdict_judge, verdict_requests

RIGHT, WRONG = '{"extracted_answer": "B", "correct": true}', '{"extracted_answer": "fire", "correct": false}'


def test_mmvu_messages_are_the_official_wording() -> None:
    mc = Record(id="m", problem="Which law?", problem_type="multiple_choice", answer="B", options=["Ohm", "Newton"])
    system, user = mmvu_messages(mc, "<think>hm</think>It is B")
    assert system == MMVU_MULTI_CHOICE and system.startswith("Evaluate whether the model's final answer is correct")
    assert user == ("Question: Which law?\n\nOptions:\nA: Ohm\nB: Newton\n\nGround Truth Answer: B\n\n"
                    "Model Response to the Question: <think>hm</think>It is B")  # the whole response is judged
    open_ = Record(id="o", problem="What reaction?", problem_type="open_ended", answer="combustion")
    system, user = mmvu_messages(open_, "")
    assert system == MMVU_OPEN_ENDED and "exact same technique or concept" in system
    assert user == "Question: What reaction?\n\nGround Truth Answer: combustion\n\nModel Response to the Question: "


@pytest.mark.parametrize(("reply", "verdict"), [
    (RIGHT, {"extracted_answer": "B", "correct": True}),
    (WRONG, {"extracted_answer": "fire", "correct": False}),
    ('{"extracted_answer": "B", "correct": "true"}', {"extracted_answer": "B", "correct": True}),  # pydantic's lax bool
    ('{"correct": true}', {"extracted_answer": "", "correct": False}),  # a field missing: no output
    ('Sure: {"extracted_answer": "B", "correct": true}', {"extracted_answer": "", "correct": False}),  # extra text
    ("correct", {"extracted_answer": "", "correct": False}), ("", {"extracted_answer": "", "correct": False}),
    ('{"extracted_answer": "B", "correct": "maybe"}', {"extracted_answer": "", "correct": False}),  # a hedge
])
def test_mmvu_verdict_parsing(reply: str, verdict: dict) -> None:
    assert mmvu_verdict(reply) == verdict


def test_mmvu_official_block_judges_every_item(bench_root: Path, tmp_path: Path) -> None:
    answers = {"mmvu/mu1": "The answer is B", "mmvu/mu2": "combustion"}
    with running_verdict_judge({"The answer is B": RIGHT, "combustion": WRONG}) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"))
        got = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]
    official, strict = got["mmvu"]["protocols"]["official"], got["mmvu"]["protocols"]["strict"]
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 0)
    assert official["breakdowns"]["question_kind"] == {"multiple-choice": {"score": 100.0, "n": 1},
                                                       "open-ended": {"score": 0.0, "n": 1}}
    # strict: mu1 read locally (B, right); evr1's verdict prompt gets the JSON reply, which holds no verdict: failed
    assert (strict["score"], strict["failed"]) == (50.0, 1)
    requests = [b for b in judge.requests if b not in verdict_requests(judge)]
    assert len(requests) == 2
    body = next(b for b in requests if "Options:" in b["messages"][1]["content"])
    assert body["messages"][0]["content"] == MMVU_MULTI_CHOICE
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (128, 1.0, 1.0)
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["extracted_answer", "correct"]


def test_an_unreachable_official_judge_scores_0_and_is_asked_again_on_resume(bench_root: Path, tmp_path: Path,
                                                                              judge: Judge) -> None:
    judge.reply, judge.fail_first = RIGHT, 3  # down for the first run's three requests (evr1's one, the official two)
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j", retries=0))
    answers = {"mmvu/mu1": "B", "mmvu/mu2": "combustion"}
    first = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]
    assert first["mmvu"]["protocols"]["official"]["score"] == 0.0  # no judge output: incorrect, as the official script
    assert first["mmvu"]["protocols"]["strict"]["score"] == 50.0  # mu1 read locally; mu2's verdict failed
    again = ScriptedResponder(answers)
    second = evaluate(spec, again, tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]["mmvu"]
    assert again.asked == []  # judged again on the stored responses
    assert second["protocols"]["official"]["score"] == 100.0 and len(judge.requests) == 3 + 3


# -- VideoReasonBench: the text after "Final Answer", judged "Correct" exactly ----------------------------------------


@pytest.mark.parametrize(("response", "final"), [
    ("so... Final Answer: 2", ": 2"), ("Final Answer\n 2 \n", "2"), ("Final Answer: 1\nFinal Answer: 3", ": 1\nFinal Answer: 3"),
    ("The answer is 2", ""), ("final answer: 2", ""),  # "Final Answer" is required, capitalised
    ("Final Answer: 9 ◁/think▷ Final Answer: 2", ": 2"),  # the part after Kimi's think end
    ("Final Answer", ""), ("", ""),
])
def test_videoreason_final_answer(response: str, final: str) -> None:
    assert videoreason_final_answer(response) == final


def test_videoreasonbench_official_block(bench_root: Path, tmp_path: Path) -> None:
    order, compare = "videoreasonbench/cup_state1_op5_order_operation_start", "videoreasonbench/cup_state1_op5_comparison_state_start"
    answers = {order: "Swaps.\nFinal Answer: (a1, b2), (c2, b1), (a3, c1)", compare: "Final Answer: 2"}
    replies = {": (a1, b2), (c2, b1), (a3, c1)": "Correct", ": 2": "Correct."}  # not exactly "Correct": incorrect
    with running_verdict_judge(replies) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"))
        got = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["videoreasonbench"],
                       data_root=bench_root)["benchmarks"]["videoreasonbench"]
    assert got["protocols"]["official"]["score"] == 50.0 and got["protocols"]["official"]["n"] == 2
    official = [b for b in judge.requests if b not in verdict_requests(judge)]
    assert len(official) == 2 and all(len(b["messages"]) == 1 for b in official)  # one user message, no system
    body = next(b for b in official if ": 2" in b["messages"][0]["content"])
    assert body["messages"][0]["content"] == VIDEOREASON_PROMPT.format(
        question="How many coins differ from the start?", response=": 2", ground_truth="2")
    assert (body["temperature"], body["max_tokens"]) == (0.0, 16)


def test_videoreason_predict_operation_needs_a_final_answer(judge: Judge) -> None:
    """Predict Operation: no "Final Answer" is incorrect, as `evaluate_operation` returns False, the judge unasked (the
    simulation of a final answer: tests/eval/test_official_videoreason.py); a row with no official verdict keeps
    evr1's judged score."""
    record = Record(id="p", problem="Which moves restore the board?", problem_type="open_ended", answer="left, up",
                    meta={"category": "Predict Operation"})
    spec = JudgeSpec(base_url=judge.url, model="j")
    assert videoreason_judge(record, "left then up", spec) == {"final_answer": "", "correct": False}
    assert judge.requests == []
    rows = [{"response": "left then up", "score": 1.0, "official": {"final_answer": "", "correct": False}},
            {"response": "Final Answer: left, up", "score": 1.0, "official": {}}]
    assert [videoreason_item(r) for r in rows] == [0.0, 1.0]


def test_a_strict_headline_runs_mmvu_multiple_choice_without_a_judge(bench_root: Path, tmp_path: Path) -> None:
    """MMVU's official scorer judges every answer: with no judge set, a strict run still scores the multiple-choice
    items with evr1's reader, and the official block says it is unavailable; an official headline is refused."""
    answers = {"mmvu/mu1": "The answer is B"}
    spec = EvalSpec(protocol="strict", limit=1)  # mu1, the multiple-choice item
    got = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]
    strict, official = got["mmvu"]["protocols"]["strict"], got["mmvu"]["protocols"]["official"]
    assert (got["mmvu"]["score"], strict["n"]) == (100.0, 1)
    assert official["score"] is None and official["metrics"] == {} and "no judge was set" in official["unavailable"]
    assert "| MMVU | strict | - | 100.00 |" in (tmp_path / "results.md").read_text()
    with pytest.raises(ConfigError, match="--protocol strict"):
        evaluate(EvalSpec(limit=1), ScriptedResponder(answers), tmp_path / "o", benchmarks=["mmvu"], data_root=bench_root)
