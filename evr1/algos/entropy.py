"""Exact token entropy from logits, computed in chunks of tokens to bound memory.

`H = logsumexp(z) - sum_v softmax(z)_v z_v` in float32. With gradients required, each chunk is
recomputed in the backward pass (activation checkpointing), so peak memory stays about one
chunk of `[chunk_size, vocab]` float32 instead of several copies of the whole logits tensor.
The learner passes tempered logits (`logits / T`): its entropy is that of the sampling distribution.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint


def _entropy(logits: Tensor) -> Tensor:
    z = logits.float()
    return torch.logsumexp(z, dim=-1) - (torch.softmax(z, dim=-1) * z).sum(-1)


def entropy_from_logits(logits: Tensor, *, chunk_size: int = 1024) -> Tensor:
    """Entropy of the softmax over the last dimension: `[..., V] -> [...]` (float32)."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    flat = logits.reshape(-1, logits.shape[-1])
    track = torch.is_grad_enabled() and logits.requires_grad
    parts = [
        checkpoint(_entropy, chunk, use_reentrant=False) if track else _entropy(chunk)
        for chunk in flat.split(chunk_size)
    ]
    out = torch.cat(parts) if parts else flat.new_zeros(0, dtype=torch.float32)
    return out.reshape(logits.shape[:-1])
