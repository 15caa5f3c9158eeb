"""LLM-judge rewards against a real OpenAI-compatible HTTP server on 127.0.0.1 (the fake at the edge)."""

from __future__ import annotations

import socket

import pytest
from judge_server import Judge
from reward_helpers import make

from evr1.errors import ConfigError
from evr1.rewards import RewardRouter
from evr1.rewards.judge_rewards import open_ended_judge, preference_judge
from evr1.specs import JudgeSpec, RewardSpec


def _spec(url: str, **judge: object) -> RewardSpec:
    return RewardSpec(routes={"open_ended": "open_ended_judge", "preference": "preference_judge"},
                      judge=JudgeSpec(base_url=url, model="tiny-judge", **judge))  # type: ignore[arg-type]


def test_open_ended_judge_scores_and_sends_question_reference_answer(judge: Judge) -> None:
    spec = _spec(judge.url)
    inp = make("<answer>a horse</answer>", "a brown horse", "open_ended", problem="What animal?")
    assert open_ended_judge([inp], spec) == [0.8]
    request = judge.requests[-1]
    assert request["model"] == "tiny-judge"
    user = request["messages"][-1]["content"]
    assert "What animal?" in user and "a brown horse" in user and "a horse" in user


def test_empty_answer_is_not_sent(judge: Judge) -> None:
    assert open_ended_judge([make("<answer></answer>", "x", "open_ended")], _spec(judge.url)) == [0.0]
    assert judge.requests == []


def test_retries_on_server_errors(judge: Judge) -> None:
    judge.fail_first = 2
    judge.reply = "Score: 10/10"
    assert open_ended_judge([make("<answer>a</answer>", "a", "open_ended")], _spec(judge.url, retries=2)) == [1.0]
    assert len(judge.requests) == 3


def test_api_key_read_from_the_named_variable(judge: Judge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_JUDGE_KEY", "s3cret")
    open_ended_judge([make("<answer>a</answer>", "a", "open_ended")], _spec(judge.url, api_key_env="ACME_JUDGE_KEY"))
    assert judge.headers_seen[-1]["Authorization"] == "Bearer s3cret"


def test_timeout_then_clear_error_through_the_router(judge: Judge) -> None:
    judge.stall_s = 1.0
    router = RewardRouter(_spec(judge.url, timeout_s=0.2, retries=1))
    [out] = router.score([make("<answer>a</answer>", "a", "open_ended", sample_id="s-7")])
    assert out.score == 0.0
    assert "s-7" in out.error and "unreachable after 2 attempt(s)" in out.error and judge.url in out.error
    assert router.metrics([make("x", "a", "open_ended")], [out])["reward/open_ended/errors"] == 1.0


def test_unreachable_endpoint_names_itself() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    [value] = open_ended_judge([make("<answer>a</answer>", "a", "open_ended")], _spec(f"http://127.0.0.1:{port}/v1", retries=0))
    assert isinstance(value, Exception) and f"127.0.0.1:{port}" in str(value) and "unreachable" in str(value)


def test_unconfigured_judge_fails_when_the_router_is_built() -> None:
    with pytest.raises(ConfigError, match="reward.judge.base_url and reward.judge.model"):
        RewardRouter(RewardSpec(routes={"open_ended": "open_ended_judge"}))
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE"):
        RewardRouter(_spec("http://127.0.0.1:1/v1", api_key_env="NOT_SET_ANYWHERE"))


def test_unreadable_reply_is_an_error(judge: Judge) -> None:
    judge.reply = "I cannot decide"
    [value] = open_ended_judge([make("<answer>a</answer>", "a", "open_ended")], _spec(judge.url))
    assert isinstance(value, ValueError) and "no 0-10 score" in str(value)


def test_preference_judge_uses_reference_or_verdict(judge: Judge) -> None:
    spec = _spec(judge.url)
    judge.reply = "B"
    with_label = make("<answer>A</answer>", "A", "preference")
    without = make("<answer>B</answer>", None, "preference", problem="Request...\n[A] ...\n[B] ...")
    wrong = make("<answer>A</answer>", "", "preference")
    assert preference_judge([with_label, without, wrong], spec) == [1.0, 1.0, 0.0]
    assert len(judge.requests) == 2  # the labelled sample needed no verdict
