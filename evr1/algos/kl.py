"""KL between the policy and a reference model: estimators, loss term, reward penalty, coefficient.

Per-token estimators of KL(pi || pi_ref) from samples of pi, with `d = log pi - log pi_ref`:
- `k1`: d (unbiased, high variance, can be negative);
- `k2`: d^2 / 2 (the "mse" estimator);
- `k3`: exp(-d) - 1 + d (unbiased, non-negative, low variance; Schulman 2020);
- `abs`: |d|.
Values are clamped to [-clamp, clamp] (`KLSpec.clamp`); `d` itself to +-20 so `exp` stays finite.

Use it either as a loss term (`kl_loss_tokens`, aggregated like the policy loss) or as a reward
penalty (`penalised_rewards`, before the advantage estimator), as `KLSpec.as_reward_penalty` says.
`KLController` holds the coefficient: fixed, or adaptive towards `KLSpec.target`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from evr1.algos.masked import last_token_index, masked_mean
from evr1.specs import KLSpec

_MAX_LOG_RATIO = 20.0


def kl_estimate(logprobs: Tensor, ref_logprobs: Tensor, estimator: str, clamp: float) -> Tensor:
    """Per-token KL estimates (same shape as the inputs); gradients flow through `logprobs`."""
    d = (logprobs - ref_logprobs.detach()).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    if estimator == "k1":
        value = d
    elif estimator == "k2":
        value = 0.5 * d.pow(2)
    elif estimator == "k3":
        value = torch.exp(-d) - 1 + d
    elif estimator == "abs":
        value = d.abs()
    else:
        raise ValueError(f"unknown KL estimator {estimator!r}; known: k1, k2, k3, abs")
    return value.clamp(-clamp, clamp)


def kl_loss_tokens(logprobs: Tensor, ref_logprobs: Tensor | None, response_mask: Tensor, spec: KLSpec) -> Tensor:
    """Per-token KL for the loss term (0 on masked tokens); errors when it is not configured."""
    if not spec.enabled or spec.as_reward_penalty:
        raise ValueError("the KL loss term needs kl.enabled=True and kl.as_reward_penalty=False")
    if ref_logprobs is None:
        raise ValueError("KL is enabled as a loss term but no ref_logprobs were given (is there a reference model?)")
    ref = torch.where(response_mask.bool(), ref_logprobs, logprobs).detach()  # padding never reaches the gradient
    value = kl_estimate(logprobs, ref, spec.estimator, spec.clamp)
    return torch.where(response_mask.bool(), value, 0.0)


def penalised_rewards(
    scores: Tensor, old_logprobs: Tensor, ref_logprobs: Tensor, response_mask: Tensor, spec: KLSpec, coef: float
) -> tuple[Tensor, Tensor]:
    """Token rewards `[B, T]`: the score on each row's last valid token minus `coef * KL` per token.

    Returns the rewards (for the advantage estimator) and the mean per-token KL (for the controller).
    """
    if not (spec.enabled and spec.as_reward_penalty):
        raise ValueError("the KL reward penalty needs kl.enabled=True and kl.as_reward_penalty=True")
    mask = response_mask.bool()
    ref = torch.where(mask, ref_logprobs, old_logprobs)
    kl = torch.where(mask, kl_estimate(old_logprobs, ref, spec.estimator, spec.clamp), 0.0)
    rewards = torch.zeros_like(kl)
    rewards.scatter_(1, last_token_index(mask)[:, None], scores.to(kl.dtype)[:, None])
    rewards = torch.where(mask, rewards, 0.0) - coef * kl
    return rewards.detach(), masked_mean(kl, mask).detach()


class KLController:
    """The KL coefficient: `spec.coef`, fixed, or adapted towards `spec.target` (Ziegler et al. 2019)."""

    def __init__(self, spec: KLSpec) -> None:
        self.spec = spec
        self.value = spec.coef

    def update(self, observed_kl: float, n_samples: int) -> float:
        """After a step of `n_samples` responses with mean KL `observed_kl`; returns the new value."""
        if self.spec.target is not None:
            error = min(max(observed_kl / self.spec.target - 1.0, -0.2), 0.2)
            self.value *= 1.0 + error * n_samples / self.spec.horizon
        return self.value
