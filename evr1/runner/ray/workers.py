"""The driver's handle on a run's Ray actors: start-up and placement, and the calls the loop makes on them.

`start_workers` places every actor in one placement group (refused when the cluster cannot hold
them), rendezvouses the learners on learner 0's node, checks that every worker sees the run's
files, and records where each landed. `Workers` then gives the loop one method per phase (reference
log-probs, old-policy log-probs, update, weight sync), each naming the step and the worker when it fails.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evr1.errors import ConfigError, Evr1Error
from evr1.experiment import Experiment
from evr1.experiment_files import ExperimentSource
from evr1.run_dir import record_info
from evr1.runner.ray.cluster import cluster_address_label


class TrainingError(Evr1Error):
    """A worker failed, or the data did; the message names the step (and a worker's traceback).

    `metrics`: what the failing step had measured, logged before the run stops.
    """

    metrics: dict[str, float] | None = None


def get(refs: Any, step: int, what: str) -> Any:
    """`ray.get(refs)`, a worker's failure raised as a `TrainingError` naming the step and `what` failed."""
    import ray

    try:
        return ray.get(refs)
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "traceback_str", None) or "".join(traceback.format_exception(exc))
        raise TrainingError(f"step {step}: the {what} failed:\n{cause}") from None


def shard_groups(items: Sequence[Any], workers: int, mini_batches: int) -> list[list[Any]]:
    """Whole groups per worker, so that every worker holds part of every mini-batch.

    The learner's mini-batch j holds the groups with `group_id % mini_batches == j`; sharding by
    `(group_id // mini_batches) % workers` spreads the groups of each mini-batch over the workers.
    """
    return [[item for item in items if (item.group_id // mini_batches) % workers == k] for k in range(workers)]


def in_order(items: Sequence[Any], shards: Sequence[Sequence[Any]], results: Sequence[Sequence[Any]]) -> list[Any]:
    """Per-item results of calls made on `shards` of `items` (each result in its shard's order), in `items`' order."""
    position = {id(item): k for k, item in enumerate(items)}
    out: list[Any] = [None] * len(items)
    for shard, values in zip(shards, results):
        for item, value in zip(shard, values):
            out[position[id(item)]] = value
    return out


def reference_share(num_gpus: int, gpus: Any, reference: bool) -> tuple[tuple[float, ...], float]:
    """The learners' GPU requests and the reference worker's (0 on CPU runs or without one: `reference`
    is False without KL, and with LoRA, whose reference is the learners' own base).

    The reference takes a whole GPU when one is left over, else half of learner 0's share (it
    lives beside learner 0: Ray counts the fractions, the memory is shared).
    """
    learners = tuple(gpus.learners)
    if num_gpus == 0 or not reference:
        return learners, 0.0
    if num_gpus - gpus.rollout - sum(learners) >= 1:
        return learners, 1.0
    half = learners[0] / 2
    return (half, *learners[1:]), half


@dataclass
class Workers:
    """A run's actors (`reference` is None without a separate reference model) and where each runs."""

    exp: Experiment
    learners: list[Any]
    rollout: Any
    reference: Any
    rewarders: list[Any]
    placed: dict[str, dict[str, str]]

    def _shards(self, items: Sequence[Any]) -> list[list[Any]]:
        """Each learner's share of `items`, as `shard_groups` cuts it (the same for every pass of a step)."""
        return shard_groups(items, len(self.learners), self.exp.trainer.mini_batches)

    def update(self, items: Sequence[Any], step: int) -> dict[str, float]:
        """One optimizer update of every learner on its shard of `items` (with their `old_logprobs`); learner 0's
        metrics."""
        return get([w.update.remote(s) for w, s in zip(self.learners, self._shards(items))], step, "learner")[0]

    def old_logprobs(self, items: Sequence[Any], step: int) -> list[Any]:
        """Each item's log-probs under the learners' current weights (the old policy of the coming update), in
        order; every learner scores the shard it will train on."""
        shards = self._shards(items)
        calls = [w.old_logprobs.remote(s) for w, s in zip(self.learners, shards)]
        return in_order(items, shards, get(calls, step, "learner (old log-probs)"))

    def reference_logprobs(self, items: Sequence[Any], step: int) -> list[Any]:
        """Each item's KL reference log-probs, in order: from the reference worker, or with LoRA from the learners
        with their adapters off, each replica scoring the groups it trains on (their media are then read once)."""
        if self.reference is not None:
            shards, calls, what = [list(items)], [self.reference.logprobs], "reference worker"
        else:
            shards = self._shards(items)
            calls, what = [w.reference_logprobs for w in self.learners], "learner (reference log-probs)"
        return in_order(items, shards, get([call.remote(shard) for call, shard in zip(calls, shards)], step, what))

    def send_weights(self) -> list[Any]:
        """Start sending the policy's weights to the rollout worker, by reference (never through the driver);
        returns the calls' refs. Replicated learners are equal, so the first sends them; sharded ones all join
        the gather (rank 0 returns them). The rollout worker takes them after the calls queued before."""
        holders = self.learners if self.exp.resources.learner_sharding == "fsdp" else self.learners[:1]
        refs = [w.weights.remote() for w in holders]
        return [self.rollout.load_weights.remote(refs[0]), *refs[1:]]

    def sync_weights(self, step: int) -> None:
        """Send the policy's weights to the rollout worker and wait until it holds them."""
        get(self.send_weights(), step, "weight sync (learner to rollout worker)")

    def learner_dir_seen(self, directory: Path, what: str) -> None:
        """Refuse when learner 0 wrote `directory` (a checkpoint, the export) where the driver does not see it."""
        if not directory.is_dir():  # written by rank 0 on its node
            raise TrainingError(f"learner 0 wrote its {what} to {directory} on node {self.placed['learner 0']['ip']},"
                                " but the driver does not see it: the run directory must be shared storage")


def start_workers(exp: Experiment, run_dir: Path, roots: Mapping[str, Path], source: ExperimentSource | None,
                  problem_types: Sequence[str] | None = None) -> Workers:
    """Start and place the run's actors (see the module docstring); `roots`: split name -> its data root;
    `problem_types`: those of the run's records, the rewards the reward workers warm up (None: every one)."""
    import ray

    from evr1.engines.vllm_adapter import gpu_requests
    from evr1.runner.ray.actors import LearnerWorker, ReferenceWorker, RewardWorker, RolloutWorker
    from evr1.runner.ray.cluster import Ask, Placement, cluster_nodes, rendezvous_address
    from evr1.runner.ray.worker_paths import absolute_source, for_workers

    res = exp.resources
    spec, source = for_workers(exp), absolute_source(source)  # workers run in their node's folder
    gpus = gpu_requests(res, exp.rollout)  # colocated: learner 0 and the engine share a GPU (one bundle)
    cpu = 0.5 if res.num_gpus == 0 else 1
    roots = {name: Path(root).resolve() for name, root in roots.items()}
    # with LoRA the KL reference is the learners' own base (adapters off): no second copy of the model
    separate = exp.algo.kl.enabled and exp.model.lora is None
    learner_gpus, reference_gpus = reference_share(res.num_gpus, gpus, separate)
    asks = [Ask(f"learner {rank}", cpu, learner_gpus[rank]) for rank in range(res.learner_workers)]
    asks.append(Ask("rollout", cpu, gpus.rollout, "learner 0" if gpus.colocated else None))
    if separate:
        asks.append(Ask("reference", cpu, reference_gpus, "learner 0" if 0 < reference_gpus < 1 else None))
    asks += [Ask(f"reward {k}", 0.25) for k in range(res.reward_workers)]
    placement = Placement(asks, res.placement, res.placement_timeout_s)
    ask = {a.role: a for a in asks}

    def actor(cls: type, role: str) -> Any:
        return ray.remote(num_cpus=ask[role].cpus, num_gpus=ask[role].gpus)(cls).options(
            scheduling_strategy=placement.strategy(role)
        )

    address = rendezvous_address(placement, "learner 0") if res.learner_workers > 1 else ""
    learners = [
        actor(LearnerWorker, f"learner {rank}").remote(spec, roots["train"], rank, res.learner_workers, address, source)
        for rank in range(res.learner_workers)
    ]
    rollout = actor(RolloutWorker, "rollout").remote(spec, roots, source)
    reference = actor(ReferenceWorker, "reference").remote(spec, roots["train"], source) if separate else None
    if exp.algo.kl.enabled:
        base = "the learners' base model, LoRA adapters off"
        print(f"KL reference: {'a reference worker' if reference is not None else base}")
    rewarders = [actor(RewardWorker, f"reward {k}").remote(spec, source, problem_types) for k in range(res.reward_workers)]
    workers = {**{f"learner {r}": w for r, w in enumerate(learners)}, "rollout": rollout,
               **({"reference": reference} if reference else {}),
               **{f"reward {k}": w for k, w in enumerate(rewarders)}}  # fmt: skip
    placed = check_storage(workers, run_dir, spec, roots.values(), source)
    nodes = cluster_nodes()
    print(f"cluster: {len(nodes)} node(s), address {cluster_address_label(res)}; placement {res.placement}: "
          + ", ".join(f"{role} on {w['ip']}" for role, w in placed.items()))
    record_info(run_dir, cluster={"nodes": nodes, "actors": placed})
    return Workers(exp, learners, rollout, reference, rewarders, placed)


def check_storage(workers: Mapping[str, Any], run_dir: Path, exp: Experiment, roots: Iterable[Path],
                  source: Any) -> dict[str, dict[str, str]]:
    """Where each worker runs; refuse unless every one sees the run's files and writes the run directory
    where the driver reads it."""
    from evr1.runner.ray.worker_paths import needed, refusal

    paths, run = needed(exp, roots, source), str(Path(run_dir).resolve())
    placed = dict(zip(workers, get([w.where.remote() for w in workers.values()], 0, "worker (start)")))
    checks = get([w.check_storage.remote(paths, run) for w in workers.values()], 0, "worker (storage check)")
    problem = refusal({f"{role} on node {placed[role]['ip']}": c for role, c in zip(workers, checks)}, run_dir)
    if problem:
        raise ConfigError(problem)
    return placed
