"""The actor objective around a policy-gradient core: off-policy rows, entropy, KL, aggregation, metrics.

A core (see `losses`) maps `(logprobs, log_ratio, advantages, mask, spec)` to a `Core`: per-token
losses plus the ratio it clips and where clipping was active; its `mask` holds the valid tokens
that have a ratio. `actor_objective` replaces the tokens whose behaviour log-probs are unknown by
the off-policy fallback, multiplies stale rows' tokens by their decoupled-PPO importance weight
(`offpolicy.behaviour_weights`) or, when given, multiplies online rows' tokens by the rollout-correction
weights (`rollout_correction.correct`: they then replace the decoupled-PPO weight), weights offline rows, subtracts `entropy_coef * entropy`, adds
`coef * KL` when KL is a loss term, aggregates with the global `Normaliser`, and reports metrics.

Metrics (detached 0-dim tensors, means over this micro-batch's valid tokens):
`pg_loss`, `clip_frac_low`/`clip_frac_high` (tokens whose gradient a clip bound removed:
A<0 below the low bound, A>0 above the high one; for cispo: weight truncated), `approx_kl`
(k3 estimate of KL(old || current) from the ratios), `ratio_mean`/`ratio_min`/`ratio_max` (of
the ratio the loss clips; 1 when no token has one), plus core-specific ones (`clip_frac_dual`):
these drift diagnostics are over the tokens of online rows only. When the micro-batch has
offline rows, the same over their tokens with known behaviour (ratio pi/mu) are reported as
`offline/clip_frac_low`, ..., `offline/ratio_max`. When given: `entropy`, `kl` (to the
reference), `offline_token_frac`, `pg_loss_offline`/`pg_loss_online`. When stale rows have
tokens with a known behaviour log-prob and the weight is on: `stale/weight_mean`,
`stale/weight_max` and `stale/weight_truncated_frac` (the fraction at the cap) over those tokens.

`Core` and `actor_objective` are the public, stable way to write a policy-loss plugin
(docs/plugins.md); the rest of this module is internal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from evr1.algos.aggregation import Normaliser, aggregate
from evr1.algos.kl import kl_estimate, kl_loss_tokens
from evr1.algos.masked import masked_mean
from evr1.algos.offpolicy import (
    BehaviourWeights,
    TokenKinds,
    behaviour_weights,
    fallback_token_loss,
    log_ratio,
    row_weights,
)
from evr1.specs import AlgoSpec


@dataclass
class Core:
    """What a policy-gradient core computes for every token `[B, T]`."""

    token_loss: Tensor
    ratio: Tensor  # the ratio the loss clips (token or sequence level), detached
    clipped_low: Tensor  # bool: a lower bound removed this token's gradient
    clipped_high: Tensor  # bool: an upper bound did
    extra: dict[str, Tensor] = field(default_factory=dict)  # more bool masks, reported as fractions


CoreFn = Callable[[Tensor, Tensor, Tensor, Tensor, AlgoSpec], Core]


def _check_shapes(response_mask: Tensor, **tensors: Tensor | None) -> None:
    for name, value in tensors.items():
        if value is not None and value.shape != response_mask.shape:
            raise ValueError(f"{name} has shape {tuple(value.shape)}, expected {tuple(response_mask.shape)} like response_mask")


@torch.no_grad()
def _core_metrics(core: Core, log_ratio: Tensor, ratio_tokens: Tensor) -> dict[str, Tensor]:
    """Clip fractions, approx KL and ratio stats over `ratio_tokens` (tokens that have a ratio)."""
    count = ratio_tokens.sum().clamp_min(1).to(log_ratio.dtype)
    fractions = {"clip_frac_low": core.clipped_low, "clip_frac_high": core.clipped_high, **core.extra}
    metrics = {name: (flags & ratio_tokens).sum() / count for name, flags in fractions.items()}
    metrics["approx_kl"] = torch.where(ratio_tokens, log_ratio.exp() - 1 - log_ratio, 0.0).sum() / count
    ratio = core.ratio.detach()
    if bool(ratio_tokens.any()):
        metrics["ratio_mean"] = (ratio * ratio_tokens).sum() / count
        metrics["ratio_min"] = ratio.masked_fill(~ratio_tokens, torch.inf).amin()
        metrics["ratio_max"] = ratio.masked_fill(~ratio_tokens, -torch.inf).amax()
    else:
        one = torch.ones((), dtype=ratio.dtype, device=ratio.device)
        metrics.update(ratio_mean=one, ratio_min=one, ratio_max=one)
    return metrics


@torch.no_grad()
def _weight_metrics(weights: BehaviourWeights, tokens: Tensor) -> dict[str, Tensor]:
    """Mean, max and truncated fraction of the decoupled-PPO weights over `tokens` (not empty)."""
    count = tokens.sum().to(weights.value.dtype)
    return {
        "stale/weight_mean": torch.where(tokens, weights.value, 0.0).sum() / count,
        "stale/weight_max": weights.value.masked_fill(~tokens, -torch.inf).amax(),
        "stale/weight_truncated_frac": (weights.truncated & tokens).sum() / count,
    }


def actor_objective(
    core_fn: CoreFn,
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    spec: AlgoSpec,
    normaliser: Normaliser,
    offline: Tensor | None = None,
    behaviour_logprobs: Tensor | None = None,
    ref_logprobs: Tensor | None = None,
    entropy: Tensor | None = None,
    kl_coef: float | None = None,
    staleness: Tensor | None = None,
    rollout_weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """The loss of one micro-batch (its share of the global-batch loss) and its metrics.

    `staleness [B]` (None: all 0): policy versions each row's sampling weights were behind the
    weights `old_logprobs` are of; online rows with staleness > 0 get the decoupled-PPO weight.
    `rollout_weights [B, T]` (None: no importance correction of the engine mismatch): detached
    weights of `pi_prox / mu` on online rows (`evr1.algos.rollout_correction`); given, they multiply
    the policy-gradient term of every online token, stale rows' included (instead of the
    decoupled-PPO weight: one weight for one ratio), and offline rows' tokens keep weight 1.
    """
    _check_shapes(
        response_mask,
        logprobs=logprobs,
        old_logprobs=old_logprobs,
        advantages=advantages,
        behaviour_logprobs=behaviour_logprobs,
        ref_logprobs=ref_logprobs,
        entropy=entropy,
        rollout_weights=rollout_weights,
    )
    mask = response_mask.bool()
    kinds = TokenKinds.of(offline, behaviour_logprobs, mask, staleness)
    # padding values (even NaN/inf) never reach the loss nor, through `where`, the gradient
    logprobs, advantages = (torch.where(mask, x, 0.0) for x in (logprobs, advantages.detach()))
    if entropy is not None:
        entropy = torch.where(mask, entropy, 0.0)
    lr = log_ratio(logprobs, old_logprobs, behaviour_logprobs, mask, kinds, spec.log_ratio_clamp)
    ratio_tokens = mask & ~kinds.unknown
    core = core_fn(logprobs, lr, advantages, ratio_tokens, spec)
    pg = core.token_loss
    if bool(kinds.unknown.any()):
        pg = torch.where(kinds.unknown, fallback_token_loss(logprobs, advantages, spec.offline), pg)
    weights = None
    if rollout_weights is None:
        weights = behaviour_weights(old_logprobs, behaviour_logprobs, kinds, spec.offline)
    else:
        pg = pg * torch.where(mask & ~kinds.offline[:, None], rollout_weights, 1.0).detach()
    if weights is not None:
        pg = pg * weights.value
    if spec.offline.loss_weight != 1.0 and bool(kinds.offline.any()):
        pg = pg * row_weights(kinds, spec.offline, pg.dtype)

    def agg(token_values: Tensor) -> Tensor:
        return aggregate(token_values, mask, mode=spec.loss_agg, normaliser=normaliser, constant=spec.loss_agg_constant)

    loss = agg(pg)
    rows = kinds.offline[:, None]
    metrics = {"pg_loss": loss.detach(), **_core_metrics(core, lr.detach(), ratio_tokens & ~rows)}
    if bool(kinds.offline.any()):
        offline_metrics = _core_metrics(core, lr.detach(), ratio_tokens & rows)
        metrics.update({f"offline/{name}": value for name, value in offline_metrics.items()})
    if weights is not None:
        metrics.update(_weight_metrics(weights, kinds.stale_known))
    if offline is not None:
        metrics["offline_token_frac"] = masked_mean(rows.expand_as(mask).to(pg.dtype), mask)
        # aggregation is linear: the two parts add up to pg_loss
        metrics["pg_loss_offline"] = agg(torch.where(rows, pg, 0.0)).detach()
        metrics["pg_loss_online"] = agg(torch.where(rows, 0.0, pg)).detach()
    if entropy is not None:
        metrics["entropy"] = masked_mean(entropy.detach(), mask)
    if spec.entropy_coef != 0:
        if entropy is None:
            raise ValueError(f"entropy_coef is {spec.entropy_coef} but no per-token entropy was given to the loss")
        loss = loss - spec.entropy_coef * agg(entropy)
    kl_in_loss = spec.kl.enabled and not spec.kl.as_reward_penalty
    if kl_in_loss:
        kl_tokens = kl_loss_tokens(logprobs, ref_logprobs, mask, spec.kl)
        loss = loss + (spec.kl.coef if kl_coef is None else kl_coef) * agg(kl_tokens)
        metrics["kl"] = masked_mean(kl_tokens.detach(), mask)
    elif kl_coef is not None:
        raise ValueError("kl_coef was given but KL is not configured as a loss term (kl.enabled, not as_reward_penalty)")
    elif ref_logprobs is not None:  # monitoring only: reported, not in the loss
        ref = torch.where(mask, ref_logprobs, logprobs)
        metrics["kl"] = masked_mean(kl_estimate(logprobs.detach(), ref, spec.kl.estimator, spec.kl.clamp), mask)
    return loss, metrics
