"""The engine–learner mismatch of one update: measured on fresh online rows, corrected on online rows.

`step_correction(samples, old, spec)` runs on every learner worker right after the old-policy
log-probs, before the optimizer steps; every worker runs the same collectives whatever its shard
(empty included). From each online sample's engine log-probs (`Sample.behaviour_logprobs`) and
its old-policy log-probs it gives (`evr1.algos.rollout_correction`):
- the samples to train on: with an importance level, each online sample carries its
  `rollout_weights` (R,); with rejection rules or a veto, its `loss_mask` (R,) drops the rejected
  tokens (the loss normaliser then counts only the kept ones);
- the metrics of the global batch: `mismatch/<metric>` over the fresh online rows (staleness 0:
  the engine's numerics alone, not a policy update), and `mismatch/<problem_type>/<metric>` for
  the headline metrics (`HEADLINE`); with a correction on, `rollout_corr/<metric>`.
Offline rows are left out of all of it: their behaviour policy is not the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import Tensor

from evr1.algos.rollout_correction import Correction, MismatchStats, correct, engine_tokens
from evr1.runner.learner import distributed
from evr1.runner.learner.batching import Sample, stack_rows
from evr1.specs import RolloutCorrectionSpec

HEADLINE = ("abs_diff_mean", "k1", "k3", "ratio_outside_frac")  # reported per problem type too
_ROW_FRACTIONS = ("rejected_row_frac", "veto_row_frac")  # averaged over rows, the other fractions over tokens


def _padded(samples: Sequence[Sample], old: Sequence[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    """Old and engine log-probs `[B, T]` and the tokens both know (`engine_tokens`); T >= 1 even when B = 0."""
    width = max([1, *(s.response_tokens for s in samples)])
    lengths = torch.tensor([s.response_tokens for s in samples], dtype=torch.long)
    mask = torch.arange(width)[None, :] < lengths[:, None]
    old_rows = stack_rows(list(old), width)
    mu = stack_rows([s.behaviour_logprobs for s in samples], width)
    if old_rows is None or mu is None:
        empty = torch.zeros(len(samples), width)
        return empty, empty, torch.zeros_like(mask)
    offline = torch.tensor([s.offline for s in samples], dtype=torch.bool)
    return old_rows, mu, engine_tokens(mask, mu, offline)


def _mismatch_metrics(samples: Sequence[Sample], old_rows: Tensor, mu: Tensor, tokens: Tensor) -> dict[str, float]:
    """`mismatch/...` of the fresh online rows of every worker (summed stats, gathered)."""
    fresh = torch.tensor([s.staleness == 0 for s in samples], dtype=torch.bool)[:, None] & tokens
    local: dict[str, MismatchStats] = {"": MismatchStats.of(old_rows, mu, fresh)}
    for kind in sorted({s.problem_type for s in samples if s.problem_type}):
        rows = torch.tensor([s.problem_type == kind for s in samples], dtype=torch.bool)[:, None]
        local[kind] = MismatchStats.of(old_rows, mu, fresh & rows)
    merged: dict[str, MismatchStats] = {}
    for worker in distributed.all_gather_objects(local):
        for kind, stats in worker.items():
            merged[kind] = merged.get(kind, MismatchStats()) + stats
    metrics = {f"mismatch/{name}": value for name, value in merged.pop("").metrics().items()}
    for kind, stats in merged.items():
        metrics.update({f"mismatch/{kind}/{name}": v for name, v in stats.metrics().items() if name in HEADLINE})
    return metrics


def _correction_metrics(correction: Correction, tokens: Tensor) -> dict[str, float]:
    """`rollout_corr/...` of the global batch: token- (or row-) weighted means over workers, `is_max` the max."""
    counts = (float(tokens.sum()), float(tokens.any(-1).sum()))
    merged: dict[str, float] = {}
    gathered = distributed.all_gather_objects((correction.metrics, counts))
    for name in correction.metrics:
        if name in ("is_max", "is_batch_norm_factor"):  # the same factor on every worker
            merged[name] = max([m[name] for m, n in gathered if n[0]] or [1.0])
            continue
        by = 1 if name in _ROW_FRACTIONS else 0
        total = sum(n[by] for _, n in gathered)
        merged[name] = sum(m[name] * n[by] for m, n in gathered) / total if total else 0.0
    return {f"rollout_corr/{name}": value for name, value in merged.items()}


def step_correction(
    samples: Sequence[Sample], old: Sequence[Tensor], spec: RolloutCorrectionSpec
) -> tuple[list[Sample], dict[str, float]]:
    """The samples to train on (with their rollout weights and loss masks) and the mismatch metrics."""
    old_rows, mu, tokens = _padded(samples, old)
    metrics = _mismatch_metrics(samples, old_rows, mu, tokens)
    if not spec.corrects:
        return list(samples), metrics

    def reduce_sum(values: list[float]) -> list[float]:
        return distributed.all_reduce_sum(torch.tensor(values, dtype=torch.float64)).tolist()

    correction = correct(old_rows, mu, tokens, spec, reduce_sum=reduce_sum)
    metrics.update(_correction_metrics(correction, tokens))
    out = []
    for row, sample in enumerate(samples):
        length, changes = sample.response_tokens, {}
        if sample.offline:
            out.append(sample)
            continue
        if correction.weights is not None:
            changes["rollout_weights"] = correction.weights[row, :length].float().clone()
        if spec.rejection or spec.veto_below is not None:
            changes["loss_mask"] = correction.keep[row, :length].clone()
        out.append(replace(sample, **changes))
    return out, metrics
