"""`samples.jsonl` rows carry why a sample scored what it did (the scorer's error or note)."""

from __future__ import annotations

import pytest

from evr1.problem_types import ProblemType
from evr1.rewards import RewardInput
from evr1.rewards.contract import RewardOutput
from evr1.runner.loop.reward_phase import sample_row

INPUT = RewardInput(response="print(1)", answer="1", problem_type=ProblemType.CODE, sample_id="r1/0")


@pytest.mark.parametrize(
    ("out", "extra"),
    [
        (RewardOutput(score=1.0), {}),
        (RewardOutput(score=0.0, note="0/2 tests passed: timed out after 10 s"), {"note": "0/2 tests passed: timed out after 10 s"}),
        (RewardOutput(score=0.0, error="scorer crashed"), {"error": "scorer crashed"}),
    ],
)
def test_a_sample_row_keeps_the_scorers_reason(out: RewardOutput, extra: dict) -> None:
    base = {"step": 3, "id": "r1/0", "response": "print(1)", "answer": "1", "score": out.score}
    assert sample_row(3, INPUT, out) == base | extra
