"""VCR-Bench.

VCR-Bench's official accuracy (`evr1.eval.benchmarks.vcrbench`): the judge's extraction of every answer, the geometric
checks of `match_answer` worked by hand, the scoring prompt's "1", the drop of an unextracted item and `cau_acc.py`'s
duration buckets; against the local stub endpoint.

VCR-Bench's official CoT score (`evr1.eval.benchmarks.vcrbench`: `eval.py` `recall` / `precision`, `cau_total.py`):
step lists read from the judge's ```json block, per-item recall and precision worked by hand, the means over the
items that have a value and F1 of the means, the drops (an empty precision list, an unfinished judgement) and the
requests against the local stub endpoint (prompts, order, asking again).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from judge_server import Judge, serving

from evr1.data.records import Record
from evr1.eval.api import evaluate
from evr1.eval.benchmarks.vcrbench import (
    COT_METRICS,
    COT_TRIES,
    PRECISION_JUDGMENTS,
    RECALL_JUDGMENTS,
    VCRBENCH_EXTRACTION,
    VCRBENCH_EXTRACTION_INPUT,
    VCRBENCH_PRECISION,
    VCRBENCH_RECALL,
    VCRBENCH_SCORING,
    VCRBENCH_SCORING_INPUT,
    duration_range,
    geometry_verdict,
    item_steps,
    official_question,
    step_counts,
    vcrbench_item,
    vcrbench_judge,
)
from evr1.eval.judging import official_judged
from evr1.eval.protocols import block
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from ..rows import easyvideor1_row, score_strict, write_files
from ..verdict_judge import running_verdict_judge


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


V, L, B = "Video Description Steps", "Logical Inference Steps", "Background Review Steps"


def steps(*pairs: tuple[str, str], text: str = "Here:\n") -> str:
    """A judge reply: `text`, then a ```json block listing (step_type, judgment) steps."""
    listed = [{"step": f"s{i}", "step_type": kind, "judgment": judgment} for i, (kind, judgment) in enumerate(pairs)]
    return f"{text}```json\n{json.dumps(listed, indent=2)}\n```"


def counts(judgments: Sequence[str], **found: dict[str, int]) -> dict[str, dict[str, int]]:
    """Step counts with every type and judgment listed (`found` by type initial: V, L, B)."""
    names = {"V": V, "L": L, "B": B}
    out = {kind: dict.fromkeys(judgments, 0) for kind in (V, L, B)}
    for initial, per in found.items():
        out[names[initial]].update(per)
    return out


R, P = RECALL_JUDGMENTS, PRECISION_JUDGMENTS


@pytest.mark.parametrize(("reply", "judgments", "expected"), [
    (steps((V, "Unmatched"), (V, "Matched"), (L, "Matched")), R, counts(R, V={"Matched": 1, "Unmatched": 1},
                                                                         L={"Matched": 1})),
    (steps((B, "Redundant"), (L, "Wrong"), (L, "Matched")), P, counts(P, B={"Redundant": 1},
                                                                       L={"Wrong": 1, "Matched": 1})),
    ("```json\n[]\n```", R, counts(R)),  # no step: all zero
    ("```json\n{}\n```", P, counts(P)),  # an empty object iterates nothing either
    ('```json\n""\n```', P, counts(P)),  # nor an empty string
    ('```json\n{"step_type": "x"}\n```', R, None),  # an object's keys are no steps
    ('```json\n"ab"\n```', R, None), ("```json\n3\n```", R, None),
    (steps((L, "Wrong")), R, None),  # Wrong is no recall judgment
    (steps((L, "Unmatched")), P, None),  # nor Unmatched a precision one
    (steps((L, "Match")), P, None),  # the prompt's "Match" category is not counted: only "Matched"
    (steps(("Logical Inference", "Matched")), R, None),  # an unknown step type
    ('```json\n[{"step_type": "Logical Inference Steps"}]\n```', R, None),  # no judgment
    ('```json\n[["Logical Inference Steps", "Matched"]]\n```', R, None),  # a step that is no object
    (json.dumps([{"step_type": L, "judgment": "Matched"}]), R, None),  # no ```json block
    ("```\n[]\n```", R, None), ("```json [] ```", R, None),  # the block must open with "```json\n"
    ("```json\n[1,\n```", R, None),  # not JSON
    (steps((L, "Matched")) + "\n" + steps((V, "Matched"), (V, "Matched")), R, counts(R, L={"Matched": 1})),  # the first
    ("```json\n  [] \n```", R, counts(R)),  # stripped
])
def test_step_counts(reply: str, judgments: tuple[str, ...], expected: dict | None) -> None:
    assert step_counts(reply, judgments) == expected


