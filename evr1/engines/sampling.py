"""Choosing the next token from logits: greedy, or temperature + top-k + top-p sampling."""

from __future__ import annotations

import torch

from evr1.engines.base import SamplingParams
from evr1.models.forward import temper


def filter_logits(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Tempered logits (`temper`) with everything outside top-k and the top-p nucleus set to -inf."""
    scaled = temper(logits, params.temperature)
    if params.top_k > 0 and params.top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, params.top_k, dim=-1).values[..., -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        probs = sorted_logits.softmax(-1)
        # Drop a token when the tokens ranked above it already hold top_p of the mass.
        drop_sorted = (probs.cumsum(-1) - probs) >= params.top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    return scaled


def next_tokens(
    logits: torch.Tensor,
    params: SamplingParams,
    generator: torch.Generator | None,
    banned: torch.Tensor | None = None,
) -> torch.Tensor:
    """One token per row of `logits` `(N, V)`; `banned` token ids are never chosen."""
    if banned is not None and banned.numel():
        logits = logits.index_fill(-1, banned, float("-inf"))
    if params.greedy:
        return logits.argmax(-1)
    probs = filter_logits(logits, params).softmax(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
