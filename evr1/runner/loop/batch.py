"""One training step's data as it flows through the phases of `Trainer.step` (`evr1.runner.loop.train`).

A `StepBatch` starts as the step's records whose media loaded and the responses sampled for them.
The phases add to it, each returning a new batch (rows are frozen; nothing is changed in place):
mixing makes its `rows`, one per trajectory of every group (a mixer's curated responses among them);
the reward fills each row's reward input and output, the reference pass its `ref_logprobs`, the
advantage estimator its `advantages` and whether it trains (`trains`: dynamic sampling leaves some
groups out), and the old-policy pass the `old_logprobs` of the rows that train. `items` is what the
workers are sent, one `TrainItem` per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evr1.runner.ray.actors import TrainItem

if TYPE_CHECKING:
    from torch import Tensor

    from evr1.data.mixers import Trajectory
    from evr1.data.records import Record
    from evr1.engines.base import RolloutResult
    from evr1.rewards import RewardInput, RewardOutput
    from evr1.rewards.contract import Shown
    from evr1.runner.loop.reward_phase import SampledRewards


@dataclass(frozen=True)
class Row:
    """One trajectory of the step: the response to `StepBatch.records[group]`, and what the phases found."""

    group: int
    trajectory: Trajectory
    reward_input: RewardInput | None = None
    reward: RewardOutput | None = None
    ref_logprobs: Tensor | None = None  # (R,) under the KL reference, when KL is on
    advantages: Tensor | None = None  # (R,); zeros on a row that does not train
    trains: bool = True  # False: its group was dropped by dynamic sampling
    old_logprobs: Tensor | None = None  # (R,) under the weights the update starts from (rows that train)

    @property
    def offline(self) -> bool:
        return self.trajectory.offline


@dataclass(frozen=True)
class StepBatch:
    """The step's data. `records[g]` is group g's record; `sampled[g]` the responses the policy sampled for it
    (a mixer may keep only some); `shown`, per record id, what the model was shown of it; `staleness`, the
    policy updates since the weights that sampled them; with ReMax `greedy[g]`, one greedy response to
    `records[g]`, and once scored, `baselines[g]` its shaped score. `sampled_rewards`: every sampled
    response's reward, when a mixer needed them before mixing (the reward phase reuses them)."""

    step: int
    records: list[Record]
    sampled: list[list[RolloutResult]]
    shown: dict[str, Shown]
    staleness: int
    greedy: list[RolloutResult] | None = None
    rows: list[Row] = field(default_factory=list)
    sampled_rewards: SampledRewards | None = None
    baselines: list[float] | None = None

    def with_rows(self, rows: Iterable[Row], **changes: Any) -> StepBatch:
        """This batch with these rows (and any other field `changes`)."""
        return replace(self, rows=list(rows), **changes)

    @property
    def training(self) -> list[Row]:
        """The rows the update trains on."""
        return [row for row in self.rows if row.trains]

    def items(self, rows: Sequence[Row] | None = None) -> list[TrainItem]:
        """What the workers are sent for `rows` (default: every row), in order."""
        return [self.item(row) for row in (self.rows if rows is None else rows)]

    def item(self, row: Row) -> TrainItem:
        t = row.trajectory
        return TrainItem(
            self.records[row.group], t.token_ids, t.logprobs, row.advantages, t.offline, row.group, row.ref_logprobs,
            staleness=0 if t.offline else self.staleness, old_logprobs=row.old_logprobs,
            policy_mask=t.policy_mask, response_mm=t.response_mm,
        )  # fmt: skip


def response_metrics(rows: Sequence[Row]) -> dict[str, float]:
    """Mean length, share ended by a stop token, and total tokens of the step's responses."""
    import torch

    lengths = torch.tensor([len(r.trajectory) for r in rows], dtype=torch.float32)
    stopped = sum(r.trajectory.finish_reason == "stop" for r in rows) / len(rows)
    return {"response/length": float(lengths.mean()), "response/stop_frac": stopped,
            "tokens/response": float(lengths.sum())}
