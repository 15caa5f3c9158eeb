"""Shared pieces of the advantage estimators: input checks, group normalisation, broadcasting."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from evr1.algos.groups import Groups, GroupStats, group_stats
from evr1.algos.masked import EPS
from evr1.specs import AlgoSpec

Scores = Tensor | Mapping[str, Tensor]


def as_float(x: Tensor) -> Tensor:
    """`x` if floating point, else as float32."""
    return x if x.is_floating_point() else x.to(torch.float32)


def check_finite(name: str, values: Tensor) -> None:
    """Raise naming the first rows of `values` that are NaN or infinite."""
    bad = (~torch.isfinite(values)).nonzero()
    if bad.numel():
        raise ValueError(f"{name} has non-finite values at rows {bad[:, 0].unique()[:10].tolist()}")


def sequence_scores(scores: Scores, response_mask: Tensor) -> Tensor:
    """One float score per row: `scores [B]` as is, token rewards `[B, T]` summed over the mask."""
    if isinstance(scores, Mapping):
        raise TypeError("this estimator takes one score per response; per-key score dicts are for 'gdpo'")
    scores = as_float(scores)
    if scores.dim() == 2:
        scores = torch.where(response_mask.bool(), scores, 0.0).sum(-1)
    if scores.dim() != 1 or scores.shape[0] != response_mask.shape[0]:
        raise ValueError(f"scores must be [B] or [B, T] with B={response_mask.shape[0]}, got {tuple(scores.shape)}")
    check_finite("scores", scores)
    return scores


def baseline_rows(offline: Tensor | None, spec: AlgoSpec, batch: int, device: torch.device) -> Tensor:
    """Rows that count in group statistics: all, or online only (`spec.offline.in_baseline=False`)."""
    if offline is None or spec.offline.in_baseline:
        return torch.ones(batch, dtype=torch.bool, device=device)
    if offline.shape != (batch,):
        raise ValueError(f"offline must be a bool tensor [B={batch}], got shape {tuple(offline.shape)}")
    return ~offline.bool().to(device)


def per_token(advantage: Tensor, response_mask: Tensor) -> Tensor:
    """Broadcast a per-row advantage `[B]` to the valid tokens of `[B, T]`."""
    return torch.where(response_mask.bool(), advantage[:, None], 0.0)


def normalised_in_groups(values: Tensor, groups: Groups, include: Tensor, scale_std: bool) -> Tensor:
    """`(x - mean) [/ (std + EPS)]` per row: mean over the group's `include` rows, std over the whole group.

    0 where the group has no included rows (no baseline). Included rows of a group whose included
    values are all equal get exactly 0. `include` moves the baseline only; the scale is always the
    unbiased std of every row of the group, so with all rows included this is plain GRPO, and with
    some left out (offline rows, `in_baseline=False`) no near-flat online subset can blow it up:
    with `n` rows of which `m >= 1` are included, `|advantage| <= sqrt((n - 1)(m + 1) / m)`
    (`sqrt(n)` for one excluded row; at most `sqrt(2(n - 1))`), and `(n - 1) / sqrt(n)` with all
    included. An excluded row that beats a flat online group keeps its advantage (the whole group
    is not flat).
    """
    stats: GroupStats = group_stats(values, groups, include)
    centered = torch.where(stats.count > 0, values - stats.mean, 0.0)
    if not scale_std:
        return centered
    whole = stats if bool(include.all()) else group_stats(values, groups, torch.ones_like(include))
    return centered / (whole.std + EPS)
