"""VCR-Bench's official accuracy (`evr1.eval.official_vcrbench`): the judge's extraction of every answer, the geometric
checks of `match_answer` worked by hand, the scoring prompt's "1", the drop of an unextracted item and `cau_acc.py`'s
duration buckets; against the local stub endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_server import Judge

from evr1.data.records import Record
from evr1.eval.api import evaluate
from evr1.eval.official_prompts import (
    VCRBENCH_EXTRACTION,
    VCRBENCH_EXTRACTION_INPUT,
    VCRBENCH_SCORING,
    VCRBENCH_SCORING_INPUT,
)
from evr1.eval.official_vcrbench import duration_range, geometry_verdict, official_question, vcrbench_judge
from evr1.eval.protocols import block
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from .verdict_judge import running_verdict_judge


@pytest.mark.parametrize(("answer", "extracted", "verdict"), [
    ("[10, 20]", "[12, 20]", True),  # IoU 8 / 10 = 0.8 > 0.7
    ("[10, 20]", "[13, 20]", False),  # 0.7 is not above 0.7
    ("[10, 20]", "[20, 12]", False),  # as given: a reversed span overlaps nothing
    ("[10, 20]", "  [12, 20]", True),  # a Python literal: leading spaces are fine
    ("[10, 20]", "[0, 0]", False),  # disjoint: 0
    ("[10.5, 20]", "[12, 20.0]", True),  # floats: 8 / 9.5
    ("[10, 20]", "(12, 20)", None),  # a tuple is no interval: the judge scores it
    ("[10, 20]", "Z", None),  # no answer extracted: the judge scores it
    ("[0, 0, 10, 10]", "[0, 0, 10, 6]", True),  # 60 / (100 + 60 - 60) = 0.6 > 0.5
    ("[0, 0, 10, 10]", "[0, 0, 10, 5]", False),  # 0.5 is not above 0.5
    ("[0, 0, 10, 10]", "[0,0,10,6]", True),  # spaces inside do not matter
    ("[0, 0, 10, 10]", "[0, 0, 10.0, 6]", None),  # a float part: no box
    ("[0, 0, 10, 10]", " [0, 0, 10, 6]", None),  # it must start with "["
    ("[0, 0, 10, 10]", "[20, 20, 30, 30]", False),  # no overlap
    ("[0, 0, 0, 0]", "[0, 0, 0, 0]", False),  # a zero union raises in the official code: scored 0
    ("B", "B", None), ("Kitchen", "kitchen", None),
])
def test_geometry_verdict(answer: str, extracted: str, verdict: bool | None) -> None:
    assert geometry_verdict(answer, extracted) is verdict


def test_official_question_is_the_released_one() -> None:
    released = "What colour?A. red\nB. blue\n"
    mc = Record(id="m", problem="What colour?", problem_type="multiple_choice", answer="B", options=["red", "blue"],
                meta={"released_question": released})
    assert official_question(mc) == released
    assert official_question(mc.model_copy(update={"meta": {}})) == released  # rebuilt in the released form
    open_ = Record(id="o", problem="Where?", problem_type="open_ended", answer="Kitchen")
    assert official_question(open_) == "Where?"


@pytest.mark.parametrize(("seconds", "bucket"), [(0, "0-60"), (60, "0-60"), (61, "60-300"), (300, "60-300"),
                                                 (300.5, "300+"), (None, "0-60")])
def test_duration_buckets(seconds: float | None, bucket: str) -> None:
    assert duration_range(seconds) == bucket


def _row(official: dict | None, response: str | None = "x", duration: float = 30, kind: str = "open-ended") -> dict:
    meta = {"duration": duration, "category": "Video Plot Analysis", "question_kind": kind}
    return {"id": "r", "response": response, "score": 1.0, "error": None, "parsed": "x", "meta": meta,
            **({"official": official} if official is not None else {})}


def test_official_block_counts_drops_and_buckets() -> None:
    rows = [
        _row({"extracted": "B", "scoring": "1", "correct": True}, duration=30),
        _row({"extracted": "[1, 2]", "scoring": None, "correct": False}, duration=120),
        _row({"extracted": "C", "scoring": None, "correct": False, "error": "official judge: down"}, duration=400),
        _row({"error": "official judge: down"}),  # nothing extracted: dropped, as process_item's None
        _row(None, response=None, duration=200),  # a failed generation: wrong, counted
    ]
    got = block(BENCHMARKS.get("vcrbench"), rows, "official")
    assert (got["score"], got["n"], got["dropped"], got["failed"]) == (25.0, 4, 1, 0)
    assert got["breakdowns"]["duration"] == {"0-60": {"score": 100.0, "n": 1}, "60-300": {"score": 0.0, "n": 2},
                                             "300+": {"score": 0.0, "n": 1}}
    assert got["breakdowns"]["category"] == {"Video Plot Analysis": {"score": 25.0, "n": 4}}
    strict = block(BENCHMARKS.get("vcrbench"), rows, "strict")  # the strict block keeps evr1's scores
    assert (strict["n"], strict["dropped"]) == (5, 0)


def test_an_interval_is_scored_without_the_scoring_prompt(judge: Judge) -> None:
    record = Record(id="t", problem="When does it start?", problem_type="open_ended", answer="[10, 20]")
    judge.reply = "[12, 20]"
    got = vcrbench_judge(record, "From 12 s to 20 s.", JudgeSpec(base_url=judge.url, model="j"))
    assert got == {"extracted": "[12, 20]", "scoring": None, "correct": True}
    [body] = judge.requests  # one extraction request, no scoring one
    assert body["messages"] == [{"role": "user", "content": VCRBENCH_EXTRACTION + VCRBENCH_EXTRACTION_INPUT.format(
        question="When does it start?", response="From 12 s to 20 s.")}]
    assert body["max_tokens"] == 2048


def test_official_block_against_the_stub_judge(bench_root: Path, tmp_path: Path) -> None:
    mc_response, open_response = "<think>blue?</think>It is B.", "It goes to the right."
    replies = {mc_response: "B", "B": "1",  # extraction, then scoring: right
               open_response: "moves right", "moves right": "1\n"}  # "1" exactly is right: "1\n" is not
    with running_verdict_judge(replies) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"))
        got = evaluate(spec, ScriptedResponder({"vcrbench/1": mc_response, "vcrbench/2": open_response}), tmp_path,
                       benchmarks=["vcrbench"], data_root=bench_root)["benchmarks"]["vcrbench"]
    official = got["protocols"]["official"]
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 0)
    assert official["breakdowns"]["duration"] == {"0-60": {"score": 50.0, "n": 2}}
    released = "What colour is the square?A. red\nB. blue\nC. green\nD. yellow\n"
    prompts = [b["messages"][0]["content"] for b in judge.requests if len(b["messages"]) == 1]
    assert VCRBENCH_EXTRACTION + VCRBENCH_EXTRACTION_INPUT.format(question=released, response=mc_response) in prompts
    assert VCRBENCH_SCORING + VCRBENCH_SCORING_INPUT.format(question=released, extract_answer="B", gt_answer="B") in prompts
