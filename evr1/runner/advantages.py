"""From scored responses to per-token advantages: shaping, KL penalty, estimator, group filter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from evr1.registry import ADVANTAGES
from evr1.specs import AlgoSpec


def padded(rows: Sequence[torch.Tensor], fill: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded `[B, T]` values and their bool mask."""
    width = max((len(r) for r in rows), default=0)
    values = torch.full((len(rows), width), fill, dtype=rows[0].dtype if rows else torch.float32)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        values[i, : len(r)] = r
        mask[i, : len(r)] = True
    return values, mask


def compute_advantages(
    spec: AlgoSpec, items: Sequence[Any], outputs: Sequence[Any], kl: Any = None, *, max_length: int | None = None
) -> tuple[list[torch.Tensor], dict[str, float], list[bool]]:
    """Token advantages per item, metrics, and which items to keep (dynamic sampling).

    `items` carry `response_ids`, `behaviour_logprobs`, `offline`, `group_id` (and `ref_logprobs`
    when KL is on); `outputs` are the reward router's outputs in the same order.
    """
    from evr1.algos.filters import keep_groups
    from evr1.algos.kl import penalised_rewards
    from evr1.algos.shaping import overlong_penalty

    metrics: dict[str, float] = {}
    _, mask = padded([i.response_ids for i in items])
    group_ids = torch.tensor([i.group_id for i in items])
    offline = torch.tensor([i.offline for i in items])
    scores = torch.tensor([o.score for o in outputs], dtype=torch.float32)
    if spec.overlong is not None and max_length is not None:
        penalty = overlong_penalty(mask.sum(-1), max_length=max_length, spec=spec.overlong)
        scores = scores + penalty
        metrics["shaping/overlong_penalty"] = float(penalty.mean())
    inputs: Any = scores
    if spec.advantage == "gdpo":  # per-key normalisation needs every reward component
        keys = sorted({k for o in outputs for k in o.components})
        inputs = {k: torch.tensor([o.components.get(k, 0.0) for o in outputs]) for k in keys}
    elif kl is not None and spec.kl.as_reward_penalty:
        old, _ = padded([i.behaviour_logprobs for i in items])
        ref, _ = padded([i.ref_logprobs for i in items])
        old = torch.where(torch.isnan(old), ref, old)  # unknown behaviour (offline): no penalty
        inputs, mean_kl = penalised_rewards(scores, old, ref, mask, spec.kl, kl.value)
        metrics["kl/mean"] = float(mean_kl)
    advantages = ADVANTAGES.get(spec.advantage)(inputs, group_ids, mask, spec=spec, offline=offline)
    keep = torch.ones(len(items), dtype=torch.bool)
    if spec.dynamic_sampling is not None:
        per_key = {k: torch.tensor([o.components.get(k, float("nan")) for o in outputs]) for k in {k for o in outputs for k in o.components}}
        per_key["score"] = scores
        keep = keep_groups(per_key, group_ids, spec.dynamic_sampling)
        metrics["filter/kept_frac"] = float(keep.float().mean())
    valid = advantages[mask]
    metrics["advantage/mean"] = float(valid.mean()) if valid.numel() else 0.0
    metrics["advantage/abs_mean"] = float(valid.abs().mean()) if valid.numel() else 0.0
    return [advantages[i, : len(item.response_ids)] for i, item in enumerate(items)], metrics, keep.tolist()
