"""A stale batch (pipelined rollouts) trains with the decoupled-PPO weight and logs the staleness metrics."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from evr1.specs import AlgoSpec, OffPolicySpec

from .learner_fixtures import learner_for, lprocessor_fixture, lspec_fixture, make_samples, params_of  # noqa: F401

NAN = float("nan")
# mu = pi_prox - delta per token of the stale row: weights pi_prox/mu = 3 (truncated at the cap 2), 1.5, 0.5,
# and an unknown mu (weight 1)
DELTAS = [math.log(3.0), math.log(1.5), -math.log(2.0), NAN]
WEIGHTS = [2.0, 1.5, 0.5, 1.0]


def _stale_batch(learner, lprocessor):
    """Row 0 (video, 4 tokens) sampled one version back; row 1 (text, 5 tokens) fresh, with a behaviour
    log-prob 5 nats below pi_prox that must not matter. Advantages 1 on every token. pi_prox: `learner`'s."""
    samples = make_samples(lprocessor, "vt", seed=1)
    assert [s.response_tokens for s in samples] == [4, 5]
    prox = learner.compute_logprobs(samples)
    behaviour = [prox[0] - torch.tensor(DELTAS), prox[1] - 5.0]
    return [
        replace(s, advantages=torch.ones(s.response_tokens), behaviour_logprobs=b, staleness=k)
        for s, b, k in zip(samples, behaviour, (1, 0))
    ]


@pytest.mark.parametrize("grouped", [True, False])
def test_stale_rows_train_with_the_truncated_weight(lspec, lprocessor, grouped) -> None:
    corrected = learner_for(lspec, grouped_forward=grouped)
    samples = _stale_batch(corrected, lprocessor)
    metrics = corrected.update(samples)
    # one optimizer step at pi = pi_prox: ratio 1, no clipping; token mean of -A w over the 9 tokens
    assert metrics["pg_loss"] == pytest.approx(-(sum(WEIGHTS) + 5) / 9, rel=1e-5)
    assert metrics["stale/weight_mean"] == pytest.approx((2.0 + 1.5 + 0.5) / 3, rel=1e-5)
    assert metrics["stale/weight_max"] == pytest.approx(2.0)
    assert metrics["stale/weight_truncated_frac"] == pytest.approx(1 / 3)
    assert metrics["stale/unknown_tokens"] == 1 and metrics["stale/rows"] == 1
    assert metrics["stale/staleness_mean"] == 0.5 and metrics["stale/staleness_max"] == 1
    # the same step as plain PPO on fresh rows whose advantages carry the weights: -A r w = -(A w) r
    weighted = [replace(s, staleness=0, advantages=a) for s, a in zip(samples, (torch.tensor(WEIGHTS), torch.ones(5)))]
    reference = learner_for(lspec, grouped_forward=grouped)
    plain = reference.update(weighted)
    assert not any(name.startswith("stale/") for name in plain)
    assert plain["pg_loss"] == pytest.approx(metrics["pg_loss"], rel=1e-5)
    assert plain["grad_norm"] == pytest.approx(metrics["grad_norm"], rel=1e-4)
    want = params_of(reference)
    for name, value in params_of(corrected).items():
        assert torch.allclose(value, want[name], atol=1e-6), name


def test_the_weight_switched_off_trains_stale_rows_against_pi_prox(lspec, lprocessor) -> None:
    learner = learner_for(lspec, algo=AlgoSpec(offline=OffPolicySpec(behaviour_weight=False)))
    metrics = learner.update(_stale_batch(learner, lprocessor))
    assert metrics["pg_loss"] == pytest.approx(-1.0, rel=1e-5)
    assert metrics["stale/rows"] == 1 and "stale/weight_mean" not in metrics
