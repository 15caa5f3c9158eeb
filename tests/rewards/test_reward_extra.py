"""Weighted extra rewards beside the routes, `--set reward.routes.<type>=...`, rewards of the wrong
form naming their fix, and the ROUGE warm-up at worker start."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import fiddle as fdl
import pytest
from pydantic import ValidationError
from reward_helpers import make

from evr1.experiment import apply_overrides, build
from evr1.problem_types import ProblemType
from evr1.registry import REWARDS
from evr1.rewards import RewardInput, RewardRouter, per_sample
from evr1.specs import RewardSpec

OPTIONS = ["x", "y"]


@pytest.fixture
def plugins() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        REWARDS.unregister(name)


def _register(plugins: list[str], name: str, fn: object) -> None:
    REWARDS.register(name, fn)
    plugins.append(name)


@per_sample
def _short(inp: RewardInput, spec: RewardSpec) -> float | None:
    """1 for a response of at most 20 characters, 0.5 up to 40, None (not applicable) for open-ended."""
    if inp.problem_type is ProblemType.OPEN_ENDED:
        return None
    return 1.0 if len(inp.response) <= 20 else 0.5 if len(inp.response) <= 40 else 0.0


def _half(inputs: Sequence[RewardInput], spec: RewardSpec) -> list[float]:
    return [0.5] * len(inputs)


EXTRA = [
    # (response, answer, type, score): accuracy weight 0.9, format 0.1, t20/short 0.5, t20/half 1.0
    # right, tagged, short: (0.9 + 0.1 + 0.5 * 1 + 1.0 * 0.5) / 2.5
    ("<answer>B</answer>", "B", "multiple_choice", 2.0 / 2.5),
    # wrong, tagged, 21-40 characters: (0 + 0.1 + 0.5 * 0.5 + 0.5) / 2.5
    ("<answer>A, I am fairly sure</answer>", "B", "multiple_choice", 0.85 / 2.5),
    # t20/short does not apply to open-ended: (0.9 + 0.1 + 0.5) / 2.0
    ("<answer>a red car</answer>", "a red car", "open_ended", 1.5 / 2.0),
]


@pytest.mark.parametrize(("response", "answer", "problem_type", "expected"), EXTRA)
def test_extra_rewards_are_weighed_into_the_score(plugins: list[str], response: str, answer: str, problem_type: str,
                                                  expected: float) -> None:  # fmt: skip
    _register(plugins, "t20/short", _short)
    _register(plugins, "t20/half", _half)
    router = RewardRouter(RewardSpec(extra={"t20/short": 0.5, "t20/half": 1.0}))
    [out] = router.score([make(response, answer, problem_type, options=OPTIONS)])
    assert out.error is None and out.score == pytest.approx(expected)
    assert out.components["t20/half"] == 0.5
    assert ("t20/short" in out.components) is (problem_type != "open_ended")


def test_each_extra_reward_gets_its_own_metrics(plugins: list[str]) -> None:
    _register(plugins, "t20/short", _short)
    router = RewardRouter(RewardSpec(extra={"t20/short": 1.0}))
    inputs = [make("<answer>B</answer>", "B", "mcq", options=OPTIONS), make("<answer>A</answer>" + "." * 20, "B", "mcq",
              options=OPTIONS), make("<answer>car</answer>", "car", "open_ended")]  # fmt: skip
    metrics = router.metrics(inputs, router.score(inputs))
    assert metrics["reward/extra/t20/short/mean"] == pytest.approx(0.75)  # 1 and 0.5; n/a for open-ended
    assert metrics["reward/extra/t20/short/count"] == 2.0
    assert metrics["reward/multiple_choice/t20/short"] == pytest.approx(0.75)
    assert metrics["reward/multiple_choice/accuracy"] == pytest.approx(0.5)  # the route's accuracy is its own


def test_a_failing_extra_reward_fails_its_sample_by_name(plugins: list[str]) -> None:
    @per_sample
    def broken(inp: RewardInput, spec: RewardSpec) -> float:
        raise RuntimeError("no luck")

    _register(plugins, "t20/broken", broken)
    router = RewardRouter(RewardSpec(extra={"t20/broken": 1.0}))
    [out] = router.score([make("<answer>B</answer>", "B", "mcq", sample_id="s1", options=OPTIONS)])
    assert out.score == 0.0 and out.error.startswith("reward 't20/broken' failed on sample s1: RuntimeError: no luck")


def test_extra_reward_settings_are_checked() -> None:
    with pytest.raises(ValidationError, match="unknown rewards name 't20/nope'"):
        RewardSpec(extra={"t20/nope": 1.0})
    with pytest.raises(ValidationError, match="greater than 0"):
        RewardSpec(extra={"format": 0.0})
    with pytest.raises(ValidationError, match="weigh them with accuracy_weight and format_weight"):
        RewardSpec(extra={"format": 0.5})


def _root(reward: RewardSpec) -> RewardSpec:
    return reward


def test_set_changes_one_route_and_keeps_the_others() -> None:
    cfg = fdl.Config(_root, reward=RewardSpec(routes={"numerical": "regression"}))
    apply_overrides(cfg, ["reward.routes.open_ended=open_ended_judge", "reward.routes.mcq=boolean"])
    assert build(cfg).routes == {ProblemType.NUMERICAL: "regression", ProblemType.OPEN_ENDED: "open_ended_judge",
                                 ProblemType.MULTIPLE_CHOICE: "boolean"}  # fmt: skip
    apply_overrides(cfg, ["reward.routes.numerical=None", "reward.extra.format_nope=None"])  # None removes a key
    assert build(cfg).routes == {ProblemType.OPEN_ENDED: "open_ended_judge", ProblemType.MULTIPLE_CHOICE: "boolean"}
    apply_overrides(cfg, ["reward.routes.open_ended=open_ended_judgee"])
    with pytest.raises(Exception, match="Did you mean 'open_ended_judge'"):
        build(cfg)


def test_rewards_score_takes_one_route_and_one_extra_by_set() -> None:
    from evr1.cli.rewards import build_spec

    spec = build_spec(["routes.numerical=regression", "reward.extra.open_ended=0.25"], ["ocr=open_ended"])
    assert spec.routes == {ProblemType.NUMERICAL: "regression", ProblemType.OCR: "open_ended"}
    assert spec.extra == {"open_ended": 0.25}


WRONG_FORM = [
    # a batch function returning one float for the batch
    (lambda inputs, spec: 1.0, "returned one float for a batch of 1 inputs"),
    # a function of one input registered without @per_sample: it is given the list
    (lambda inp, spec: float(inp.response == "B"), "'list' object has no attribute 'response'"),
    # a @per_sample function returning a list
    (per_sample(lambda inp, spec: [1.0]), "returned [1.0], not a float in [0, 1] or None (a @per_sample function"),
]


@pytest.mark.parametrize(("fn", "message"), WRONG_FORM)
def test_a_reward_of_the_wrong_form_names_the_likely_fix(plugins: list[str], fn: object, message: str) -> None:
    _register(plugins, "t20/wrong", fn)
    [out] = RewardRouter(RewardSpec(routes={"mcq": "t20/wrong"})).score([make("B", "B", "mcq", options=OPTIONS)])
    assert out.score == 0.0 and message in out.error and "per_sample" in out.error


def test_an_async_batch_reward_returning_one_value_names_the_fix(plugins: list[str]) -> None:
    async def whole(inputs: Sequence[RewardInput], spec: RewardSpec) -> float:
        return 1.0

    _register(plugins, "t20/whole", whole)
    [out] = RewardRouter(RewardSpec(routes={"mcq": "t20/whole"})).score([make("B", "B", "mcq", options=OPTIONS)])
    assert "returned one float for a batch of 1 inputs" in out.error and "@per_sample" in out.error


def test_the_reward_worker_builds_the_rouge_scorer_before_the_first_sample() -> None:
    from evr1.experiment import Experiment
    from evr1.rewards import open_ended
    from evr1.runner.ray.actors import RewardWorker

    open_ended._scorer.cache_clear()
    RewardRouter(RewardSpec())
    assert open_ended._scorer.cache_info().currsize == 0  # building a router alone does not
    RewardWorker(Experiment(name="warm"))
    assert open_ended._scorer.cache_info().currsize == 1
