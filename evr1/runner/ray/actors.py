"""The workers of a run. Plain classes: the driver wraps them as Ray actors (`ray.remote`).

- `RolloutWorker` holds the rollout engine and builds prompts (media from the cache); a record whose
  media cannot be loaded is returned as a `MediaFailure`, not raised, so the driver can drop it.
- `LearnerWorker` holds one data-parallel shard of the learner: the old-policy log-probs of its
  shard, then the update. It builds its own prompts, so each record's media are read once per step
  per worker and reused by every pass. With LoRA it also gives the KL reference log-probs: its own
  frozen base, adapters off.
- `ReferenceWorker` holds the frozen reference model when KL is on (without LoRA).
- `RewardWorker` scores responses with the reward router.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.data.records import Record
from evr1.experiment import Experiment
from evr1.experiment_files import ExperimentSource, import_source

if TYPE_CHECKING:
    from evr1.data.prompting import MediaFailure


def _import(source: ExperimentSource | None) -> None:
    """Import the experiment's own module (the file the driver loaded): what it registers, e.g. a reward
    with `@REWARDS.register`, must exist in this worker process before anything is built from a registry."""
    if source is not None:
        import_source(source)


def _threads(exp: Experiment) -> None:
    import torch

    torch.set_num_threads(exp.resources.torch_threads)


def _prompter(exp: Experiment, processor: Any, root: Path):
    from evr1.data.loader import MediaLoader
    from evr1.data.prompting import RecordPrompter

    data = exp.data
    loader = MediaLoader(data.video, data.image, data.cache, processor, root)
    return RecordPrompter(processor, loader, data.prompt, max_tokens=exp.rollout.max_prompt_tokens)


def default_engine() -> str:
    """vLLM on a CUDA machine where it is installed, else the HF engine."""
    import importlib.util

    import torch

    return "vllm" if torch.cuda.is_available() and importlib.util.find_spec("vllm") else "hf"


@dataclass
class TrainItem:
    """One response to learn from, as the driver sends it (the worker builds the prompt)."""

    record: Record
    response_ids: Any  # (R,) int64
    behaviour_logprobs: Any  # (R,) float32, NaN where unknown
    advantages: Any  # (R,) float32
    offline: bool
    group_id: int
    ref_logprobs: Any = None
    staleness: int = 0
    old_logprobs: Any = None  # (R,) float32 (`LearnerWorker.old_logprobs`); the update needs them
    policy_mask: Any = None  # (R,) bool for a multi-turn response: the loss falls on the policy's tokens only
    response_mm: Any = None  # a multi-turn response's tool-reply media (`MM_KEYS`), after the prompt's


class Placed:
    """What every actor answers: where it runs, and what of the run's storage it cannot use."""

    def where(self) -> dict[str, str]:
        from evr1.runner.ray.cluster import node_address

        return node_address()

    def check_storage(self, paths: Sequence[str], run_dir: str) -> tuple[list[str], str | None]:
        from evr1.runner.ray.worker_paths import unseen

        return unseen(paths, run_dir)


class RolloutWorker(Placed):
    """Generates responses for records of a split, and takes new weights from the learner."""

    def __init__(self, exp: Experiment, roots: dict[str, Path], source: ExperimentSource | None = None) -> None:
        from evr1.models import load_processor
        from evr1.registry import ENGINES

        _import(source)
        _threads(exp)
        self.exp = exp
        self.processor = load_processor(exp.model)
        self.engine = ENGINES.get(exp.rollout.engine or default_engine()).from_spec(exp.model, exp.rollout)
        if exp.eval.every_steps and exp.eval.benchmarks:  # refused now, not at the first evaluation
            from evr1.eval.api import require_choices
            from evr1.registry import BENCHMARKS

            require_choices([BENCHMARKS.get(b) for b in exp.eval.benchmarks], self.engine, exp.eval.protocol)
        self.prompters = {split: _prompter(exp, self.processor, root) for split, root in roots.items()}

    def generate(
        self, split: str, records: Sequence[Record], counts: Sequence[int], params: Any
    ) -> tuple[list[list[Any]], dict, dict, dict[int, MediaFailure]]:
        """`counts[i]` responses for record i (grouped per record), media statistics and the seconds spent
        (`timing/generate`), per record id what the model was shown (`evr1.rewards.contract.Shown`: frame times,
        sizes, box units; for the rewards), and by record index the records whose media cannot be loaded (their
        groups stay empty)."""
        import time

        from evr1.data.prompting import MediaFailure

        started = time.perf_counter()
        prompter = self.prompters[split]
        prompts = [prompter.attempt(r) for r in records]
        failures = {i: p for i, p in enumerate(prompts) if isinstance(p, MediaFailure)}
        groups: list[list[Any]] = [[] for _ in records]
        for count in sorted(set(counts)):
            chosen = [i for i, c in enumerate(counts) if c == count and i not in failures]
            if not chosen:
                continue
            results = self.engine.generate([prompts[i] for i in chosen], replace(params, n=count))
            for result in results:
                groups[chosen[result.prompt_index]].append(replace(result, prompt_index=chosen[result.prompt_index]))
        shown = dict(prompter.shown)
        return groups, {**prompter.forget(), "timing/generate": time.perf_counter() - started}, shown, failures

    def load_weights(self, weights: Any) -> int:
        self.engine.load_weights(weights)
        return self.engine.version

    def evaluate(self, out_dir: str) -> dict[str, float]:
        """The experiment's benchmarks with the current weights: headline score per benchmark."""
        from evr1.eval.api import evaluate, responder_for_engine

        spec = self.exp.eval
        responder = responder_for_engine(self.engine, self.processor, spec, self.exp.model.name, spec.data_root)
        results = evaluate(spec, responder, out_dir)
        return {f"eval/{name}/score": float(r["score"]) for name, r in results["benchmarks"].items() if r.get("score") is not None}


