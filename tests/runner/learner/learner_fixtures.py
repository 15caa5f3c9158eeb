"""Helpers for the learner tests: a tiny model, deterministic samples of every modality, workers.

Samples are built from the family's own processors (random frames and images), with random
response tokens drawn from ordinary vocabulary ids, so every worker process can rebuild exactly
the same batch from a seed.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from evr1.models import build_prompt, load_processor
from evr1.models.testing import process_image, process_video, random_frames, tiny_spec
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, ModelSpec, OptimSpec, RejectionRule, RolloutCorrectionSpec, TrainerSpec

FAMILY = "qwen2.5-vl"
FIRST_ORDINARY_ID = 20  # ids below are special tokens of the tiny tokenizers
KINDS = {"v": "video", "i": "image", "t": "text"}
NAN = float("nan")


@pytest.fixture(scope="session", name="lspec")
def lspec_fixture(model_cache: Path) -> ModelSpec:
    """The tiny model's spec (import `lspec_fixture`; tests ask for `lspec`)."""
    return tiny_spec(FAMILY, model_cache)


@pytest.fixture(scope="session", name="lprocessor")
def lprocessor_fixture(lspec: ModelSpec) -> Any:
    return load_processor(lspec)


def make_prompt(processor: Any, kind: str, seed: int) -> Any:
    """A prompt with one video, one image or no media (`kind` in v/i/t); sizes vary with the seed."""
    question = " ".join(["what", "is", "shown", "here"][: 1 + seed % 4])
    if kind == "v":
        frames = random_frames(FAMILY, seed, frames=4, cells=(2, 2 + seed % 2))
        return build_prompt(processor, question, [process_video(processor, frames)])
    if kind == "i":
        image = random_frames(FAMILY, seed, frames=1, cells=(2 + seed % 2, 2))[0]
        return build_prompt(processor, question, [process_image(processor, image)])
    return build_prompt(processor, question, [])


def make_samples(
    processor: Any,
    kinds: str,
    *,
    seed: int = 0,
    group_size: int = 2,
    offline: Sequence[int] = (),
    known: bool = True,
    stale: Mapping[int, int] | None = None,
) -> list[Sample]:
    """One sample per letter of `kinds` (v/i/t), `group_size` consecutive samples per group.

    Rows in `offline` are offline; with `known` they carry finite behaviour log-probs. Rows in
    `stale` (row -> staleness) are online rows sampled by older weights, with behaviour log-probs
    (NaN on their last token: unknown there).
    """
    stale = stale or {}
    g = torch.Generator().manual_seed(seed)
    samples = []
    for i, kind in enumerate(kinds):
        length = 3 + (seed + i) % 4
        response = torch.randint(FIRST_ORDINARY_ID, 300, (length,), generator=g)
        advantages = torch.randn(length, generator=g)
        is_offline = i in offline
        behaviour = -torch.rand(length, generator=g) * 6 - 0.5 if is_offline and known else None
        if i in stale:
            behaviour = (-torch.rand(length, generator=g) * 6 - 0.5).index_fill(0, torch.tensor([length - 1]), NAN)
        samples.append(
            Sample(
                prompt=make_prompt(processor, kind, seed * 100 + i),
                response_ids=response,
                advantages=advantages,
                behaviour_logprobs=behaviour,
                offline=is_offline,
                group_id=i // group_size,
                staleness=stale.get(i, 0),
            )
        )
    return samples


def learner_for(
    spec: ModelSpec,
    *,
    algo: AlgoSpec | None = None,
    lr: float = 1e-3,
    world_size: int = 1,
    rank: int = 0,
    **trainer: Any,
) -> Learner:
    optim = OptimSpec(lr=lr, grad_clip=1.0)
    trainer_spec = TrainerSpec(**{"micro_batch_tokens": 4096, **trainer})
    return Learner.from_spec(spec, algo or AlgoSpec(), optim, trainer_spec, rank=rank, world_size=world_size)


def params_of(learner: Learner) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in learner.model.state_dict().items()}


