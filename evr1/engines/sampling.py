"""Choosing the next token from logits: a repetition penalty, then greedy, or temperature + min-p + top-k +
top-p sampling (the order vLLM's sampler applies them in)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from evr1.engines.base import SamplingParams
from evr1.models.forward import temper


def penalise(logits: torch.Tensor, seen: torch.Tensor, penalty: float) -> torch.Tensor:
    """`logits` `(N, V)` with those of the `seen` tokens (a bool mask, `(N, V)`) divided by `penalty` where
    positive and multiplied by it where not (CTRL's repetition penalty, as HF and vLLM apply it)."""
    if penalty == 1.0:
        return logits
    return torch.where(seen, torch.where(logits > 0, logits / penalty, logits * penalty), logits)


def filter_logits(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Tempered logits (`temper`) with the tokens below min-p, outside top-k and outside the top-p nucleus
    set to -inf."""
    scaled = temper(logits, params.temperature)
    if params.min_p > 0:
        probs = scaled.softmax(-1)
        scaled = scaled.masked_fill(probs < params.min_p * probs.amax(-1, keepdim=True), float("-inf"))
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


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """`text` up to the end of the first of `stops` it holds (the one that ends first), else whole."""
    ends = [text.find(s) + len(s) for s in stops if s in text]
    return text[: min(ends)] if ends else text
