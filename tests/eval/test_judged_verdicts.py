"""Judged benchmarks count an open-ended answer right or wrong, as their official scorers do (MMVU's
`correct`, VCR-Bench, VideoReasonBench, TempCompass captioning): the judge's verdict scores 1 or 0, never a
graded fraction, and a reply without a verdict is a failure kept in the denominator. Checked through
`evr1 eval`'s loop and through the lmms-eval task functions, against the real local judge server."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_server import Judge

from evr1.eval.api import evaluate
from evr1.eval.lmms.scoring import process_results
from evr1.eval.lmms.tasks import benchmark_docs
from evr1.eval.responders import ScriptedResponder
from evr1.problem_types import ProblemType
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from .verdict_judge import candidate_of, running_verdict_judge, verdict_requests

# Benchmarks with judged items; each official scorer counts right or wrong (docs/benchmarks.md).
JUDGED = {"tempcompass", "vcrbench", "videoreasonbench", "mmvu"}


def test_every_judged_benchmark_routes_open_ended_answers_to_the_verdict_judge() -> None:
    judged = {name for name in BENCHMARKS.names() if BENCHMARKS.get(name).needs_judge}
    assert judged == JUDGED
    for name in judged:
        assert dict(BENCHMARKS.get(name).routes) == {ProblemType.OPEN_ENDED: "open_ended_verdict_judge"}, name


# MMVU fixture: mu1 multiple choice answered right (1); mu2 open-ended, judged. Headline = mean of the two.
MMVU_REPLIES = [
    ("correct", 100.0, 0),  # (1 + 1) / 2
    ("Incorrect.", 50.0, 0),  # (1 + 0) / 2
    ("7", 50.0, 1),  # a graded reply is no verdict: the item fails and scores 0, (1 + 0) / 2, not (1 + 0.7) / 2
]


@pytest.mark.parametrize(("reply", "score", "failed"), MMVU_REPLIES)
def test_mmvu_open_ended_scores_one_or_zero(bench_root: Path, tmp_path: Path, judge: Judge, reply: str, score: float,
                                            failed: int) -> None:
    judge.reply = reply
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"), protocol="strict")  # evr1's verdict judge
    got = evaluate(spec, ScriptedResponder({"mmvu/mu1": "B", "mmvu/mu2": "combustion"}), tmp_path, benchmarks=["mmvu"],
                   data_root=bench_root)["benchmarks"]["mmvu"]
    assert got["score"] == pytest.approx(score)
    assert got["n"] == 2 and got["failed"] == failed
    assert got["breakdowns"]["question_kind"]["open-ended"]["score"] == pytest.approx(2 * score - 100)
    if failed:
        assert "mmvu/mu2" in got["errors"][0] and "no verdict" in got["errors"][0]
    assert len(verdict_requests(judge)) == 1  # only the open-ended item is judged (by evr1's verdict prompt)


def test_vcrbench_and_videoreasonbench_verdicts_per_answer(bench_root: Path, tmp_path: Path) -> None:
    """One run: a correct and an incorrect verdict on two VideoReasonBench answers -> 50; VCR-Bench MC wrong (C
    for B) + open-ended correct -> 50."""
    responses = {"videoreasonbench/cup_state1_op5_order_operation_start": "(a1, b2), (c2, b1), (a3, c1)",
                 "videoreasonbench/cup_state1_op5_comparison_state_start": "3",
                 "vcrbench/1": "C", "vcrbench/2": "It moves to the right."}
    verdicts = {"(a1, b2), (c2, b1), (a3, c1)": "correct", "3": "incorrect", "It moves to the right.": "Correct"}
    with running_verdict_judge(verdicts) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"), protocol="strict")  # evr1's verdicts
        got = evaluate(spec, ScriptedResponder(responses), tmp_path, benchmarks=["videoreasonbench", "vcrbench"],
                       data_root=bench_root)["benchmarks"]
        assert sorted(candidate_of(body) for body in verdict_requests(judge)) == sorted(verdicts)  # evr1's prompt
    assert got["videoreasonbench"]["score"] == pytest.approx(50.0) and got["videoreasonbench"]["failed"] == 0
    assert got["vcrbench"]["score"] == pytest.approx(50.0)
    kinds = got["vcrbench"]["breakdowns"]["question_kind"]
    assert (kinds["multiple-choice"]["score"], kinds["open-ended"]["score"]) == (0.0, 100.0)


def test_lmms_task_functions_score_the_verdict(bench_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`evr1.eval.lmms.scoring.process_results` (our lmms-eval tasks) uses the same route: 1 or 0 per verdict."""
    [mc, open_ended] = benchmark_docs("vcrbench", bench_root)
    with running_verdict_judge({"It moves to the right.": "correct", "It moves up.": "incorrect", "It moves.": "6"}) as judge:
        monkeypatch.setenv("EVR1_JUDGE_URL", judge.url)
        monkeypatch.setenv("EVR1_JUDGE_MODEL", "judge")
        answers = ("It moves to the right.", "It moves up.", "It moves.")
        scores = [process_results(open_ended, [text])["vcrbench"] for text in answers]
        assert process_results(mc, ["B"])["vcrbench"]["score"] == 1.0
        assert len(verdict_requests(judge)) == 3  # evr1's verdict judge: the multiple-choice answer is read locally
    assert [s["score"] for s in scores] == [1.0, 0.0, 0.0]
    assert [s["error"] is None for s in scores] == [True, True, False]  # "6" is no verdict: a failure
