"""A one-line `RewardInput` builder for reward tests, and a scorer's values as plain accuracies."""

from __future__ import annotations

from typing import Any

from evr1.rewards.contract import RewardInput, RewardOutput


def make(response: str, answer: Any, problem_type: str, **kwargs: Any) -> RewardInput:
    return RewardInput(response=response, answer=answer, problem_type=problem_type, **kwargs)


def accuracies(values: list[Any]) -> list[Any]:
    """A scorer's values with each `RewardOutput` as its accuracy (floats, None and exceptions as they are)."""
    return [v.components.get("accuracy", v.score) if isinstance(v, RewardOutput) else v for v in values]
