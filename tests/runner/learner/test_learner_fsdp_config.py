"""`ResourcesSpec.learner_sharding`: replicated by default; FSDP only with two learner workers or more."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evr1.specs import ResourcesSpec


@pytest.mark.parametrize(
    "fields, sharding",
    [
        ({}, "replicated"),
        ({"learner_workers": 2, "learner_sharding": "fsdp"}, "fsdp"),  # CPU workers: gloo
        ({"num_gpus": 8, "learner_workers": 8, "learner_sharding": "fsdp"}, "fsdp"),
        ({"num_gpus": 1, "learner_workers": 1, "learner_sharding": "replicated"}, "replicated"),
    ],
)
def test_learner_sharding_values(fields: dict, sharding: str) -> None:
    assert ResourcesSpec(**fields).learner_sharding == sharding


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"learner_sharding": "fsdp"}, r"learner_workers is 1: set learner_workers >= 2"),
        ({"num_gpus": 1, "learner_workers": 1, "learner_sharding": "fsdp"}, r"learner_workers is 1"),
        ({"learner_workers": 2, "learner_sharding": "zero3"}, r"learner_sharding"),
    ],
)
def test_learner_sharding_is_validated(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ResourcesSpec(**fields)
