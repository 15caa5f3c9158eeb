"""Importance ratios and weights for off-policy rows (see `OffPolicySpec`), decided per token.

Two kinds of off-policy rows share this one path: offline rows (curated responses the mixer puts
into groups) and stale online rows (sampled by an older policy, `staleness > 0`: pipelined
rollouts). Four kinds of valid tokens:
- tokens of fresh online rows: ratio `pi / pi_old` (`old_logprobs`), clipped by the policy loss;
- tokens of stale online rows: the decoupled-PPO objective (Hilton et al. 2022; AReaL, Fu et al.
  2025). The proximal policy `pi_prox` is the learner's recomputed `old_logprobs` (the weights
  at the start of the step), the behaviour policy `mu` is the rollout's own log-prob
  (`behaviour_logprobs`). The loss clips `pi / pi_prox` as for fresh rows and its per-token
  policy-gradient term is multiplied by the detached, truncated importance weight
  `w = min(pi_prox / mu, behaviour_weight_cap)`; a token whose `mu` is unknown (NaN) gets w = 1.
  With staleness 0 the rollout and the proximal policy are the same weights: no weight, so such
  rows are exactly fresh rows;
- tokens of offline rows whose behaviour log-prob is known (finite): ratio `pi / mu`, clipped by
  the policy loss like online tokens;
- tokens of offline rows whose behaviour log-prob is unknown (no `behaviour_logprobs`, or NaN on
  that token): not treated as on-policy (their `old_logprobs` are the current policy's, so that
  ratio says nothing about the data). They get `fallback_token_loss`: LUFFY policy shaping
  `-A * p/(p + gamma)` or importance weight 1 `-A * log p`, never clipped.
The decision is per token, not per row: a curated response whose log-probs cover its text but not
the stop token the mixer appends (NaN there) keeps `pi / mu` on every text token and takes the
fallback on the stop token alone, instead of losing its behaviour log-probs altogether.
Sequence-level losses (gspo) form their sequence ratio from the known tokens only; their
per-token terms (the row's term on every token) take the per-token weights like any other loss.
Every offline row's policy-gradient term is scaled by `OffPolicySpec.loss_weight`; an offline
row's staleness is ignored (it is already trained against its own behaviour policy).

`pi`, `pi_old` and `pi_prox` are the policy's sampling distribution at the rollout temperature T,
`log_softmax(logits / T)` over the whole vocabulary (`evr1.runner.learner.logprobs`), so a behaviour
log-prob `mu` must be of the same kind: the behaviour policy's log-prob of the token at
the temperature T of this run (no top-k/top-p renormalisation), or NaN where unknown. Log-probs
taken at another temperature make `pi / mu` and `pi_prox / mu` wrong on every token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from evr1.specs import OffPolicySpec


@dataclass(frozen=True)
class TokenKinds:
    """`offline [B]`: rows not sampled from the current policy; `unknown [B, T]`: their valid
    tokens without a known behaviour log-prob (trained with the fallback loss); `stale [B]`:
    online rows sampled by an older policy; `stale_known [B, T]`: their valid tokens with a known
    behaviour log-prob (those that get an importance weight other than 1)."""

    offline: Tensor
    unknown: Tensor
    stale: Tensor
    stale_known: Tensor

    @classmethod
    def of(
        cls,
        offline: Tensor | None,
        behaviour_logprobs: Tensor | None,
        response_mask: Tensor,
        staleness: Tensor | None = None,
    ) -> TokenKinds:
        """A behaviour log-prob is known where it is finite; padding is never unknown.

        `staleness [B]`: policy versions between each row's sampling weights and the proximal ones
        (None: every row 0); rows with staleness > 0 that are not offline are stale.
        """
        mask = response_mask.bool()
        batch, device = mask.shape[0], mask.device
        none = torch.zeros(batch, dtype=torch.bool, device=device)
        if offline is None:
            if behaviour_logprobs is not None and staleness is None:
                raise ValueError("behaviour_logprobs given without the offline mask that says which rows they are for")
            offline = none
        offline = offline.bool().to(device)
        if offline.shape != (batch,):
            raise ValueError(f"offline must be a bool tensor [B={batch}], got shape {tuple(offline.shape)}")
        stale = none
        if staleness is not None:
            if staleness.shape != (batch,):
                raise ValueError(f"staleness must be a tensor [B={batch}], got shape {tuple(staleness.shape)}")
            stale = (staleness.to(device) > 0) & ~offline
        known = torch.isfinite(behaviour_logprobs) if behaviour_logprobs is not None else torch.zeros_like(mask)
        return cls(offline, offline[:, None] & mask & ~known, stale, stale[:, None] & mask & known)


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


@dataclass(frozen=True)
class BehaviourWeights:
    """Decoupled-PPO weights of one micro-batch: `value [B, T]` (detached; 1 on every token but
    `TokenKinds.stale_known`) and `truncated [B, T]` (tokens whose `pi_prox / mu` exceeded the cap)."""

    value: Tensor
    truncated: Tensor


def behaviour_weights(
    old_logprobs: Tensor, behaviour_logprobs: Tensor | None, kinds: TokenKinds, spec: OffPolicySpec
) -> BehaviourWeights | None:
    """`w = min(pi_prox / mu, behaviour_weight_cap)` on stale rows' tokens with known `mu`, 1 elsewhere.

    None when no row is stale, no stale token has a known `mu` (every weight would be 1), or
    `spec.behaviour_weight` is off: the loss is then left exactly as it is without stale rows.
    """
    if not spec.behaviour_weight or behaviour_logprobs is None or not bool(kinds.stale_known.any()):
        return None
    known = kinds.stale_known
    raw = torch.where(known, old_logprobs.detach() - behaviour_logprobs, 0.0).exp()
    truncated = known & (raw > spec.behaviour_weight_cap)
    return BehaviourWeights(raw.clamp(max=spec.behaviour_weight_cap).detach(), truncated)
