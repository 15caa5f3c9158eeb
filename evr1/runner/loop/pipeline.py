"""A step's generation as the driver asks it of the rollout worker, and as a checkpoint keeps it.

The loop launches a step's generation (`Generation`: which records, how many responses each, the
weights it will run with) and collects it later: at once in the synchronous loop; with
`trainer.max_staleness = k`, up to k steps ahead, while the learners update on earlier steps (the
rollout worker runs its calls in order, so a generation launched after a weight sync uses those
weights, and one launched before uses the older ones). Generations in flight at a checkpoint were
made with weights the checkpoint no longer has, so they are stored with it (`in_flight.pt`: tensors,
numbers and strings only, read back with `weights_only=True`) and a resumed run trains on exactly
what the interrupted one would have.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evr1.runner.ray.workers import get

IN_FLIGHT = "in_flight.pt"


@dataclass
class Generation:
    """The responses asked for step `step`.

    `sampled`: the indices of the training records drawn; `kept`: those not skipped for media that failed
    earlier, with `counts[i]` responses asked for record `kept[i]`; `version`: how many policy updates the
    weights generating them hold. `refs`: the rollout worker's calls (sampling, then with ReMax one greedy
    response per record), `results` their results once collected.
    """

    step: int
    sampled: list[int]
    kept: list[int]
    counts: list[int]
    version: int
    refs: list[Any]
    results: list[Any] | None = None

    def collect(self) -> list[Any]:
        """The calls' results: each `(groups, media statistics, shown, failures)` (`RolloutWorker.generate`)."""
        if self.results is None:
            self.results = get(self.refs, self.step, "rollout worker")
        return self.results

    def to_state(self) -> dict[str, Any]:
        """The collected generation as tensors, numbers and strings (what `from_state` reads back)."""
        results = [
            {"groups": [[asdict(r) for r in group] for group in groups], "media": dict(media),
             "shown": {rid: asdict(s) for rid, s in shown.items()}, "failed": {i: asdict(f) for i, f in failed.items()}}
            for groups, media, shown, failed in self.collect()
        ]  # fmt: skip
        return {"step": self.step, "sampled": self.sampled, "kept": self.kept, "counts": self.counts,
                "version": self.version, "results": results}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Generation:
        from evr1.data.prompting import MediaFailure
        from evr1.engines.base import RolloutResult
        from evr1.rewards.contract import Shown

        results = [
            ([[RolloutResult(**r) for r in group] for group in res["groups"]], res["media"],
             {rid: Shown(**s) for rid, s in res["shown"].items()}, {i: MediaFailure(**f) for i, f in res["failed"].items()})
            for res in state["results"]
        ]  # fmt: skip
        return cls(state["step"], state["sampled"], state["kept"], state["counts"], state["version"], [], results)


def save_in_flight(folder: Path, generations: list[Generation]) -> None:
    """Store the generations in flight (collecting them first) into a checkpoint folder."""
    import torch

    torch.save([g.to_state() for g in generations], folder / IN_FLIGHT)


def load_in_flight(folder: Path) -> list[Generation]:
    """The generations a checkpoint stored (none for one taken by the synchronous loop)."""
    import torch

    path = folder / IN_FLIGHT
    return [Generation.from_state(s) for s in torch.load(path, weights_only=True)] if path.is_file() else []
