"""From scored responses to per-token advantages: shaping, group filter, KL penalty, estimator.

The order follows DAPO: scores are shaped (overlong penalty), groups outside the dynamic-sampling
range are dropped, and only then do the KL penalty and the estimator run, on the kept rows only,
so batch-whitened estimators (reinforce_pp, reinforce_pp_baseline, gdpo) never see the statistics of dropped rows.

The KL reward penalty needs the current policy's log-probs. For online rows these are the
sampler's (behaviour) log-probs; offline rows have none at this point (their curated behaviour
log-probs belong to another policy), so offline rows get no KL penalty and do not count in
`kl/mean`.

GDPO normalises each reward key on its own: by default `accuracy` and `format` weighted like the
reward spec weights them in the score (format dropped with `format="none"`), and each of the reward
spec's `extra` rewards with its weight (0 in a row it does not apply to); `key_weights` of the
algo spec override these or add further router components (a row without the key counts as 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from evr1.registry import ADVANTAGES
from evr1.specs import AlgoSpec, RewardSpec


def padded(rows: Sequence[torch.Tensor], fill: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded `[B, T]` values and their bool mask."""
    width = max((len(r) for r in rows), default=0)
    values = torch.full((len(rows), width), fill, dtype=rows[0].dtype if rows else torch.float32)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        values[i, : len(r)] = r
        mask[i, : len(r)] = True
    return values, mask


def shaped_scores(spec: AlgoSpec, scores: torch.Tensor, lengths: torch.Tensor, max_length: int | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Scores plus the overlong penalty (when configured), and the penalty (None when off)."""
    from evr1.algos.shaping import overlong_penalty

    if spec.overlong is None or max_length is None:
        return scores, None
    penalty = overlong_penalty(lengths, max_length=max_length, spec=spec.overlong)
    return scores + penalty, penalty


def gdpo_weights(spec: AlgoSpec, reward: RewardSpec) -> dict[str, float]:
    """The reward keys GDPO normalises and their weights (see the module docstring)."""
    weights = {"accuracy": reward.accuracy_weight}
    if reward.format != "none" and reward.format_weight > 0:
        weights["format"] = reward.format_weight
    return {**weights, **reward.extra, **spec.key_weights}


class Advantages(NamedTuple):
    """Token advantages per item (zeros on dropped items), the step's metrics, and which items to keep."""

    per_item: list[torch.Tensor]
    metrics: dict[str, float]
    keep: list[bool]


def compute_advantages(
    spec: AlgoSpec,
    items: Sequence[Any],
    outputs: Sequence[Any],
    kl: Any = None,
    *,
    max_length: int | None = None,
    reward: RewardSpec | None = None,
    baselines: Sequence[float] | None = None,
) -> Advantages:
    """Token advantages per item, metrics, and which items to keep (dynamic sampling).

    `items` carry `response_ids`, `behaviour_logprobs`, `offline`, `group_id` (and `ref_logprobs`
    when KL is on); `outputs` are the reward router's outputs in the same order; `reward` is the
    reward spec (gdpo's default key weights; required there); `baselines` the greedy scores per
    row (remax).
    Advantages are returned for every item in order; dropped items get zeros (they are not trained).
    """
    from evr1.algos.filters import keep_groups

    if spec.advantage == "gdpo":
        if reward is None:
            raise ValueError("gdpo needs reward=RewardSpec: its default key weights are the reward's accuracy/format weights")
        spec = spec.model_copy(update={"key_weights": gdpo_weights(spec, reward)})
    metrics: dict[str, float] = {}
    _, mask = padded([i.response_ids for i in items])
    group_ids = torch.tensor([i.group_id for i in items], dtype=torch.long)
    scores = torch.tensor([o.score for o in outputs], dtype=torch.float32)
    scores, penalty = shaped_scores(spec, scores, mask.sum(-1), max_length)
    if penalty is not None:
        metrics["shaping/overlong_penalty"] = float(penalty.mean())
    keep = torch.ones(len(items), dtype=torch.bool)
    if spec.dynamic_sampling is not None:
        keys = {k for o in outputs for k in o.components}
        per_key = {k: torch.tensor([o.components.get(k, float("nan")) for o in outputs]) for k in keys}
        per_key["score"] = scores
        keep = keep_groups(per_key, group_ids, spec.dynamic_sampling)
        metrics["filter/kept_frac"] = float(keep.float().mean())
    advantages = torch.zeros(mask.shape, dtype=torch.float32)
    rows = keep.nonzero().squeeze(-1).tolist()
    if rows:
        kept = [items[r] for r in rows]
        kept_scores = scores[keep]
        kept_mask = mask[keep][:, : int(mask[keep].sum(-1).max())]
        extra: dict[str, Any] = {}
        if baselines is not None:
            extra["baselines"] = torch.as_tensor(baselines, dtype=torch.float32)[keep]
        inputs, kl_metrics = estimator_inputs(spec, kept, [outputs[r] for r in rows], kept_scores, kept_mask, kl)
        metrics.update(kl_metrics)
        offline = torch.tensor([i.offline for i in kept])
        values = ADVANTAGES.get(spec.advantage)(inputs, group_ids[keep], kept_mask, spec=spec, offline=offline, **extra)
        advantages[keep, : kept_mask.shape[1]] = values.to(torch.float32)
    valid = advantages[mask & keep[:, None]]
    metrics["advantage/mean"] = float(valid.mean()) if valid.numel() else 0.0
    metrics["advantage/abs_mean"] = float(valid.abs().mean()) if valid.numel() else 0.0
    return Advantages([advantages[i, : len(item.response_ids)] for i, item in enumerate(items)], metrics, keep.tolist())


def estimator_inputs(
    spec: AlgoSpec, items: Sequence[Any], outputs: Sequence[Any], scores: torch.Tensor, mask: torch.Tensor, kl: Any
) -> tuple[Any, dict[str, float]]:
    """What the estimator takes for these rows: per-key scores (gdpo), KL-penalised token rewards, or scores."""
    from evr1.algos.kl import penalised_rewards

    if spec.advantage == "gdpo":  # key_weights resolved by the caller; AlgoSpec rejects shaping and the KL penalty here
        return {k: torch.tensor([o.components.get(k, 0.0) for o in outputs], dtype=torch.float32) for k in spec.key_weights}, {}
    if kl is None or not spec.kl.as_reward_penalty:
        return scores, {}
    ref, _ = padded([i.ref_logprobs for i in items])
    rewards, _ = penalised_rewards(scores, ref, ref, mask, spec.kl, 0.0)  # the score on each last token
    online = ~torch.tensor([i.offline for i in items])
    if not online.any():
        return rewards, {}
    old, _ = padded([i.behaviour_logprobs for i in items])  # the sampler's: the current policy's, online
    part, mean_kl = penalised_rewards(scores[online], old[online], ref[online], mask[online], spec.kl, kl.value)
    rewards[online] = part
    return rewards, {"kl/mean": float(mean_kl)}
