"""A step's generation as the driver asks it of the rollout worker, as a checkpoint keeps it, and the
pipeline of generations launched ahead.

The loop launches a step's generation (`Generation`: which records, how many responses each, the
weights it will run with) and collects it later: at once in the synchronous loop; with
`trainer.max_staleness = k`, up to k steps ahead, while the learners update on earlier steps (the
rollout worker runs its calls in order, so a generation launched after a weight sync uses those
weights, and one launched before uses the older ones). Generations in flight at a checkpoint were
made with weights the checkpoint no longer has, so they are stored with it (`in_flight.pt`: tensors,
numbers and strings only, read back with `weights_only=True`) and a resumed run trains on exactly
what the interrupted one would have.

`Pipeline` holds the loop's pipelining state in one place: the generations launched and not yet
trained on, and which policy update the rollout worker's weights hold.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.runner.ray.workers import Workers, get

if TYPE_CHECKING:
    from evr1.data.prompting import MediaFailure
    from evr1.engines.base import RolloutResult
    from evr1.rewards.contract import Shown

IN_FLIGHT = "in_flight.pt"


@dataclass(frozen=True)
class Responses:
    """One rollout call's answer (`RolloutWorker.generate`): `groups[i]`, the responses to record i of the call
    (empty where its media failed); `media`, the media statistics and `timing/generate`; `shown`, per record id
    what the model was shown; `failed`, by record index, the records whose media cannot be loaded."""

    groups: list[list[RolloutResult]]
    media: dict[str, float]
    shown: dict[str, Shown]
    failed: dict[int, MediaFailure]


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

    def responses(self) -> tuple[Responses, Responses | None]:
        """The sampled responses, and with ReMax the greedy ones (one per record; None otherwise)."""
        sampled, *greedy = (Responses(*result) for result in self.collect())
        return sampled, greedy[0] if greedy else None

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


@dataclass
class Pipeline:
    """The generations in flight and the weights the rollout worker holds.

    `pending`: the generations launched and not yet trained on, in step order (the last launched is step
    `launched`); `updates`: the policy updates made; `synced`: those in the weights sent to the rollout worker;
    `syncing`: the pipelined weight sync not yet waited for. With `max_staleness = k > 0` the generations of
    the next k steps are launched ahead and weights are queued behind them (`sync`); with 0 each step's
    generation is launched when the step starts and the sync is waited for.
    """

    max_staleness: int
    steps: int
    pending: deque[Generation] = field(default_factory=deque)
    launched: int = 0
    updates: int = 0
    synced: int = 0
    syncing: list[Any] = field(default_factory=list)

    def fill(self, step: int, launch: Callable[[int], Generation]) -> None:
        """After `step`, launch the generations of the steps up to `step + 1 + max_staleness`."""
        last = min(step + 1 + self.max_staleness, self.steps)
        for ahead in range(max(self.launched, step) + 1, last + 1):
            self.pending.append(launch(ahead))
            self.launched = ahead

    def next(self, step: int, launch: Callable[[int], Generation]) -> Generation:
        """Step `step`'s generation: launched ahead, or launched now."""
        return self.pending.popleft() if self.pending else launch(step)

    def staleness(self, generation: Generation) -> int:
        """Policy updates made since the weights that sampled `generation`'s responses."""
        return self.updates - generation.version

    def sync_now(self, workers: Workers, step: int) -> None:
        """Send the policy's weights to the rollout worker and wait until it holds them."""
        workers.sync_weights(step)
        self.synced = self.updates

    def sync(self, workers: Workers, step: int) -> None:
        """After an update: the weights to the rollout worker; pipelined, queued after the generations launched
        before (the previous sync is waited for first, to report its failure)."""
        self.wait(step)
        if self.max_staleness:
            self.syncing = workers.send_weights()
        else:
            workers.sync_weights(step)
        self.synced = self.updates

    def wait(self, step: int) -> None:
        """Wait for the weight sync in flight, if any (its failure raised naming `step`)."""
        get(self.syncing, step, "weight sync (learner to rollout worker)")

    def restore(self, step: int, updates: int, in_flight: list[Generation]) -> None:
        """Continue after checkpoint `step`: `updates` made, `in_flight` the generations it stored."""
        self.updates = updates
        self.pending = deque(in_flight)
        self.launched = step + len(self.pending)
