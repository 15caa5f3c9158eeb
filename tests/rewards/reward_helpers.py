"""A one-line `RewardInput` builder for reward tests."""

from __future__ import annotations

from typing import Any

from evr1.rewards.contract import RewardInput


def make(response: str, answer: Any, problem_type: str, **kwargs: Any) -> RewardInput:
    return RewardInput(response=response, answer=answer, problem_type=problem_type, **kwargs)
