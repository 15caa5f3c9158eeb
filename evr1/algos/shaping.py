"""Overlong response shaping (DAPO): a soft length penalty over the last tokens before the limit.

With limit L and buffer b: no penalty up to L - b tokens, then `-penalty * (len - (L - b)) / b`
rising linearly to `-penalty` at L (and beyond, for truncated responses). Add it to the scores.
"""

from __future__ import annotations

from torch import Tensor

from evr1.specs import OverlongSpec


def overlong_penalty(response_lengths: Tensor, *, max_length: int, spec: OverlongSpec) -> Tensor:
    """`[B]` penalties (<= 0) for responses of these lengths under the limit `max_length`."""
    if spec.buffer >= max_length:
        raise ValueError(f"overlong buffer ({spec.buffer}) must be smaller than the response length limit ({max_length})")
    start = max_length - spec.buffer
    excess = (response_lengths.double() - start).clamp(0, spec.buffer)
    return (-spec.penalty * excess / spec.buffer).float()
