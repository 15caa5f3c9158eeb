"""The learner's input (`Sample`) and how a worker's samples are cut into mini- and micro-batches.

A micro-batch is what one forward/backward pass sees. Its cost is its padded size: rows times
(longest prompt + longest response), prompt lengths counting the expanded media placeholders. Micro-batches
are packed greedily from the longest sample down so that similar lengths share a batch (little
padding) and no batch exceeds the token budget; a sample longer than the budget gets a batch of
its own. Mini-batches (one optimizer step each) are chosen by `group_id`, so a global batch
sharded over workers in any way splits into the same mini-batches on every worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from evr1.models.prompts import Prompt


@dataclass
class Sample:
    """One response of one group, ready for the learner.

    `advantages` are token-level (from the `advantages` registry). `behaviour_logprobs` are the
    log-probs of the policy that produced the response: the sampler's for online rows, the
    curated data's for offline rows (NaN where unknown; None = unknown everywhere). Online rows
    are trained against the old-policy log-probs the learner recomputes at the start of a step;
    offline rows against their behaviour log-probs (see `evr1.algos.offpolicy`).
    `ref_logprobs` are the reference model's, needed when KL is on.
    """

    prompt: Prompt
    response_ids: Tensor  # (R,) int64
    advantages: Tensor  # (R,)
    behaviour_logprobs: Tensor | None = None  # (R,)
    offline: bool = False
    group_id: int = 0
    ref_logprobs: Tensor | None = None  # (R,)

    def __post_init__(self) -> None:
        length = int(self.response_ids.shape[0])
        for name in ("advantages", "behaviour_logprobs", "ref_logprobs"):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != (length,):
                raise ValueError(
                    f"sample of group {self.group_id}: {name} has shape {tuple(value.shape)}, "
                    f"expected ({length},) like response_ids"
                )

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)

    @property
    def response_tokens(self) -> int:
        return int(self.response_ids.shape[0])


def padded_cost(samples: Sequence[Sample]) -> int:
    """Tokens a forward pass over `samples` computes: rows x (longest prompt + longest response)."""
    if not samples:
        return 0
    return len(samples) * (max(s.prompt_tokens for s in samples) + max(s.response_tokens for s in samples))


def micro_batches(samples: Sequence[Sample], budget: int) -> list[list[int]]:
    """Indices of `samples` grouped into micro-batches whose `padded_cost` stays within `budget`.

    Every index appears exactly once. Longest samples first; a sample over the budget alone.
    """
    if budget <= 0:
        raise ValueError(f"micro-batch token budget must be positive, got {budget}")
    order = sorted(range(len(samples)), key=lambda i: (-(samples[i].prompt_tokens + samples[i].response_tokens), i))
    batches: list[list[int]] = []
    current: list[int] = []
    width_p = width_r = 0
    for i in order:
        p, r = samples[i].prompt_tokens, samples[i].response_tokens
        wp, wr = max(width_p, p), max(width_r, r)
        if current and (len(current) + 1) * (wp + wr) > budget:
            batches.append(current)
            current, wp, wr = [], p, r
        current.append(i)
        width_p, width_r = wp, wr
    if current:
        batches.append(current)
    return batches


def mini_batches(samples: Sequence[Sample], count: int) -> list[list[int]]:
    """`count` lists of indices: mini-batch j holds the samples with `group_id % count == j` (may be empty)."""
    if count <= 0:
        raise ValueError(f"the number of mini-batches must be positive, got {count}")
    parts: list[list[int]] = [[] for _ in range(count)]
    for i, sample in enumerate(samples):
        parts[sample.group_id % count].append(i)
    return parts


def stack_rows(values: Sequence[Tensor | None], width: int, missing: float = float("nan")) -> Tensor | None:
    """Right-pad 1-D per-row tensors to `(B, width)` float32 with zeros; None when all are None.

    A row given as None among others is filled with `missing` (NaN: unknown, so it is never
    mistaken for a value).
    """
    if all(v is None for v in values):
        return None
    out = torch.zeros(len(values), width, dtype=torch.float32)
    for row, value in enumerate(values):
        if value is None:
            out[row] = missing
        else:
            out[row, : value.shape[0]] = value.float()
    return out
