"""Helpers for the algorithm tests."""

from __future__ import annotations

import math

import torch

from evr1.algos.aggregation import Normaliser
from evr1.registry import POLICY_LOSSES
from evr1.specs import AlgoSpec


def lp(values) -> torch.Tensor:
    """Float64 log-probabilities (leaf, requires grad) from probabilities."""
    return torch.tensor([[math.log(v) for v in row] for row in values], dtype=torch.float64, requires_grad=True)


def t(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def call_loss(name: str, logprobs, old, adv, mask=None, *, spec: AlgoSpec | None = None, normaliser=None, **kw):
    mask = torch.ones_like(logprobs, dtype=torch.bool) if mask is None else mask
    spec = spec or AlgoSpec(policy_loss=name)
    normaliser = normaliser or Normaliser.of(mask)
    return POLICY_LOSSES.get(name)(logprobs, old, adv, mask, spec=spec, normaliser=normaliser, **kw)
