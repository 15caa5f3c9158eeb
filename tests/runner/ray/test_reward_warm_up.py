"""The reward worker warms up (ROUGE's 2 s import) only the rewards the run's problem types and extra rewards
can reach; with no types given, every routed reward."""

from __future__ import annotations

import pytest

from evr1.experiment import Experiment
from evr1.rewards import open_ended
from evr1.runner.ray.actors import RewardWorker
from evr1.specs import RewardSpec


@pytest.mark.parametrize(
    ("types", "extra", "warmed"),
    [
        (None, {}, True),  # every route, open_ended's included
        (["multiple_choice", "numerical"], {}, False),  # no sample of the run can reach ROUGE
        (["multiple_choice", "open_ended"], {}, True),
        (["mcq"], {}, False),  # aliases route as the records' own types do
        (["multiple_choice"], {"open_ended": 0.5}, True),  # an extra reward scores every sample
    ],
)
def test_the_reward_worker_warms_up_the_rewards_its_problem_types_reach(types, extra, warmed) -> None:
    open_ended._scorer.cache_clear()
    RewardWorker(Experiment(name="warm", reward=RewardSpec(extra=extra)), None, types)
    assert open_ended._scorer.cache_info().currsize == (1 if warmed else 0)
