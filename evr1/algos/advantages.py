"""Advantage estimators (registry `advantages`): scores -> token-level advantages.

Every estimator is called as

    fn(scores, group_ids, response_mask, *, spec, offline=None) -> Tensor[B, T]

- `scores`: `Tensor[B]` (one score per response) or `Tensor[B, T]` token-level rewards (e.g. with a
  KL penalty, see `evr1.algos.kl.penalised_rewards`); group estimators use their masked row sum.
  `gdpo` takes a dict `{reward key: Tensor[B]}` instead; `remax` also needs `baselines=Tensor[B]`
  (the score of the greedy response to the same prompt).
- `group_ids`: `Tensor[B]` of integers or a sequence of hashable ids: responses to one prompt.
- `response_mask`: `[B, T]`, the response tokens that are trained on.
- `offline`: `Tensor[B]` bool, rows not sampled from the current policy. With
  `spec.offline.in_baseline=False` group statistics use online rows only.
- `spec`: the `AlgoSpec`.

The result is 0 on masked tokens and never NaN. Group estimators (grpo, rloo, gdpo, passk):

- a row gets 0 only when its baseline is undefined: its group has no row in the statistics
  (with `in_baseline=False`: no online row), or, for rloo, no *other* such row;
- rows in the statistics of a group whose statistic rows all scored the same get exactly 0;
- rows left out of the statistics (offline rows with `in_baseline=False`) are centred on the
  statistic rows' baseline even when those all scored the same: an offline answer that is right
  where the policy was always wrong (what `offline_k_threshold` mixes in) is credited;
- grpo and gdpo with `scale_std` divide every row by the std of its whole group, offline rows
  included, whatever `in_baseline` says: it moves the baseline only. Dividing by the online rows'
  std instead is unbounded (online [0, 0, 0.01] and an offline 1 gave the offline row 172.6); with
  the whole group's std `|advantage| <= sqrt((n - 1)(m + 1) / m)` for a group of `n` rows, `m >= 1`
  of them in the statistics (2.0 in that example; `normalised_in_groups` has the bound).
  passk has its own scale (see `evr1.algos.passk`).

`reinforce_pp_baseline` centres each row on its group's mean by the same rules, then whitens
over the valid tokens of the whole batch (so its rows are not 0 in flat groups).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from evr1.algos.advantage_inputs import (
    Scores,
    as_float,
    baseline_rows,
    check_finite,
    normalised_in_groups,
    per_token,
    sequence_scores,
)
from evr1.algos.groups import GroupIds, Groups, group_stats
from evr1.algos.masked import last_token_index, masked_whiten
from evr1.registry import ADVANTAGES
from evr1.specs import AlgoSpec


@ADVANTAGES.register("grpo")
def grpo(scores: Scores, group_ids: GroupIds, response_mask: Tensor, *, spec: AlgoSpec, offline: Tensor | None = None) -> Tensor:
    """GRPO: score minus the group mean, divided by the group std (not with scale_std=False: Dr. GRPO)."""
    values = sequence_scores(scores, response_mask)
    include = baseline_rows(offline, spec, values.shape[0], values.device)
    return per_token(normalised_in_groups(values, Groups.of(group_ids), include, spec.scale_std), response_mask)


@ADVANTAGES.register("rloo")
def rloo(scores: Scores, group_ids: GroupIds, response_mask: Tensor, *, spec: AlgoSpec, offline: Tensor | None = None) -> Tensor:
    """RLOO: score minus the mean score of the other members of the group (leave-one-out).

    Rows left out of the statistics are scored against the mean of all statistic rows; 0 where
    there is no other statistic row.
    """
    values = sequence_scores(scores, response_mask)
    include = baseline_rows(offline, spec, values.shape[0], values.device)
    stats = group_stats(values, Groups.of(group_ids), include)
    others = stats.count - include.to(values.dtype)
    leave_one_out = (stats.total - values * include.to(values.dtype)) / others.clamp_min(1)
    baseline = torch.where(stats.flat | ~include, stats.mean, leave_one_out)  # flat: exact mean, exactly 0
    return per_token(torch.where(others > 0, values - baseline, 0.0), response_mask)


def discounted_returns(rewards: Tensor, gamma: float) -> Tensor:
    """`G_t = r_t + gamma * G_{t+1}` along the last dimension (by position)."""
    if gamma == 1.0:
        return rewards.flip(-1).cumsum(-1).flip(-1)
    returns = torch.empty_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in range(rewards.shape[-1] - 1, -1, -1):
        running = rewards[:, t] + gamma * running
        returns[:, t] = running
    return returns


@ADVANTAGES.register("reinforce_pp")
def reinforce_pp(
    scores: Scores, group_ids: GroupIds, response_mask: Tensor, *, spec: AlgoSpec, offline: Tensor | None = None
) -> Tensor:
    """REINFORCE++: discounted token returns (`spec.gamma`), whitened over all valid tokens of the batch.

    A score `[B]` is the reward of the last valid token. Groups are not used (no baseline): call it
    on the whole batch of a step, since the whitening statistics are the batch's.
    """
    if isinstance(scores, Mapping):
        raise TypeError("reinforce_pp takes one score per response or token rewards, not a per-key dict")
    mask = response_mask.bool()
    scores = as_float(scores)
    if scores.dim() == 1:
        check_finite("scores", scores)
        rewards = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
        rewards.scatter_(1, last_token_index(mask)[:, None], scores[:, None])
    else:
        rewards = scores
    rewards = torch.where(mask, rewards, 0.0)
    check_finite("token rewards", rewards)
    return masked_whiten(discounted_returns(rewards, spec.gamma), mask)


@ADVANTAGES.register("reinforce_pp_baseline")
def reinforce_pp_baseline(
    scores: Scores, group_ids: GroupIds, response_mask: Tensor, *, spec: AlgoSpec, offline: Tensor | None = None
) -> Tensor:
    """REINFORCE++-baseline: score minus its group's mean, on every token, whitened over the batch's tokens.

    The group mean (Hu et al. 2025) removes the prompt's difficulty; the whitening, over every valid
    token of the batch (a row counts once per token), sets the scale instead of a per-group std, so
    call it on the whole batch of a step. Token rewards `[B, T]` are summed per row first.
    """
    values = sequence_scores(scores, response_mask)
    include = baseline_rows(offline, spec, values.shape[0], values.device)
    centred = normalised_in_groups(values, Groups.of(group_ids), include, scale_std=False)
    return masked_whiten(per_token(centred, response_mask), response_mask)


@ADVANTAGES.register("remax")
def remax(
    scores: Scores,
    group_ids: GroupIds,
    response_mask: Tensor,
    *,
    spec: AlgoSpec,
    offline: Tensor | None = None,
    baselines: Tensor | None = None,
) -> Tensor:
    """ReMax: score minus the score of the greedy response to the same prompt (`baselines [B]`)."""
    values = sequence_scores(scores, response_mask)
    if baselines is None:
        raise ValueError("remax needs baselines=Tensor[B]: the score of the greedy response to each row's prompt")
    baselines = as_float(baselines).to(values.device)
    if baselines.shape != values.shape:
        raise ValueError(f"baselines must have shape {tuple(values.shape)}, got {tuple(baselines.shape)}")
    check_finite("baselines", baselines)
    return per_token(values - baselines, response_mask)


@ADVANTAGES.register("gdpo")
def gdpo(scores: Scores, group_ids: GroupIds, response_mask: Tensor, *, spec: AlgoSpec, offline: Tensor | None = None) -> Tensor:
    """GDPO: each reward key normalised in its groups, weighted (`spec.key_weights`), summed, whitened.

    The batch whitening is over rows (each response counts once).
    """
    if not isinstance(scores, Mapping) or not scores:
        raise TypeError("gdpo takes a non-empty dict {reward key: Tensor[B]} of per-key scores")
    unknown = sorted(set(spec.key_weights) - set(scores))
    if unknown:
        raise ValueError(f"key_weights names reward keys {unknown} that are not among the scores {sorted(scores)}")
    groups = Groups.of(group_ids)
    total = None
    for key, values in scores.items():
        if values.dim() != 1:
            raise ValueError(f"gdpo score {key!r} must be [B], got shape {tuple(values.shape)}")
        values = sequence_scores(values, response_mask)
        include = baseline_rows(offline, spec, values.shape[0], values.device)
        part = spec.key_weights.get(key, 1.0) * normalised_in_groups(values, groups, include, spec.scale_std)
        total = part if total is None else total + part
    rows = torch.ones_like(total, dtype=torch.bool)
    return per_token(masked_whiten(total, rows), response_mask)


from evr1.algos import passk as _passk  # noqa: F401  (registers "passk")
