"""Importance ratios for mixed online/offline batches (see `OffPolicySpec`), decided per token.

Three kinds of valid tokens:
- tokens of online rows: ratio `pi / pi_old` (`old_logprobs`), clipped by the policy loss;
- tokens of offline rows whose behaviour log-prob is known (finite): ratio `pi / mu`, clipped by
  the policy loss like online tokens;
- tokens of offline rows whose behaviour log-prob is unknown (no `behaviour_logprobs`, or NaN on
  that token): not treated as on-policy (their `old_logprobs` are the current policy's, so that
  ratio says nothing about the data). They get `fallback_token_loss`: LUFFY policy shaping
  `-A * p/(p + gamma)` or importance weight 1 `-A * log p`, never clipped.
The decision is per token, not per row: a curated response whose log-probs cover its text but not
the stop token the mixer appends (NaN there) keeps `pi / mu` on every text token and takes the
fallback on the stop token alone, instead of losing its behaviour log-probs altogether.
Sequence-level losses (gspo) form their sequence ratio from the known tokens only.
Every offline row's policy-gradient term is scaled by `OffPolicySpec.loss_weight`.

`pi` and `pi_old` are the policy's sampling distribution at the rollout temperature T,
`log_softmax(logits / T)` over the whole vocabulary (`evr1.runner.learner`), so a curated
behaviour log-prob `mu` must be of the same kind: the behaviour policy's log-prob of the token at
the temperature T of this run (no top-k/top-p renormalisation), or NaN where unknown. Log-probs
taken at another temperature make `pi / mu` wrong on every token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from evr1.specs import OffPolicySpec


@dataclass(frozen=True)
class TokenKinds:
    """`offline [B]`: rows not sampled from the current policy; `unknown [B, T]`: their valid
    tokens without a known behaviour log-prob (trained with the fallback loss)."""

    offline: Tensor
    unknown: Tensor

    @classmethod
    def of(cls, offline: Tensor | None, behaviour_logprobs: Tensor | None, response_mask: Tensor) -> TokenKinds:
        """A behaviour log-prob is known where it is finite; padding is never unknown."""
        mask = response_mask.bool()
        batch, device = mask.shape[0], mask.device
        if offline is None:
            if behaviour_logprobs is not None:
                raise ValueError("behaviour_logprobs given without the offline mask that says which rows they are for")
            return cls(torch.zeros(batch, dtype=torch.bool, device=device), torch.zeros_like(mask))
        offline = offline.bool().to(device)
        if offline.shape != (batch,):
            raise ValueError(f"offline must be a bool tensor [B={batch}], got shape {tuple(offline.shape)}")
        unknown = offline[:, None] & mask
        if behaviour_logprobs is not None:
            unknown = unknown & ~torch.isfinite(behaviour_logprobs)
        return cls(offline, unknown)


def log_ratio(
    logprobs: Tensor,
    old_logprobs: Tensor,
    behaviour_logprobs: Tensor | None,
    response_mask: Tensor,
    kinds: TokenKinds,
    clamp: float,
) -> Tensor:
    """`log pi - log denominator` (`mu` on offline rows, `pi_old` on online ones), clamped to [-clamp, clamp].

    0 (ratio 1, gradient still flowing through `log pi`) on masked tokens and on tokens with
    unknown behaviour, so padding and NaN values never reach the loss or its gradient.
    """
    denominator = old_logprobs
    if behaviour_logprobs is not None:
        denominator = torch.where(kinds.offline[:, None], behaviour_logprobs, old_logprobs)
    ignore = kinds.unknown | ~response_mask.bool()
    denominator = torch.where(ignore, logprobs, denominator).detach()
    return (logprobs - denominator).clamp(-clamp, clamp)


def fallback_token_loss(logprobs: Tensor, advantages: Tensor, spec: OffPolicySpec) -> Tensor:
    """Per-token loss for offline tokens with unknown behaviour: shaping or unit importance weight."""
    if spec.unknown_behaviour == "shaping":
        prob = logprobs.exp()
        return -advantages * prob / (prob + spec.shaping_gamma)
    return -advantages * logprobs


def row_weights(kinds: TokenKinds, spec: OffPolicySpec, dtype: torch.dtype) -> Tensor:
    """`[B, 1]` weight of each row's policy-gradient term: `loss_weight` offline, 1 online."""
    ones = torch.ones(kinds.offline.shape, dtype=dtype, device=kinds.offline.device)
    return torch.where(kinds.offline, ones * spec.loss_weight, ones)[:, None]
