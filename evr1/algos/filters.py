"""Dynamic sampling (DAPO): keep groups whose mean metric lies strictly inside (low, high).

Filtering on a chosen metric key (default `accuracy`, not the overall score that includes the
format reward) drops groups that carry no learning signal: all right or all wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from evr1.algos.groups import GroupIds, Groups
from evr1.specs import DynamicSamplingSpec


def group_means(values: Tensor, group_ids: GroupIds) -> Tensor:
    """Per-row mean of its group's finite values (NaN = not applicable; NaN if none is finite)."""
    groups = Groups.of(group_ids)
    finite = torch.isfinite(values)
    clean = torch.where(finite, values, 0.0).to(torch.float64)
    count = groups.sum(finite.to(torch.float64))
    mean = groups.sum(clean) / count
    return mean[groups.index.to(values.device)]


def keep_groups(metrics: Mapping[str, Tensor], group_ids: GroupIds, spec: DynamicSamplingSpec) -> Tensor:
    """`[B]` bool: rows whose group's mean `spec.metric` is strictly between `spec.low` and `spec.high`."""
    if spec.metric not in metrics:
        raise KeyError(f"dynamic sampling metric {spec.metric!r} is not among the reward metrics {sorted(metrics)}")
    values = metrics[spec.metric]
    if values.dim() != 1:
        raise ValueError(f"metric {spec.metric!r} must be one value per response [B], got shape {tuple(values.shape)}")
    mean = group_means(values.to(torch.float64), group_ids)
    return (mean > spec.low) & (mean < spec.high)  # NaN (no finite value) compares False: dropped
