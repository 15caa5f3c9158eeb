"""Importance ratios for mixed online/offline batches (see `OffPolicySpec`).

Three kinds of rows:
- online rows: ratio `pi / pi_old` (`old_logprobs`), clipped by the policy loss;
- offline rows whose behaviour log-probs are known (finite on the row's valid tokens): ratio
  `pi / mu`, clipped by the policy loss like online rows;
- offline rows whose behaviour log-probs are unknown (no `behaviour_logprobs`, or NaN on a
  valid token of the row): not treated as on-policy (their `old_logprobs` are the current policy's, so that ratio
  says nothing about the data). They get `fallback_token_loss`: LUFFY policy shaping
  `-A * p/(p + gamma)` or importance weight 1 `-A * log p`, never clipped.
Every offline row's policy-gradient term is scaled by `OffPolicySpec.loss_weight`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from evr1.specs import OffPolicySpec


@dataclass(frozen=True)
class RowKinds:
    """Per-row flags `[B]`: offline, and offline without known behaviour log-probs."""

    offline: Tensor
    unknown: Tensor

    @classmethod
    def of(cls, offline: Tensor | None, behaviour_logprobs: Tensor | None, response_mask: Tensor) -> RowKinds:
        """Behaviour log-probs of a row are known when finite on all its valid tokens."""
        batch, device = response_mask.shape[0], response_mask.device
        if offline is None:
            if behaviour_logprobs is not None:
                raise ValueError("behaviour_logprobs given without the offline mask that says which rows they are for")
            none = torch.zeros(batch, dtype=torch.bool, device=device)
            return cls(none, none)
        offline = offline.bool().to(device)
        if offline.shape != (batch,):
            raise ValueError(f"offline must be a bool tensor [B={batch}], got shape {tuple(offline.shape)}")
        if behaviour_logprobs is None:
            return cls(offline, offline)
        known = (torch.isfinite(behaviour_logprobs) | ~response_mask.bool()).all(-1)
        return cls(offline, offline & ~known)


def log_ratio(
    logprobs: Tensor,
    old_logprobs: Tensor,
    behaviour_logprobs: Tensor | None,
    response_mask: Tensor,
    kinds: RowKinds,
    clamp: float,
) -> Tensor:
    """`log pi - log denominator`, clamped to [-clamp, clamp].

    0 (ratio 1, gradient still flowing through `log pi`) on masked tokens and on rows with unknown
    behaviour, so padding values never reach the loss or its gradient.
    """
    denominator = old_logprobs
    if behaviour_logprobs is not None:
        use = (kinds.offline & ~kinds.unknown)[:, None]
        denominator = torch.where(use, behaviour_logprobs, old_logprobs)
    ignore = kinds.unknown[:, None] | ~response_mask.bool()
    denominator = torch.where(ignore, logprobs, denominator).detach()
    return (logprobs - denominator).clamp(-clamp, clamp)


def fallback_token_loss(logprobs: Tensor, advantages: Tensor, spec: OffPolicySpec) -> Tensor:
    """Per-token loss for offline rows with unknown behaviour: shaping or unit importance weight."""
    if spec.unknown_behaviour == "shaping":
        prob = logprobs.exp()
        return -advantages * prob / (prob + spec.shaping_gamma)
    return -advantages * logprobs


def row_weights(kinds: RowKinds, spec: OffPolicySpec, dtype: torch.dtype) -> Tensor:
    """`[B, 1]` weight of each row's policy-gradient term: `loss_weight` offline, 1 online."""
    ones = torch.ones(kinds.offline.shape, dtype=dtype, device=kinds.offline.device)
    return torch.where(kinds.offline, ones * spec.loss_weight, ones)[:, None]
