"""Fixtures for reward tests: the default spec and a strict one."""

from __future__ import annotations

import pytest

from evr1.specs import RewardSpec


@pytest.fixture
def spec() -> RewardSpec:
    return RewardSpec()


@pytest.fixture
def strict() -> RewardSpec:
    return RewardSpec(strictness="strict")