# The first item of the released output.json: recall V U, U, M and L M; precision one L Matched.
OUTPUT_JSON_ITEM = {"recall": counts(R, V={"Matched": 1, "Unmatched": 2}, L={"Matched": 1}),
                    "precision": counts(P, L={"Matched": 1})}


@pytest.mark.parametrize(("verdict", "expected"), [
    (OUTPUT_JSON_ITEM, {"Video_recall": 1 / 3, "logic_recall": 1.0, "overall_recall": 0.5,  # as output.json has it
                        "Video_precision": None, "logic_precision": 1.0, "overall_precision": 1.0}),
    # background steps count in neither: overall = (1 + 0) / (2 + 1); precision: Redundant is no denominator
    ({"recall": counts(R, V={"Matched": 1, "Unmatched": 1}, L={"Unmatched": 1}, B={"Matched": 4}),
      "precision": counts(P, V={"Wrong": 2, "Redundant": 1}, B={"Matched": 1})},
     {"Video_recall": 0.5, "logic_recall": 0.0, "overall_recall": 1 / 3,
      "Video_precision": 0.0, "logic_precision": None, "overall_precision": 0.0}),
    ({"recall": counts(R), "precision": counts(P, B={"Redundant": 1})},  # nothing to score: all the script's ""
     {f"{m}_{n}": None for n in ("recall", "precision") for m in COT_METRICS}),
    ({"recall": counts(R, L={"Matched": 1}), "precision": counts(P)}, None),  # no precision step: dropped
    ({"extracted": "B"}, {}),  # not asked (no reasoning, or a row stored before the step): no step scores
])
def test_item_steps(verdict: dict, expected: dict | None) -> None:
    assert item_steps(verdict) == expected


def _cot_row(official: dict | None, response: str | None = "x", correct: bool = True) -> dict[str, Any]:
    verdict = None if official is None else {"extracted": "B", "scoring": "1", "correct": correct, **official}
    return {"id": "r", "response": response, "score": 0.0, "error": None, "parsed": "x",
            "meta": {"duration": 30, "category": "Video Plot Analysis", "question_kind": "open-ended"},
            **({"official": verdict} if verdict is not None else {})}


def test_means_over_the_items_with_a_value_and_f1_of_the_means() -> None:
    rows = [
        _cot_row(OUTPUT_JSON_ITEM),  # right; recall V 1/3, L 1, overall 1/2; precision L 1, overall 1
        _cot_row({"recall": counts(R, V={"Matched": 1, "Unmatched": 1}),  # wrong; recall V 1/2, overall 1/2
              "precision": counts(P, V={"Matched": 1, "Wrong": 1}, L={"Wrong": 1})}, correct=False),  # V 1/2, L 0, 1/3
        _cot_row(None, response=None),  # a failed generation: wrong, counted, no step scores
        _cot_row({"recall": counts(R, L={"Matched": 1}), "precision": counts(P)}),  # no precision step: dropped
        {**_cot_row(None), "official": {"error": "official judge: down"}},  # unfinished: dropped
    ]
    got = block(BENCHMARKS.get("vcrbench"), rows, "official")
    assert (got["score"], got["n"], got["dropped"]) == (pytest.approx(100 / 3), 3, 2)
    video_p, video_r = 0.5, (1 / 3 + 1 / 2) / 2  # one precision value; two recall values
    logic_p, logic_r = (1 + 0) / 2, 1.0
    overall_p, overall_r = (1 + 1 / 3) / 2, (1 / 2 + 1 / 2) / 2
    expected = {"Video": (video_p, video_r, 5 / 11), "logic": (logic_p, logic_r, 2 / 3),
                "overall": (overall_p, overall_r, 4 / 7)}  # F1 = 2PR / (P + R), worked by hand
    for metric, (p, r, f1) in expected.items():
        assert got["metrics"][f"{metric}_precision"] == pytest.approx(100 * p)
        assert got["metrics"][f"{metric}_recall"] == pytest.approx(100 * r)
        assert got["metrics"][f"{metric}_f1"] == pytest.approx(100 * f1)
    assert got["metrics"]["accuracy"] == pytest.approx(100 / 3)


def test_a_metric_no_item_has_is_not_reported_and_an_empty_mean_is_zero() -> None:
    rows = [_cot_row({"recall": counts(R, L={"Unmatched": 2}), "precision": counts(P, B={"Redundant": 1})})]
    metrics = block(BENCHMARKS.get("vcrbench"), rows, "official")["metrics"]
    assert "Video_precision" not in metrics and "Video_f1" not in metrics  # no item has a Video value
    assert (metrics["logic_precision"], metrics["logic_recall"], metrics["logic_f1"]) == (0.0, 0.0, 0.0)
    assert block(BENCHMARKS.get("vcrbench"), [_cot_row({})], "official")["metrics"] == {"accuracy": 100.0}


