"""Two CPU learner workers (spawned processes, gloo on 127.0.0.1) give the update of one worker on the whole batch.

The workers run every scenario of `learner_fixtures.SCENARIOS` once (one spawn for all, to keep
the test fast): mixed shards with offline rows and two mini-batches, one worker video-only and
the other image-only, one video-only and the other text-only (no vision gradient there), one
worker with no sample at all, stale rows (decoupled-PPO weights) in different numbers per worker, and
rows whose engine log-probs are far from the learner's (rollout correction: mismatch metrics summed over
workers, weights normalised over both, token rejection). A hang fails the test after a timeout instead of blocking.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evr1.runner.learner.distributed import free_port

from .learner_fixtures import (  # noqa: F401
    ALGOS,
    SCENARIOS,
    TRAINER,
    learner_for,
    lprocessor_fixture,
    lspec_fixture,
    params_of,
    run_workers,
    scenario_samples,
)

LR = 1e-3
STEP_ATOL = 2e-2 * LR  # see test_learner: AdamW's first step amplifies float noise in tiny gradients
TIMEOUT_S = 240


@pytest.fixture(scope="module")
def two_workers(lspec, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dp")
    run_workers(2, f"127.0.0.1:{free_port()}", lspec.cache_dir, str(out), TIMEOUT_S)
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_two_workers_match_one_worker_on_the_whole_batch(scenario, two_workers, lspec, lprocessor) -> None:
    single = learner_for(lspec, lr=LR, **({"algo": ALGOS[scenario]} if scenario in ALGOS else {}), **TRAINER)
    expected = single.update(scenario_samples(lprocessor, scenario))
    want = params_of(single)
    if scenario == "stale":  # 5 online rows of staleness 1, 0, 1, 2, 0; each stale row's last token has no mu
        assert {"stale/weight_mean", "stale/weight_max", "stale/weight_truncated_frac"} <= expected.keys()
        assert (expected["stale/rows"], expected["stale/unknown_tokens"]) == (3, 3)
        assert (expected["stale/staleness_mean"], expected["stale/staleness_max"]) == (pytest.approx(0.8), 2)
    if scenario == "engine_mismatch":  # mismatch over the 4 fresh rows of both workers; weights normalised over both
        assert expected["mismatch/k3"] > 0.1 and 0 < expected["rollout_corr/rejected_token_frac"] < 1
        assert expected["rollout_corr/is_batch_norm_factor"] > 0
    results = [torch.load(two_workers / f"{scenario}-{rank}.pt", weights_only=True) for rank in (0, 1)]
    for result in results:
        metrics = result["metrics"]
        assert metrics.keys() == expected.keys()
        for key in expected.keys() - {"update_s", "tokens_per_s", "prompt_fallback_rows"}:  # all but per-shard counts
            assert metrics[key] == pytest.approx(expected[key], rel=1e-4, abs=1e-6), key
        for name, value in result["params"].items():
            assert torch.allclose(value, want[name], atol=STEP_ATOL), name
    # the replicas stay identical to each other
    assert all(torch.equal(results[0]["params"][k], results[1]["params"][k]) for k in want)
