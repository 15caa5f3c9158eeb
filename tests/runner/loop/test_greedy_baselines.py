"""ReMax's baselines: each record's greedy response scored by the reward router, then shaped like the sampled ones.
Hand-computed values."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from evr1.data.records import Record
from evr1.runner.loop.reward_phase import greedy_baselines
from evr1.specs import AlgoSpec, OverlongSpec, RewardSpec, RolloutSpec

from .test_train_offline_check import LocalScorer

RECORDS = [Record(id=f"r{i}", problem="Which?", problem_type="multiple_choice", answer="A", options=["A. x", "B. y"])
           for i in range(3)]


def greedy(text: str, tokens: int) -> SimpleNamespace:
    return SimpleNamespace(text=text, token_ids=torch.arange(tokens))


def test_each_record_gets_its_greedy_responses_shaped_score_and_the_mean_is_logged() -> None:
    # format "none": the score is the accuracy. Overlong shaping: limit 4, buffer 2, so a response of
    # 4 tokens loses 1.0, one of 3 tokens 0.5, one of 1 token nothing.
    exp = SimpleNamespace(algo=AlgoSpec(advantage="remax", overlong=OverlongSpec(buffer=2)),
                          rollout=RolloutSpec(max_response_tokens=4))
    responses = [greedy("<answer>A</answer>", 4), greedy("<answer>A</answer>", 1), greedy("<answer>B</answer>", 3)]
    baselines = greedy_baselines(LocalScorer(RewardSpec(format="none")), exp, RECORDS, responses, {}, step=1)
    assert baselines.per_record == [0.0, 1.0, -0.5]  # 1 - 1, 1 - 0, 0 - 0.5
    assert baselines.mean == pytest.approx(0.5 / 3)
