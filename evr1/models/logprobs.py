"""Per-token log-probs and entropy of responses from the last hidden states, through the LM head in chunks.

`token_scores(head, hidden, targets, mask, temperature=T, chunk_tokens=c)` gives, for every valid
response position, `log_softmax(head(h) / T)[target]` and the entropy of `softmax(head(h) / T)`
(both float32), the same numbers `gather_logprobs` and `entropy_from_logits` give from the full
tempered logits. With `chunk_tokens > 0` the valid positions go through the head `c` at a time,
and with gradients each chunk is recomputed in the backward (`torch.utils.checkpoint`, non-
reentrant), so no more than one chunk's `[c, vocab]` logits and their gradient exist at once, in
the forward or the backward; only the hidden states `[tokens, hidden]` and the head's weight
gradient are whole. `chunk_tokens == 0` makes the whole `[tokens, vocab]` logits (the unchunked
path, kept as the reference and for `TrainerSpec.logprob_chunk_tokens = 0`).

`kernel="liger"` computes the log-probs with liger-kernel's fused linear cross-entropy (Triton, CUDA
only): per-token `-CE` of `(h / T) W^T`, which never makes the logits either (the states are scaled
by 1/T, not the head, so no copy of the head is made; equal to `head(h) / T` to float rounding).
It has no entropy: a metric entropy comes from the chunked torch path without gradients, and an
entropy with gradients (an entropy bonus) keeps the torch path for both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from evr1.algos.entropy import entropy_from_logits
from evr1.models.forward import gather_logprobs, temper


def _scorer(head: Callable[[Tensor], Tensor], temperature: float, entropy: str) -> Callable[..., tuple[Tensor, ...]]:
    """The chunk function: hidden `(c, H)`, targets `(c,)` -> log-probs `(c,)` (and the entropy `(c,)`)."""

    def score(hidden: Tensor, targets: Tensor) -> tuple[Tensor, ...]:
        logits = temper(head(hidden), temperature)
        logprobs = gather_logprobs(logits, targets)
        if entropy == "off":
            return (logprobs,)
        if entropy == "grad":
            return logprobs, entropy_from_logits(logits)
        with torch.no_grad():
            return logprobs, entropy_from_logits(logits.detach())

    return score


def token_scores(
    head: Callable[[Tensor], Tensor],
    hidden: Tensor,
    targets: Tensor,
    mask: Tensor,
    *,
    temperature: float = 1.0,
    chunk_tokens: int = 0,
    entropy: str = "off",
    kernel: str = "torch",
) -> tuple[Tensor, Tensor | None]:
    """Log-probs `(B, R)` of `targets` and, unless `entropy == "off"`, the entropy `(B, R)`; 0 where `~mask`.

    `hidden (B, R, H)`: the states that predict each target (`response_hidden`). `entropy`: "off",
    "metric" (no gradient) or "grad" (differentiable, for an entropy bonus). `kernel`: "torch" or
    "liger" (see the module doc). Float32 results.
    """
    if chunk_tokens < 0:
        raise ValueError(f"chunk_tokens must be >= 0, got {chunk_tokens}")
    if entropy not in ("off", "metric", "grad"):
        raise ValueError(f"entropy must be 'off', 'metric' or 'grad', got {entropy!r}")
    if kernel not in ("torch", "liger"):
        raise ValueError(f"kernel must be 'torch' or 'liger', got {kernel!r}")
    if kernel == "liger" and entropy != "grad":
        logprobs = _liger_logprobs(head, hidden[mask], targets[mask], temperature)
        placed = logprobs.new_zeros(mask.shape).masked_scatter(mask, logprobs)
        if entropy == "off":
            return placed, None
        with torch.no_grad():
            return placed, token_scores(head, hidden, targets, mask, temperature=temperature,
                                        chunk_tokens=chunk_tokens, entropy="metric")[1]
    score = _scorer(head, temperature, entropy)
    if chunk_tokens == 0:
        return _placed([score(hidden, targets)], mask, entropy, whole=True)
    flat_hidden, flat_targets = hidden[mask], targets[mask]
    track = torch.is_grad_enabled() and flat_hidden.requires_grad
    parts = [
        checkpoint(score, h, t, use_reentrant=False) if track else score(h, t)
        for h, t in zip(flat_hidden.split(chunk_tokens), flat_targets.split(chunk_tokens))
    ]
    return _placed(parts, mask, entropy, whole=False)


def _liger_logprobs(head: Any, hidden: Tensor, targets: Tensor, temperature: float) -> Tensor:
    """`log_softmax(head(hidden) / T)[targets]` `(N,)` by liger-kernel's fused linear cross-entropy (CUDA)."""
    from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy

    scaled = hidden if temperature in (0.0, 1.0) else hidden / temperature
    loss = liger_fused_linear_cross_entropy(
        scaled, head.weight, targets, getattr(head, "bias", None), reduction="none", accum_dtype=torch.float32
    )
    return -loss.float()


def liger_problem(device: torch.device) -> str | None:
    """Why the liger kernel cannot run on `device` here (None when it can)."""
    import importlib.util

    if importlib.util.find_spec("liger_kernel") is None:
        return "TrainerSpec.logprob_kernel='liger' needs liger-kernel: pip install 'evr1[liger]' (a GPU extra)"
    if device.type != "cuda":
        return f"TrainerSpec.logprob_kernel='liger' runs on CUDA only (Triton); this learner is on {device.type}: use 'torch'"
    return None


def _placed(parts: list[tuple[Tensor, ...]], mask: Tensor, entropy: str, *, whole: bool) -> tuple[Tensor, Tensor | None]:
    """The results in `(B, R)`, 0 at masked positions: `parts` is one grid `(B, R)` (`whole`) or chunks of the
    valid positions in order."""
    columns = [torch.cat([p[k] for p in parts]) if parts else mask.new_zeros(0, dtype=torch.float32)
               for k in range(1 if entropy == "off" else 2)]
    if whole:
        placed = [c.masked_fill(~mask, 0.0) for c in columns]
    else:
        placed = [c.new_zeros(mask.shape).masked_scatter(mask, c) for c in columns]
    return placed[0], (placed[1] if entropy != "off" else None)