FAIL = "<503>"


class ScriptedJudge(Judge):
    """Serves `script` in order, one entry a request: a reply text, or FAIL (HTTP 503)."""

    def __init__(self, script: Sequence[str]) -> None:
        self.script = list(script)
        self.current = threading.local()
        super().__init__()

    @property  # type: ignore[override]
    def fail_first(self) -> int:  # read first for each request (one handler thread each): take its entry once
        if getattr(self.current, "entry", None) is None:
            self.current.entry = self.script.pop(0)
        return int(self.current.entry == FAIL)

    @fail_first.setter
    def fail_first(self, value: int) -> None:
        pass

    @property  # type: ignore[override]
    def reply(self) -> str:
        return self.current.entry

    @reply.setter
    def reply(self, value: str) -> None:
        pass


@contextmanager
def scripted_judge(script: Sequence[str]) -> Iterator[ScriptedJudge]:
    with serving(ScriptedJudge(script)) as server:
        yield server


REASONING = ["1. 0:00-0:04, a blue square is shown.", "2. So it is blue."]


RECORD = Record(id="vcrbench/1", problem="What colour?", problem_type="multiple_choice", answer="B",
                options=["red", "blue"], meta={"released_question": "What colour?A. red\nB. blue\n",
                                               "reasoning": REASONING})


SPEC = {"model": "j", "retries": 0}


def test_the_step_requests_follow_the_answer_and_ask_again_until_a_list() -> None:
    script = ["B", "1", "no list", steps((V, "Matched"), (L, "Unmatched")), steps((L, "Matched"))]
    with scripted_judge(script) as judge:
        got = vcrbench_judge(RECORD, "It is blue: B.", JudgeSpec(base_url=judge.url, **SPEC))
        prompts = [b["messages"] for b in judge.requests]
    assert got == {"extracted": "B", "scoring": "1", "correct": True,
                   "recall": counts(R, V={"Matched": 1}, L={"Unmatched": 1}), "precision": counts(P, L={"Matched": 1})}
    question = "What colour?A. red\nB. blue\n"
    recall = VCRBENCH_RECALL.format(question=question, answer="B", solution="It is blue: B.",
                                    gt_annotation=str(REASONING))  # the list as Python writes it
    assert recall.endswith("[Ground Truth Information]\n['1. 0:00-0:04, a blue square is shown.', '2. So it is blue.']\n")
    precision = VCRBENCH_PRECISION.format(question=question, solution="It is blue: B.", gt_annotation=str(REASONING))
    assert '"step_type": "Video Description Steps|' in precision  # the template's {{ }} are braces
    assert prompts[2:] == [[{"role": "user", "content": recall}]] * 2 + [[{"role": "user", "content": precision}]]
    assert all(b["max_tokens"] == 2048 for b in judge.requests)


def test_a_failed_scoring_request_is_wrong_and_the_steps_are_still_asked() -> None:
    with scripted_judge(["moves right", FAIL, steps(), steps((L, "Wrong"))]) as judge:
        record = Record(id="o", problem="Where?", problem_type="open_ended", answer="right", meta={"reasoning": []})
        got = vcrbench_judge(record, "right", JudgeSpec(base_url=judge.url, **SPEC))
    assert (got["correct"], got["scoring"], got["precision"]) == (False, None, counts(P, L={"Wrong": 1}))
    assert got["error"].startswith("official judge: ")  # a resume asks again
    assert vcrbench_item({**_cot_row(None), "official": got}) == {
        "score": 0.0, "meta": {"duration": "0-60", "category": "Video Plot Analysis", "question_kind": "open-ended"},
        "cot": {"Video_recall": None, "logic_recall": None, "overall_recall": None, "Video_precision": None,
                "logic_precision": 0.0, "overall_precision": 0.0}}


@pytest.mark.parametrize("script", [
    ["B", "1", steps(), FAIL],  # the precision request fails
    ["B", "1", *["no list"] * COT_TRIES],  # no recall reply holds a list: given up as a failed request
])
def test_an_unfinished_step_drops_the_item(script: list[str]) -> None:
    with scripted_judge(script) as judge:
        [got] = official_judged(BENCHMARKS.get("vcrbench"), [RECORD], ["B"], JudgeSpec(base_url=judge.url, **SPEC))
        assert not judge.script  # asked exactly as scripted
    assert set(got) == {"error"}
    assert vcrbench_item({**_cot_row(None), "official": got}) is None