# -- data-parallel workers (run in spawned processes) -------------------------------------
SCENARIOS: dict[str, tuple[str, list[int]]] = {
    # name: (kinds of the whole batch, indices of worker 0's shard; worker 1 gets the rest)
    "mixed": ("vvitvi", [0, 1, 2]),
    "video_vs_image": ("vvvii", [0, 1, 2]),
    # with two mini-batches the second is text-only on both workers: the vision tower must keep
    # `grad = None` there (AdamW leaves it alone), exactly as with one worker
    "video_vs_text": ("vvtt", [0, 1]),
    "one_empty": ("vivt", [0, 1, 2, 3]),
    # stale rows (pipelined rollouts) on both workers, in different numbers, beside an offline row (text: cheap)
    "stale": ("tttttt", [0, 1, 2]),
    # the engine's log-probs on every online row, far from the learner's: rollout correction with
    # batch-normalised token weights (a mean over both workers) and token rejection, beside stale and offline rows
    "engine_mismatch": ("tttttt", [0, 1]),
}
OFFLINE = {"mixed": (3, 5), "stale": (2,), "engine_mismatch": (5,)}
STALE = {"stale": {0: 1, 3: 1, 4: 2}, "engine_mismatch": {2: 1}}
ALGOS = {
    "engine_mismatch": AlgoSpec(
        rollout_correction=RolloutCorrectionSpec(
            is_level="token", is_batch_normalize=True, rejection=(RejectionRule(statistic="token_k1", upper=5.0),)
        )
    )
}
TRAINER = {"micro_batch_tokens": 120, "mini_batches": 2}


def scenario_samples(processor: Any, name: str) -> list[Sample]:
    kinds, _ = SCENARIOS[name]
    samples = make_samples(processor, kinds, seed=7, offline=OFFLINE.get(name, ()), stale=STALE.get(name))
    if name != "engine_mismatch":
        return samples
    g = torch.Generator().manual_seed(8)
    return [
        s if s.offline or s.staleness else replace(s, behaviour_logprobs=-torch.rand(s.response_tokens, generator=g) * 6 - 3)
        for s in samples
    ]


def shard(name: str, rank: int, samples: list[Sample]) -> list[Sample]:
    first = set(SCENARIOS[name][1])
    return [s for i, s in enumerate(samples) if (i in first) == (rank == 0)]


def in_worker_group(rank: int, world_size: int, address: str, out_dir: str, body: Any) -> None:
    """Join the gloo group as `rank`, run `body(out_dir)`, record a failure's traceback in `error-<rank>.txt`
    (the parent reports it), and leave the group."""
    from evr1.runner.learner import distributed

    torch.set_num_threads(1)
    out = Path(out_dir)
    try:
        distributed.init_process_group(rank, world_size, address, backend="gloo", timeout_s=90)
        body(out)
    except BaseException:
        (out / f"error-{rank}.txt").write_text(traceback.format_exc())
        raise
    finally:
        distributed.destroy_process_group()


def dp_updates(rank: int, world_size: int, cache_dir: str, out: Path, scenarios: Any, make_learner: Any) -> None:
    """Each scenario's update on this rank's shard by a fresh `make_learner(spec, ...)`; parameters and metrics saved."""
    spec = tiny_spec(FAMILY, cache_dir)
    processor = load_processor(spec)
    for name in scenarios:
        algo = {"algo": ALGOS[name]} if name in ALGOS else {}
        learner = make_learner(spec, rank=rank, world_size=world_size, **algo, **TRAINER)
        metrics = learner.update(shard(name, rank, scenario_samples(processor, name)))
        torch.save({"params": params_of(learner), "metrics": metrics}, out / f"{name}-{rank}.pt")


def dp_worker(rank: int, world_size: int, address: str, cache_dir: str, out_dir: str) -> None:
    """One data-parallel worker: every scenario's update on its shard; parameters saved per scenario."""
    in_worker_group(rank, world_size, address, out_dir,
                    lambda out: dp_updates(rank, world_size, cache_dir, out, SCENARIOS, learner_for))


def run_workers(
    world_size: int, address: str, cache_dir: str, out_dir: str, timeout_s: float, worker: Any = dp_worker
) -> None:
    """Spawn `world_size` `worker`s; fail (killing them) if they do not all finish within `timeout_s`."""
    import torch.multiprocessing as mp

    context = mp.start_processes(
        worker, args=(world_size, address, cache_dir, out_dir), nprocs=world_size, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout_s
    try:
        while not context.join(timeout=max(0.1, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                pytest.fail(f"{world_size} learner workers did not finish within {timeout_s:.0f} s (a hang?)")
    finally:
        for process in context.processes:
            if process.is_alive():
                os.kill(process.pid, 9)
