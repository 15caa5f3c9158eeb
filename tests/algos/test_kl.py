"""KL estimators, reward penalty, coefficient controller."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.algos.kl import KLController, kl_estimate, kl_loss_tokens, penalised_rewards
from evr1.specs import KLSpec

LN2 = math.log(2)


@pytest.mark.parametrize(
    ("estimator", "d", "expected"),
    [
        ("k1", LN2, LN2),
        ("k1", -LN2, -LN2),
        ("k2", LN2, 0.5 * LN2**2),
        ("k2", -LN2, 0.5 * LN2**2),
        ("k3", LN2, 0.5 - 1 + LN2),  # exp(-d) - 1 + d
        ("k3", -LN2, 2 - 1 - LN2),
        ("abs", -LN2, LN2),
        ("k3", 15.0, 10.0),  # clamped at KLSpec.clamp
        ("k3", -1e4, 10.0),  # log-ratio clamped first: exp stays finite
        ("k1", 0.0, 0.0),
    ],
)
def test_estimators_by_hand(estimator, d, expected):
    value = kl_estimate(torch.tensor([d], dtype=torch.float64), torch.zeros(1, dtype=torch.float64), estimator, 10.0)
    assert value.item() == pytest.approx(expected)


def test_kl_loss_gradient_and_masking():
    logprobs = torch.tensor([[0.3, -0.2, 50.0]], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([[0.0, 0.0, float("nan")]], dtype=torch.float64)  # padding value never reaches the loss
    mask = torch.tensor([[1, 1, 0]])
    tokens = kl_loss_tokens(logprobs, ref, mask, KLSpec(enabled=True, coef=0.1, estimator="k2"))
    assert tokens.tolist()[0] == pytest.approx([0.045, 0.02, 0.0])
    tokens.sum().backward()
    assert logprobs.grad.tolist()[0] == pytest.approx([0.3, -0.2, 0.0])  # d(d^2/2)/dd = d


def test_penalised_rewards_put_the_score_on_the_last_token():
    old = torch.tensor([[math.log(0.5), math.log(0.5), 0.0]])
    ref = torch.tensor([[math.log(0.25), math.log(0.5), 0.0]])
    spec = KLSpec(enabled=True, coef=0.5, estimator="k1", as_reward_penalty=True)
    rewards, mean_kl = penalised_rewards(torch.tensor([1.0]), old, ref, torch.tensor([[1, 1, 0]]), spec, coef=0.5)
    assert rewards.tolist()[0] == pytest.approx([-0.5 * LN2, 1.0, 0.0])
    assert mean_kl.item() == pytest.approx(LN2 / 2)
    with pytest.raises(ValueError, match="as_reward_penalty"):
        penalised_rewards(torch.tensor([1.0]), old, ref, torch.ones(1, 3), KLSpec(enabled=True, coef=0.5), coef=0.5)


def test_controller_fixed_and_adaptive():
    fixed = KLController(KLSpec(enabled=True, coef=0.1))
    assert fixed.update(observed_kl=5.0, n_samples=100) == 0.1
    adaptive = KLController(KLSpec(enabled=True, coef=0.1, target=0.1, horizon=1000))
    assert adaptive.update(observed_kl=0.2, n_samples=100) == pytest.approx(0.1 * 1.02)  # error clipped to +0.2
    assert adaptive.update(observed_kl=0.09, n_samples=1000) == pytest.approx(0.1 * 1.02 * 0.9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"enabled": True}, "coef 0"),
        ({"enabled": True, "coef": 0.0, "target": 0.1}, "coef 0"),
        ({"coef": 0.1}, "not enabled"),
        ({"as_reward_penalty": True}, "not enabled"),
        ({"target": 0.05}, "not enabled"),
    ],
)
def test_inert_kl_settings_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        KLSpec(**kwargs)
