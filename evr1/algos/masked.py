"""Reductions over the valid tokens of a batch (`mask` is bool or 0/1, same shape as the values)."""

from __future__ import annotations

import torch
from torch import Tensor

EPS = 1e-6  # added to standard deviations before dividing
FLAT_ULPS = 64  # a std within this many ulps of the values' magnitude is rounding noise: all equal


def masked_sum(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Sum of `values` where `mask` is set (over `dim`, or everything)."""
    masked = torch.where(mask.bool(), values, 0.0)
    return masked.sum() if dim is None else masked.sum(dim)


def masked_mean(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Mean of `values` where `mask` is set; 0 where nothing is set (never NaN)."""
    count = mask.bool().sum() if dim is None else mask.bool().sum(dim)
    return masked_sum(values, mask, dim) / count.clamp_min(1).to(values.dtype)


def masked_whiten(values: Tensor, mask: Tensor) -> Tensor:
    """`(x - mean) / (std + EPS)` over the valid entries; 0 elsewhere and where all are equal.

    "All equal" allows for rounding: a std of at most `FLAT_ULPS` machine epsilons of the largest
    valid magnitude (float32: ~7.6e-6 relative) is treated as 0 rather than blown up by the division.
    """
    valid = mask.bool()
    mean = masked_mean(values, valid)
    centered = torch.where(valid, values - mean, 0.0)
    count = valid.sum()
    std = (centered.pow(2).sum() / (count - 1).clamp_min(1).to(values.dtype)).sqrt()
    scale = torch.where(valid, values, 0.0).abs().amax() if values.numel() else values.new_zeros(())
    if count < 2 or not bool(std > FLAT_ULPS * torch.finfo(values.dtype).eps * scale):
        return torch.zeros_like(values)
    return centered / (std + EPS)


def last_token_index(mask: Tensor) -> Tensor:
    """Index of the last valid token of each row of a `[B, T]` mask (0 for empty rows)."""
    positions = torch.arange(mask.shape[-1], device=mask.device).expand_as(mask)
    return torch.where(mask.bool(), positions, 0).amax(-1)
