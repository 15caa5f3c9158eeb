"""Groups of responses to one prompt, from explicit group ids (never from batch position)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

GroupIds = Tensor | Sequence[Hashable]  # explicit ids: an integer tensor [B] or hashable ids (e.g. prompt uids)


@dataclass(frozen=True)
class Groups:
    """Group membership: sample `b` belongs to group `index[b]` in `0..num-1`."""

    index: Tensor
    num: int

    @classmethod
    def of(cls, group_ids: GroupIds) -> Groups:
        """From a 1-D integer tensor or a sequence of hashable ids (e.g. prompt uids)."""
        if isinstance(group_ids, Tensor):
            if group_ids.dim() != 1 or group_ids.is_floating_point():
                raise ValueError(f"group_ids must be a 1-D integer tensor, got {group_ids.dtype} of shape {tuple(group_ids.shape)}")
            _, index = torch.unique(group_ids, return_inverse=True)
        else:
            first: dict[Hashable, int] = {}
            index = torch.tensor([first.setdefault(g, len(first)) for g in group_ids], dtype=torch.long)
        return cls(index=index, num=int(index.max()) + 1 if index.numel() else 0)

    def sum(self, values: Tensor) -> Tensor:
        """Per-group sums `[num]` of per-sample `values [B]`."""
        return values.new_zeros(self.num).index_add_(0, self.index.to(values.device), values)

    def reduce(self, values: Tensor, how: str, fill: float) -> Tensor:
        """Per-group `amax`/`amin` of `values [B]`; `fill` for groups with no entries."""
        out = values.new_full((self.num,), fill)
        return out.scatter_reduce(0, self.index.to(values.device), values, reduce=how, include_self=True)


@dataclass(frozen=True)
class GroupStats:
    """Per-sample statistics of its group, over the group's included members."""

    mean: Tensor
    std: Tensor  # unbiased (Bessel-corrected)
    count: Tensor  # included members
    total: Tensor  # sum over included members
    flat: Tensor  # all included values equal (also with fewer than 2 included members)


def group_stats(values: Tensor, groups: Groups, include: Tensor) -> GroupStats:
    """Mean/std/count of `values [B]` per group over the members where `include [B]` is set.

    When all included values of a group are equal, its mean is that value exactly, so centred
    values are exactly 0 (no rounding residue that a std division would blow up) and its std is
    exactly 0. A group without included members has mean 0, count 0 and std 0: callers decide
    what its rows get (see `evr1.algos.advantages`).
    """
    weight = include.to(values.dtype)
    count = groups.sum(weight)
    total = groups.sum(values * weight)
    mean = total / count.clamp_min(1)
    high = groups.reduce(torch.where(include, values, torch.full_like(values, -torch.inf)), "amax", -torch.inf)
    low = groups.reduce(torch.where(include, values, torch.full_like(values, torch.inf)), "amin", torch.inf)
    flat = high <= low
    mean = torch.where(flat & (count > 0), high, mean)
    centered = (values - mean[groups.index]) * weight
    var = groups.sum(centered.pow(2)) / (count - 1).clamp_min(1)
    pick = groups.index
    return GroupStats(mean[pick], var.sqrt()[pick], count[pick], total[pick], flat[pick])