def test_an_empty_answer_is_judged_like_any_other() -> None:
    """The runner sends "" (only a failed generation is not judged): extraction "Z", scored "0"; every reference step
    unmatched; the one solution step redundant: recall 0, no precision value, the item kept."""
    script = ["Z", "0", steps((V, "Unmatched"), (L, "Unmatched")), steps((B, "Redundant"))]
    with scripted_judge(script) as judge:
        got = vcrbench_judge(RECORD, "", JudgeSpec(base_url=judge.url, **SPEC))
        extraction = judge.requests[0]["messages"][0]["content"]
    assert extraction.endswith("\nAnswer: \nYour output:\n")
    item = vcrbench_item({**_cot_row(None, response=""), "official": got})
    assert item is not None and item["score"] == 0.0
    assert item["cot"] == {"Video_recall": 0.0, "logic_recall": 0.0, "overall_recall": 0.0, "Video_precision": None,
                           "logic_precision": None, "overall_precision": None}


def test_a_record_without_reasoning_is_not_asked_the_steps() -> None:
    with scripted_judge(["[12, 20]"]) as judge:
        record = Record(id="t", problem="When?", problem_type="open_ended", answer="[10, 20]")
        got = vcrbench_judge(record, "12 to 20", JudgeSpec(base_url=judge.url, **SPEC))
    assert got == {"extracted": "[12, 20]", "scoring": None, "correct": True}


def test_cot_score_through_evaluate(bench_root: Path, tmp_path: Path) -> None:
    """Fixture items: MC "It is B." right (recall V Matched; precision L Matched), open-ended wrong (recall V Unmatched;
    precision V Wrong, L Matched). Video P 0 / R 1/2; logic P 1, no recall; overall P (1 + 1/2) / 2, R 1/2."""
    right, wrong = "It is B.", "It moves to the left."
    replies = {right: "B", "B": "1", wrong: "moves left", "moves left": "0",  # extraction, then scoring
               f"recall: {right}": steps((V, "Matched")), f"precision: {right}": steps((L, "Matched")),
               f"recall: {wrong}": steps((V, "Unmatched")), f"precision: {wrong}": steps((V, "Wrong"), (L, "Matched"))}
    with running_verdict_judge(replies) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"))
        got = evaluate(spec, ScriptedResponder({"vcrbench/1": right, "vcrbench/2": wrong}), tmp_path,
                       benchmarks=["vcrbench"], data_root=bench_root)["benchmarks"]["vcrbench"]
    official = got["protocols"]["official"]
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 0)
    assert {k: v for k, v in official["metrics"].items() if k != "accuracy"} == pytest.approx({
        "Video_precision": 0.0, "Video_recall": 50.0, "Video_f1": 0.0,
        "logic_precision": 100.0, "logic_recall": 0.0, "logic_f1": 0.0,
        "overall_precision": 75.0, "overall_recall": 50.0, "overall_f1": 60.0})  # 2 x .75 x .5 / 1.25
    assert "Video_f1" not in got["protocols"]["strict"]["metrics"]  # the strict block is evr1's accuracy only


def test_vcrbench_easyvideor1_rows_keep_the_question_kind(tmp_path: Path, judge: Any) -> None:
    """(VCR-Bench's official scorer judges multiple choice too, so a judge is needed.)"""
    spec = JudgeSpec(base_url=judge.url, model="j")
    choices = {"A": "hostile", "B": "another woman", "C": "another man", "D": "explosion"}
    official = [{"id": i, "video_path": "video/videoEspresso/x.mp4", "duration": 56, "dimension": "causal",
                 "question": f"Why {i}?A. hostile\nB. another woman\nC. another man\nD. explosion", "multiple-choice": True,
                 "choices": choices, "answer": "C", "reasoning": []} for i in range(2)]
    easy = [easyvideor1_row(i, f"Why {i}?", [f"{k}. {v}" for k, v in choices.items()], "C", "video/videoEspresso/x.mp4",
                  data_source="VCR-Bench") for i in range(2)]
    got_official = score_strict(write_files(tmp_path / "o", {"vcrbench/vcrbench.json": official}), "vcrbench",
                          {"vcrbench/0": "C", "vcrbench/1": "D"}, spec)
    got_easy = score_strict(write_files(tmp_path / "e", {"vcrbench/vcrbench.json": easy}), "vcrbench",
                      {"vcrbench/vcrbench/0": "C", "vcrbench/vcrbench/1": "D"}, spec)
    assert got_easy["score"] == got_official["score"] == 50.0
    assert got_easy["breakdowns"]["question_kind"] == got_official["breakdowns"]["question_kind"]