class RewardWorker(Placed):
    """Scores responses with the experiment's reward router; `problem_types`: those of the run's records (None:
    any), whose rewards warm up (slow imports, e.g. ROUGE's) now, not inside the first sample."""

    def __init__(
        self, exp: Experiment, source: ExperimentSource | None = None, problem_types: Sequence[str] | None = None
    ) -> None:
        from evr1.rewards import RewardRouter

        _import(source)
        self.router = RewardRouter(exp.reward)
        self.router.warm_up(problem_types)

    def score(self, inputs: Sequence[Any]) -> list[Any]:
        return self.router.score(inputs)


def _samples(prompter: Any, items: Sequence[TrainItem]) -> list[Any]:
    """Learner `Sample`s for items; each record's prompt (and media) is built once and reused."""
    from evr1.runner.learner.batching import Sample

    return [
        Sample(
            prompt=prompter(item.record),
            response_ids=item.response_ids,
            advantages=item.advantages,
            behaviour_logprobs=item.behaviour_logprobs,
            offline=item.offline,
            group_id=item.group_id,
            ref_logprobs=item.ref_logprobs,
            staleness=item.staleness,
            problem_type=str(item.record.problem_type),
        )
        for item in items
    ]


def _scored(model: Any, prompter: Any, items: Sequence[TrainItem]) -> list[Any]:
    """Log-probs of items' responses under `model` (a `LogprobModel`); items need no advantages yet."""
    import torch

    samples = _samples(prompter, [replace(i, advantages=torch.zeros(len(i.response_ids))) for i in items])
    return model.compute_logprobs(samples)


class LearnerWorker(Placed):
    """One data-parallel learner shard (rank `rank` of `world_size`, gloo/NCCL at `address`).

    The model is replicated or FSDP-sharded as `exp.resources.learner_sharding` says; sharded,
    `weights`, `save` and `export` gather the full state, so the driver calls them on every worker.
    """

    def __init__(
        self, exp: Experiment, root: Path, rank: int, world_size: int, address: str, source: ExperimentSource | None = None
    ) -> None:
        from evr1.models import load_processor
        from evr1.runner.learner.learner import Learner

        _import(source)
        _threads(exp)
        if world_size > 1:  # joined here, before the model loads, with the run's connect timeout
            from evr1.runner.learner import distributed
            from evr1.runner.learner.logprobs import default_device

            distributed.init_process_group(
                rank, world_size, address, backend=distributed.default_backend(default_device()),
                connect_timeout_s=exp.resources.rendezvous_timeout_s, bind_ip=self.where()["ip"],
            )  # fmt: skip
        self.processor = load_processor(exp.model)
        self.learner = Learner.from_spec(
            exp.model, exp.algo, exp.optim, exp.trainer,
            temperature=exp.rollout.temperature, rank=rank, world_size=world_size, address=address,
            fsdp=exp.resources.learner_sharding == "fsdp",
        )  # fmt: skip
        self.prompter = _prompter(exp, self.processor, root)

    def old_logprobs(self, items: Sequence[TrainItem]) -> list[Any]:
        """This shard's old-policy log-probs (`Learner.old_logprobs`: zeros where unused), for its `update`. The
        prompts stay memoised for that update, which forgets them."""
        return self.learner.old_logprobs(_samples(self.prompter, items))

    def update(self, items: Sequence[TrainItem]) -> dict[str, float]:
        """One update on this shard; the items carry their `old_logprobs` (the same shard's, just computed)."""
        missing = sum(i.old_logprobs is None for i in items)
        if missing:
            raise ValueError(f"{missing} of {len(items)} items have no old_logprobs: call old_logprobs first")
        try:
            return self.learner.update(_samples(self.prompter, items), old=[i.old_logprobs for i in items])
        finally:
            self.prompter.forget()

    def reference_logprobs(self, items: Sequence[TrainItem]) -> list[Any]:
        """Log-probs of items under the frozen base (LoRA adapters off): the KL reference. The prompts stay
        memoised for this step's `update`, which forgets them."""
        from evr1.models.lora import adapters_off

        with adapters_off(self.learner.model):
            return _scored(self.learner, self.prompter, items)

    def weights(self) -> dict[str, Any]:
        return self.learner.weights()

    def save(self, directory: str) -> None:
        self.learner.save(directory)

    def load(self, directory: str) -> None:
        self.learner.load(directory)

    def export(self, directory: str) -> None:
        self.learner.export_hf(directory, self.processor)


class ReferenceWorker(Placed):
    """The frozen initial policy: reference log-probs (at the rollout temperature) for the KL term or penalty."""

    def __init__(self, exp: Experiment, root: Path, source: ExperimentSource | None = None) -> None:
        from evr1.models import load_processor
        from evr1.runner.learner.logprobs import LogprobModel

        _import(source)
        _threads(exp)
        self.model = LogprobModel.from_spec(exp.model, exp.trainer, temperature=exp.rollout.temperature)
        self.prompter = _prompter(exp, load_processor(exp.model), root)

    def logprobs(self, items: Sequence[TrainItem]) -> list[Any]:
        try:
            return _scored(self.model, self.prompter, items)
        finally:
            self.prompter.forget()
