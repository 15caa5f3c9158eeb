"""Two FSDP2-sharded CPU learner workers (gloo) log the metrics one worker logs for the whole batch.

Under FSDP each worker's loss share carries the normaliser's factor W (it undoes FSDP's gradient
average); the logged loss must not: summed over workers it is the global loss, not W times it.
Per-token means (entropy, clip fractions, ratios, approx KL) and extremes must not depend on how
the batch was split over workers and micro-batches either. Every sample has a video here; shards
of different modalities are `test_learner_fsdp_modalities`'.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evr1.models import load_model, load_processor
from evr1.models.testing import tiny_spec
from evr1.runner.learner import distributed
from evr1.runner.learner.batching import share_prompts
from evr1.runner.learner.distributed import free_port
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, OptimSpec, TrainerSpec

from .learner_fixtures import (  # noqa: F401
    FAMILY,
    TRAINER,
    in_worker_group,
    learner_for,
    lprocessor_fixture,
    lspec_fixture,
    make_samples,
    run_workers,
)

LR = 1e-3
# name: (kinds, worker 0's indices, offline rows); two mini-batches (groups of 2, by group id parity)
SCENARIOS = {
    "offline_rows": ("vvvvvv", [0, 1, 2], (3, 5)),
    "uneven": ("vvvvv", [0], ()),  # worker 0 has no sample in the second mini-batch: it joins with a dummy pass
}
TIMING = {"update_s", "tokens_per_s"}
TIMEOUT_S = 240


def fsdp_worker(rank: int, world_size: int, address: str, cache_dir: str, out_dir: str) -> None:
    """One sharded worker: every scenario's update on its shard; metrics saved per scenario."""
    in_worker_group(rank, world_size, address, out_dir, lambda out: _sharded_updates(rank, cache_dir, out))


def _sharded_updates(rank: int, cache_dir: str, out: Path) -> None:
    spec = tiny_spec(FAMILY, cache_dir)
    processor = load_processor(spec)
    for name, (_, first, _) in SCENARIOS.items():
        model = distributed.shard_model(load_model(spec, dtype=torch.float32))
        learner = Learner(
            model, algo=AlgoSpec(), optim=OptimSpec(lr=LR, grad_clip=1.0),
            trainer=TrainerSpec(**{"micro_batch_tokens": 4096, **TRAINER}), sharded=True,
        )  # fmt: skip
        mine = [s for i, s in enumerate(_samples(processor, name)) if (i in first) == (rank == 0)]
        torch.save({"metrics": learner.update(mine)}, out / f"{name}-{rank}.pt")


def _samples(processor, name: str) -> list:
    kinds, _, offline = SCENARIOS[name]
    return make_samples(processor, kinds, seed=5, offline=offline)


@pytest.fixture(scope="module")
def two_sharded_workers(lspec, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fsdp")
    run_workers(2, f"127.0.0.1:{free_port()}", lspec.cache_dir, str(out), TIMEOUT_S, worker=fsdp_worker)
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_sharded_workers_log_the_single_worker_metrics(scenario, two_sharded_workers, lspec, lprocessor) -> None:
    # the sharded learners run the grouped forward (the default); the single learner forwards every row whole
    expected = learner_for(lspec, lr=LR, grouped_forward=False, **TRAINER).update(_samples(lprocessor, scenario))
    assert {"loss", "pg_loss", "entropy", "clip_frac_high", "ratio_mean", "approx_kl"} <= expected.keys()
    samples, first = _samples(lprocessor, scenario), SCENARIOS[scenario][1]
    shards = [[s for i, s in enumerate(samples) if (i in first) == (rank == 0)] for rank in (0, 1)]
    fallbacks = sum(share_prompts([s.prompt for s in shard], [s.group_id for s in shard])[2] for shard in shards)
    for rank in (0, 1):
        metrics = torch.load(two_sharded_workers / f"{scenario}-{rank}.pt", weights_only=True)["metrics"]
        # the fixtures give every row a prompt of its own: per worker, all but a group's first row fall back
        assert metrics.pop("prompt_fallback_rows") == fallbacks
        assert metrics.keys() == expected.keys()
        for key in expected.keys() - TIMING:
            assert metrics[key] == pytest.approx(expected[key], rel=1e-4, abs=1e-6), key
