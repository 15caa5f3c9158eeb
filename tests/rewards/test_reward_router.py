"""The router: routes, weights, format modes, plugins (sync, async, batch), failures and metrics."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence

import pytest
from pydantic import ValidationError
from reward_helpers import make

from evr1.data.records import MediaRef, Record
from evr1.problem_types import ProblemType
from evr1.registry import REWARDS
from evr1.rewards import RewardInput, RewardOutput, RewardRouter, RewardScoringError, per_sample
from evr1.rewards.format_reward import format_score
from evr1.specs import RewardSpec


@pytest.fixture
def plugins() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        REWARDS.unregister(name)


def _register(plugins: list[str], name: str, fn: object) -> None:
    REWARDS.register(name, fn)
    plugins.append(name)


def test_every_problem_type_has_a_default_route() -> None:
    router = RewardRouter()
    assert router.routes == {t: t.value for t in ProblemType}
    assert router.route("mcq") == "multiple_choice"  # aliases resolve in the enum


def test_weights_and_format_combine(spec: RewardSpec) -> None:
    router = RewardRouter(spec)
    right_untagged, right_tagged, wrong_tagged = router.score([
        make("The answer is B", "B", "multiple_choice", options=["x", "y"]),
        make("<think>hm</think><answer>B</answer>", "B", "multiple_choice", options=["x", "y"]),
        make("<answer>A</answer>", "B", "multiple_choice", options=["x", "y"]),
    ])  # fmt: skip
    assert (right_untagged.score, right_untagged.components) == (pytest.approx(0.9), {"accuracy": 1.0, "format": 0.0})
    assert right_tagged.score == pytest.approx(1.0)
    assert (wrong_tagged.score, wrong_tagged.components) == (pytest.approx(0.1), {"accuracy": 0.0, "format": 1.0})


def test_custom_weights_are_normalised() -> None:
    router = RewardRouter(RewardSpec(accuracy_weight=1.0, format_weight=0.5))
    [out] = router.score([make("<answer>yes</answer>", "no", "boolean")])
    assert out.score == pytest.approx(0.5 / 1.5)


FORMAT = [
    # (response, full, partial)
    ("<think>x</think><answer>B</answer>", 1.0, 1.0),
    ("<answer>B</answer> trailing words", 0.0, 1.0),  # full: nothing may follow </answer>
    ("<answer>purple</answer>", 0.0, 0.5),  # tag, unsuitable content
    ("The answer is B", 0.0, 0.5),  # suitable content, no tag
    ("nothing", 0.0, 0.0),
]


@pytest.mark.parametrize(("response", "full", "partial"), FORMAT)
def test_format_modes(response: str, full: float, partial: float) -> None:
    inp = make(response, "B", "multiple_choice", options=["x", "y", "z"])
    assert format_score(inp, RewardSpec(format="full")) == full
    assert format_score(inp, RewardSpec(format="partial")) == partial
    assert format_score(inp, RewardSpec(format="none")) == 1.0


def test_format_none_scores_accuracy_alone() -> None:
    [out] = RewardRouter(RewardSpec(format="none")).score([make("B", "B", "multiple_choice")])
    assert out.score == 1.0


def test_plugin_routing_per_sample_and_failures(plugins: list[str]) -> None:
    release = threading.Event()  # "slow" returns only after scoring: it times out whatever the machine's load

    @per_sample
    def length_ratio(inp: RewardInput, spec: RewardSpec) -> float | None:
        """Test plugin: shorter is better."""
        if inp.response == "skip":
            return None
        if inp.response == "boom":
            raise RuntimeError("exploded")
        if inp.response == "slow":
            release.wait()
        if inp.response == "bad":
            return 1.5
        return 1.0 / len(inp.response)

    _register(plugins, "test/length", length_ratio)
    router = RewardRouter(RewardSpec(routes={"open_ended": "test/length"}, timeout_s=1.0, format="none"))
    texts = ["ab", "skip", "boom", "slow", "bad", "abcd"]
    inputs = [make(t, "ref", "open_ended", sample_id=f"s{i}") for i, t in enumerate(texts)]
    outs = router.score(inputs)
    release.set()
    assert [o.score for o in outs] == [0.5, 0.0, 0.0, 0.0, 0.0, 0.25]
    assert not outs[1].applicable and outs[1].error is None
    assert "s2" in outs[2].error and "exploded" in outs[2].error
    assert f"(at {__file__}:" in outs[2].error  # the plugin's own line, not evr1's or a library's
    assert outs[3].timed_out and "s3" in outs[3].error and "timed out" in outs[3].error
    assert "1.5" in outs[4].error
    metrics = router.metrics(inputs, outs)
    assert metrics["reward/open_ended/errors"] == 3.0
    assert metrics["reward/open_ended/timeouts"] == 1.0
    assert metrics["reward/open_ended/not_applicable"] == 1.0
    assert metrics["reward/open_ended/accuracy"] == pytest.approx((0.5 + 0.25) / 2)  # scored samples only
    assert metrics["reward/open_ended/score"] == pytest.approx(0.75 / 6)
    assert metrics["reward/errors"] == 3.0


def test_fail_on_error_fails_the_step(plugins: list[str]) -> None:
    _register(plugins, "test/raise", per_sample(lambda inp, spec: 1 / 0))
    router = RewardRouter(RewardSpec(routes={"ocr": "test/raise"}, fail_on_error=True))
    with pytest.raises(RewardScoringError, match="sample q9"):
        router.score([make("x", "y", "ocr", sample_id="q9")])


def test_async_and_batch_plugins(plugins: list[str]) -> None:
    running, most = [0], [0]

    @per_sample
    async def judged(inp: RewardInput, spec: RewardSpec) -> float:
        running[0] += 1
        most[0] = max(most[0], running[0])
        await asyncio.sleep(0.05)  # every call has started before the first one ends, if they run concurrently
        running[0] -= 1
        return 1.0 if inp.response == inp.answer else 0.0

    def batch(inputs: Sequence[RewardInput], spec: RewardSpec) -> list[RewardOutput]:
        return [RewardOutput(0.5, {"accuracy": 0.5, "extra": 2.0}) for _ in inputs]

    _register(plugins, "test/async", judged)
    _register(plugins, "test/batch", batch)
    router = RewardRouter(RewardSpec(routes={"open_ended": "test/async", "ocr": "test/batch"}, format="none"))
    outs = router.score([make("a", "a", "open_ended") for _ in range(10)] + [make("b", "a", "ocr")])
    assert most[0] == 10  # the ten calls ran concurrently
    assert [o.score for o in outs[:10]] == [1.0] * 10
    assert outs[10].components == {"accuracy": 0.5, "extra": 2.0, "format": 1.0}


def test_batch_timeout_and_wrong_length(plugins: list[str]) -> None:
    release = threading.Event()  # the stalled batch returns only after scoring
    _register(plugins, "test/stall", lambda inputs, spec: release.wait())
    _register(plugins, "test/short", lambda inputs, spec: [])
    router = RewardRouter(RewardSpec(routes={"ocr": "test/stall", "math": "test/short"}, timeout_s=0.5))
    outs = router.score([make("x", "y", "ocr"), make("x", "y", "ocr"), make("x", "1", "math")])
    release.set()
    assert [o.timed_out for o in outs] == [True, True, False]
    assert "returned 0 values for 1 inputs" in outs[2].error


def test_unknown_route_is_rejected_by_the_spec() -> None:
    with pytest.raises(ValidationError, match="unknown rewards name 'nope'"):
        RewardSpec(routes={"ocr": "nope"})
    with pytest.raises(ValidationError, match="unknown problem_type"):
        RewardSpec(routes={"telepathy": "ocr"})


def test_from_record_carries_timing_and_ids(spec: RewardSpec) -> None:
    record = Record(id="r1", problem="When?", problem_type="tg", answer={"time": [1, 2]},
                    media=[MediaRef(kind="video", path="v.mp4", start=2.0, end=12.0)], meta={"fps": 2})  # fmt: skip
    inp = RewardInput.from_record(record, "<answer>[1, 2]</answer>", sample_id="r1#0")
    assert (inp.duration, inp.fps, inp.group_id, inp.sample_id) == (10.0, 2.0, "r1", "r1#0")
    assert inp.problem_type is ProblemType.TEMPORAL_GROUNDING
    [out] = RewardRouter(spec).score([inp])
    assert out.score == 1.0


def test_output_score_must_be_in_unit_interval() -> None:
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        RewardOutput(1.2)


def test_a_scorers_note_reaches_the_output(plugins: list[str]) -> None:
    @per_sample
    def noted(inp: RewardInput, spec: RewardSpec) -> RewardOutput | float:
        """Test plugin: 0 with the reason, 1 without one, or a failure."""
        if inp.response == "boom":
            raise RuntimeError("exploded")
        return RewardOutput(0.0, {"accuracy": 0.0}, note="ran out of time") if inp.response == "slow" else 1.0

    _register(plugins, "test/noted", noted)
    router = RewardRouter(RewardSpec(routes={"open_ended": "test/noted"}, format="none"))
    outs = router.score([make(t, "ref", "open_ended") for t in ("slow", "fine", "boom")])
    assert [(o.score, o.note, o.error is None) for o in outs] == [(0.0, "ran out of time", True), (1.0, None, True),
                                                                  (0.0, None, False)]  # fmt: skip
