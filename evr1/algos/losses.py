"""Policy losses (registry `policy_losses`): PPO clip, GSPO, GSPO-token, CISPO, REINFORCE.

Every loss is called as

    fn(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser,
       offline=None, behaviour_logprobs=None, ref_logprobs=None, entropy=None, kl_coef=None,
       staleness=None, rollout_weights=None)
    -> (loss, metrics)

- `logprobs [B, T]` (with gradient), `old_logprobs [B, T]` (of the policy that sampled the online
  rows), `advantages [B, T]`, `response_mask [B, T]`;
- `spec`: the `AlgoSpec`; `normaliser`: the global-batch `Normaliser` (see `aggregation`);
- `offline [B]` bool and `behaviour_logprobs [B, T]` (a NaN token's behaviour is unknown): see `offpolicy`;
- `staleness [B]` int (given when some row's is > 0): policy versions between the weights that
  sampled each row and those of `old_logprobs`; stale online rows get the decoupled-PPO
  importance weight against `behaviour_logprobs` (see `offpolicy`);
- `rollout_weights [B, T]` (given when `AlgoSpec.rollout_correction` sets an importance level):
  the detached engine-mismatch weights of online rows (see `objective.actor_objective`);
- `ref_logprobs`: needed when KL is a loss term; `entropy [B, T]`: needed when `entropy_coef != 0`;
  `kl_coef`: the current (adaptive) coefficient, default `spec.kl.coef`.

`loss` is this micro-batch's share of the global loss: summing it over micro-batches (and workers)
gives the loss of the whole batch. Metrics are listed in `objective`. Log-ratios are clamped to
`spec.log_ratio_clamp`. Each loss's docstring gives its per-token surrogate (to be minimised).
"""

from __future__ import annotations

import torch
from torch import Tensor

from evr1.algos.aggregation import Normaliser
from evr1.algos.masked import masked_mean
from evr1.algos.objective import Core, CoreFn, actor_objective
from evr1.registry import POLICY_LOSSES
from evr1.specs import AlgoSpec


def _clipped_surrogate(ratio: Tensor, advantages: Tensor, spec: AlgoSpec) -> Core:
    """`max(-A r, -A clip(r, 1-clip_low, 1+clip_high))`, capped at `-A c` where A < 0 when `spec.dual_clip`
    is c, and where each bound was active."""
    low, high = 1.0 - spec.clip_low, 1.0 + spec.clip_high
    loss = torch.maximum(-advantages * ratio, -advantages * ratio.clamp(low, high))
    value = ratio.detach()
    core = Core(loss, value, (advantages < 0) & (value < low), (advantages > 0) & (value > high))
    if spec.dual_clip is not None:
        negative = advantages < 0
        core.token_loss = torch.where(negative, torch.minimum(loss, -advantages * spec.dual_clip), loss)
        core.extra["clip_frac_dual"] = negative & (value > spec.dual_clip)
    return core


def ppo_clip_core(logprobs: Tensor, log_ratio: Tensor, advantages: Tensor, mask: Tensor, spec: AlgoSpec) -> Core:
    return _clipped_surrogate(log_ratio.exp(), advantages, spec)


def _sequence_log_ratio(log_ratio: Tensor, mask: Tensor) -> Tensor:
    return masked_mean(log_ratio, mask, dim=-1)


def gspo_core(logprobs: Tensor, log_ratio: Tensor, advantages: Tensor, mask: Tensor, spec: AlgoSpec) -> Core:
    seq_ratio = _sequence_log_ratio(log_ratio, mask).exp()
    seq_adv = masked_mean(advantages, mask, dim=-1)
    core = _clipped_surrogate(seq_ratio, seq_adv, spec)

    def per_token(row: Tensor) -> Tensor:
        return row[:, None].expand(mask.shape)

    tensors = (core.token_loss, core.ratio, core.clipped_low, core.clipped_high)
    return Core(*map(per_token, tensors), {name: per_token(flags) for name, flags in core.extra.items()})


def gspo_token_core(logprobs: Tensor, log_ratio: Tensor, advantages: Tensor, mask: Tensor, spec: AlgoSpec) -> Core:
    seq = _sequence_log_ratio(log_ratio, mask).detach()[:, None]
    return _clipped_surrogate((logprobs - logprobs.detach() + seq).exp(), advantages, spec)


def cispo_core(logprobs: Tensor, log_ratio: Tensor, advantages: Tensor, mask: Tensor, spec: AlgoSpec) -> Core:
    ratio = log_ratio.exp().detach()
    low, high = 1.0 - spec.clip_low, 1.0 + spec.clip_high
    weight = ratio.clamp(low, high) if low > 0 else ratio.clamp(max=high)
    unit = (logprobs - logprobs.detach()).exp()  # value 1, gradient d log p
    return Core(-advantages * weight * unit, ratio, ratio < low, ratio > high)


def reinforce_core(logprobs: Tensor, log_ratio: Tensor, advantages: Tensor, mask: Tensor, spec: AlgoSpec) -> Core:
    ratio = log_ratio.exp()
    never = torch.zeros_like(mask)
    return Core(-advantages * ratio, ratio.detach(), never, never)


def _register(name: str, core_fn: CoreFn, doc: str) -> None:
    def loss(
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
        return actor_objective(
            core_fn, logprobs, old_logprobs, advantages, response_mask, spec=spec, normaliser=normaliser,
            offline=offline, behaviour_logprobs=behaviour_logprobs, ref_logprobs=ref_logprobs, entropy=entropy,
            kl_coef=kl_coef, staleness=staleness, rollout_weights=rollout_weights,
        )  # fmt: skip

    loss.__name__ = loss.__qualname__ = name
    loss.__doc__ = doc
    POLICY_LOSSES.register(name, loss)


_register(
    "ppo_clip",
    ppo_clip_core,
    """PPO clip: max(-A r, -A clip(r, 1-clip_low, 1+clip_high)), r = pi/pi_old per token.

    Asymmetric bounds are DAPO's clip-higher. With `dual_clip` c (default 3), tokens with A < 0 lose
    at most -A c (Ye et al. 2020), so huge ratios on negative tokens cannot dominate.
    """,
)
_register(
    "gspo",
    gspo_core,
    """GSPO: the PPO clip on the sequence ratio s = exp(mean_t log r_t), with the row's mean advantage.

    Every token of a row carries the row's loss; with `loss_agg='seq_mean_token_mean'` this is
    the paper's objective (Zheng et al. 2025). `dual_clip` caps rows with A < 0 as in `ppo_clip`.
    """,
)
_register(
    "gspo_token",
    gspo_token_core,
    """GSPO-token: per-token ratio whose value is the sequence ratio s and whose gradient is s * d log p_t.

    With the same advantage on every token it equals `gspo` in value and gradient.
    """,
)
_register(
    "cispo",
    cispo_core,
    """CISPO: -sg(clip(r, 1-clip_low, 1+clip_high)) * A * log p; every token keeps its gradient.

    The importance weight is clipped and stop-gradient (MiniMax-M1, 2025); clip_low=1 means no
    lower bound. The reported value is -weight * A (the log p factor has value 1).
    """,
)
_register(
    "reinforce",
    reinforce_core,
    """REINFORCE: -A r with r = pi/pi_old unclipped: the vanilla policy gradient at the sampling policy.""",
)
