"""Loss aggregation: per-token losses -> one scalar, exact under micro-batching and data parallelism.

The learner counts the normaliser ONCE per optimizer step over the whole global batch (every
micro-batch on every worker): `Normaliser.of(mask)` per micro-batch, summed (and all-reduced
across workers). Each micro-batch's `aggregate(...)` then uses that global normaliser, so the
sum of micro-batch losses is the loss of the whole batch and its gradient is the same whatever
the split. Every mode is linear in the token losses, so terms (policy, KL, entropy) may be
aggregated separately and added.

Modes (`AlgoSpec.loss_agg`), with N_tok valid tokens and N_seq non-empty rows in the global batch:
- `token_mean`: sum of token losses / N_tok.
- `seq_mean_token_mean`: sum over rows of (row's token mean) / N_seq.
- `seq_mean_token_sum`: sum of token losses / N_seq.
- `constant` (Dr. GRPO): sum of token losses / (loss_agg_constant * N_seq).

If the data-parallel wrapper AVERAGES gradients over W workers (DDP, FSDP), build the
normaliser with `world_size=W`: the loss is multiplied by W to undo that average.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from torch import Tensor

from evr1.algos.masked import masked_mean, masked_sum

LossAgg = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"]


@dataclass(frozen=True)
class Normaliser:
    """Counts over the global batch: valid tokens, non-empty rows, data-parallel workers."""

    tokens: float
    sequences: float
    world_size: int = 1

    @classmethod
    def of(cls, response_mask: Tensor, world_size: int = 1) -> Normaliser:
        """The counts of one (micro-)batch; add the normalisers of all micro-batches and workers."""
        valid = response_mask.bool()
        return cls(float(valid.sum()), float(valid.any(-1).sum()), world_size)

    def __add__(self, other: Normaliser) -> Normaliser:
        if self.world_size != other.world_size:
            raise ValueError(f"cannot add normalisers with world sizes {self.world_size} and {other.world_size}")
        return replace(self, tokens=self.tokens + other.tokens, sequences=self.sequences + other.sequences)


def aggregate(
    token_loss: Tensor,
    response_mask: Tensor,
    *,
    mode: LossAgg,
    normaliser: Normaliser,
    constant: float | None = None,
) -> Tensor:
    """This micro-batch's share of the global loss (0 when the batch has no valid token)."""
    sequences = max(normaliser.sequences, 1.0)
    if mode == "token_mean":
        loss = masked_sum(token_loss, response_mask) / max(normaliser.tokens, 1.0)
    elif mode == "seq_mean_token_mean":
        loss = masked_mean(token_loss, response_mask, dim=-1).sum() / sequences
    elif mode == "seq_mean_token_sum":
        loss = masked_sum(token_loss, response_mask) / sequences
    elif mode == "constant":
        if constant is None or constant <= 0:
            raise ValueError(f"loss_agg='constant' needs a positive loss_agg_constant, got {constant}")
        loss = masked_sum(token_loss, response_mask) / (constant * sequences)
    else:
        raise ValueError(f"unknown loss aggregation {mode!r}")
    return loss * normaliser.world_size
