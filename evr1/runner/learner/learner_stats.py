"""Metrics of the learner's optimizer steps, combined over micro-batches, workers and steps.

The loss functions report this micro-batch's share of the global loss (`loss`, `pg_loss`, ...:
summed), means over some of its tokens, and `ratio_min`/`ratio_max` (min/max). Under FSDP each
share carries the normaliser's factor W (`Normaliser.world_size`, which undoes FSDP's gradient
average), so `add` divides it out: summed over workers, the shares are the global loss, as one
worker would log it for the whole batch. Means are weighted by the tokens they are over (`Weights`)
and extremes are taken only where those tokens exist, so a micro-batch without online tokens
neither dilutes the online drift metrics nor adds its placeholder ratio 1 to the extremes.
A step's stats are gathered from every worker, merged, then the steps of one `update` are
combined: means, except `skipped_steps` (summed), `lr` (the last step's), ratio extremes
(min/max); non-finite values (a skipped step's) are left out of means. The staleness of a
batch's rows (`stale_counts`, `stale_metrics`) is counted per row and token over the whole batch,
summed over workers: the same with one worker or several.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from evr1.runner.learner import distributed
from evr1.runner.learner.batching import Sample

SUMMED = frozenset({"loss", "pg_loss", "pg_loss_offline", "pg_loss_online"})
EXTREMES = {
    "ratio_min": min,
    "ratio_max": max,
    "offline/ratio_min": min,
    "offline/ratio_max": max,
    "stale/weight_max": max,
}
# drift metrics over the tokens of online rows (`evr1.algos.objective`); `offline/*` ones are over
# offline tokens with a known behaviour log-prob, `stale/*` ones over stale online rows' tokens
# with a known behaviour log-prob (decoupled-PPO weights); every other mean is over all valid tokens
ONLINE_RATIO = frozenset(
    {"clip_frac_low", "clip_frac_high", "clip_frac_dual", "approx_kl", "ratio_mean", "ratio_min", "ratio_max"}
)


@dataclass(frozen=True)
class Weights:
    """A micro-batch's token counts: valid tokens, online tokens, offline tokens with known behaviour,
    stale online tokens with known behaviour."""

    tokens: int
    online: int
    offline_known: int
    stale_known: int = 0

    def of(self, name: str) -> int:
        """How many tokens the metric `name` is a mean (or extreme) over."""
        if name.startswith("offline/"):
            return self.offline_known
        if name.startswith("stale/"):
            return self.stale_known
        return self.online if name in ONLINE_RATIO else self.tokens


@dataclass
class StepStats:
    """One worker's (or, merged, all workers') statistics of one optimizer step."""

    finite: bool = True
    sums: dict[str, float] = field(default_factory=dict)
    weighted: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (sum of value*w, sum of w)
    extremes: dict[str, float] = field(default_factory=dict)

    def add(self, loss: Tensor, metrics: Mapping[str, Tensor], weights: Weights, world_size: int = 1) -> None:
        """Record one micro-batch: its loss share and metrics, the tokens they are over, and the
        normaliser's `world_size` factor carried by its loss shares."""
        values = {"loss": float(loss.detach()), **{k: float(v) for k, v in metrics.items()}}
        for name, value in values.items():
            if name in SUMMED:
                self.sums[name] = self.sums.get(name, 0.0) + value / world_size
                continue
            tokens = weights.of(name)
            if tokens == 0:
                continue
            if name in EXTREMES:
                self.extremes[name] = EXTREMES[name](self.extremes.get(name, value), value)
            else:
                total, weight = self.weighted.get(name, (0.0, 0.0))
                self.weighted[name] = (total + value * tokens, weight + tokens)

    @classmethod
    def merge(cls, parts: Sequence[StepStats]) -> StepStats:
        out = cls(finite=all(p.finite for p in parts))
        for part in parts:
            for name, value in part.sums.items():
                out.sums[name] = out.sums.get(name, 0.0) + value
            for name, (total, weight) in part.weighted.items():
                t, w = out.weighted.get(name, (0.0, 0.0))
                out.weighted[name] = (t + total, w + weight)
            for name, value in part.extremes.items():
                out.extremes[name] = EXTREMES[name](out.extremes.get(name, value), value)
        return out

    def summary(self) -> dict[str, float]:
        if not self.finite:
            return {}
        means = {name: total / weight for name, (total, weight) in self.weighted.items() if weight > 0}
        return {**self.sums, **means, **self.extremes}


def merge_steps(steps: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The metrics of one `update` from those of its optimizer steps."""
    out: dict[str, float] = {"optimizer_steps": float(len(steps))}
    names = dict.fromkeys(name for step in steps for name in step)
    for name in names:
        values = [step[name] for step in steps if name in step]
        if name == "skipped_steps":
            out[name] = sum(values)
        elif name == "lr":
            out[name] = values[-1]
        else:
            finite = [v for v in values if math.isfinite(v)]
            if not finite:
                out[name] = math.nan
            elif name in EXTREMES:
                out[name] = EXTREMES[name](finite)
            else:
                out[name] = sum(finite) / len(finite)
    return out


def stale_counts(samples: Sequence[Sample]) -> list[float]:
    """This worker's online rows, their summed staleness, its stale rows and their unknown-behaviour tokens."""
    online = [s for s in samples if not s.offline]
    stale = [s for s in online if s.staleness > 0]
    unknown = sum(
        s.response_tokens if s.behaviour_logprobs is None else int((~torch.isfinite(s.behaviour_logprobs)).sum())
        for s in stale
    )
    return [float(len(online)), float(sum(s.staleness for s in online)), float(len(stale)), float(unknown)]


def stale_metrics(totals: Sequence[float], samples: Sequence[Sample]) -> dict[str, float]:
    """`Learner.update`'s staleness metrics from the `stale_counts` summed over workers; {} when no row is
    stale (the same answer on every worker, so all or none of them run the max's collective)."""
    online, staleness, stale, unknown = totals
    if stale == 0:
        return {}
    longest = distributed.all_reduce_max(max((s.staleness for s in samples if not s.offline), default=0))
    return {
        "stale/rows": stale,
        "stale/staleness_mean": staleness / online,
        "stale/staleness_max": float(longest),
        "stale/unknown_tokens": unknown,
    }
