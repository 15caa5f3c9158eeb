"""A real engine–learner mismatch on CPU: the HF engine in bfloat16 against the float32 learner.

The tiny model's output layer is scaled up (peaked logits) so bfloat16 rounding moves the
log-probs visibly. The learner's metrics must show the mismatch (and none with a float32 engine),
and the rollout correction must change the loss exactly as its formulas say: at the first
optimizer step `pi = pi_prox`, so the REINFORCE loss is `-sum(keep * w * A) / sum(keep)`.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.models import load_model
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, OptimSpec, RejectionRule, RolloutCorrectionSpec, TrainerSpec

from .learner_fixtures import lprocessor_fixture, lspec_fixture, make_samples  # noqa: F401

SHARPEN = 10.0


@pytest.fixture(scope="module")
def peaked(lspec):
    model = load_model(lspec)
    with torch.no_grad():
        model.lm_head.weight.mul_(SHARPEN)
    return model


def rollouts(model, processor, dtype: torch.dtype) -> list[Sample]:
    """Responses sampled by the HF engine holding `model` in `dtype`, with the engine's own log-probs."""
    prompts = [s.prompt for s in make_samples(processor, "vit", seed=5)]
    engine = HFEngine(copy.deepcopy(model).to(dtype), processor)
    results = engine.generate(prompts, SamplingParams(n=2, temperature=1.0, max_tokens=8, seed=0))
    g = torch.Generator().manual_seed(0)
    return [
        Sample(
            prompts[r.prompt_index],
            r.token_ids,
            torch.randn(len(r), generator=g),
            r.logprobs.float(),
            group_id=r.prompt_index,
            problem_type="multiple_choice",
        )
        for r in results
    ]


def learner(model, spec: RolloutCorrectionSpec | str | None = None) -> Learner:
    algo = AlgoSpec(policy_loss="reinforce", **({} if spec is None else {"rollout_correction": spec}))
    trainer = TrainerSpec(micro_batch_tokens=4096)
    return Learner(copy.deepcopy(model), algo=algo, optim=OptimSpec(lr=1e-3), trainer=trainer)


@pytest.fixture(scope="module")
def bf16_rows(peaked, lprocessor):
    samples = rollouts(peaked, lprocessor, torch.bfloat16)
    old = learner(peaked).compute_logprobs(samples)  # the float32 learner's pi_prox, as update computes it
    return samples, old


def test_metrics_show_the_bf16_mismatch_and_no_mismatch_in_float32(peaked, lprocessor, bf16_rows):
    samples, _ = bf16_rows
    metrics = learner(peaked).update(samples)
    assert metrics["mismatch/abs_diff_mean"] > 1e-3
    assert metrics["mismatch/k3"] > 0
    assert metrics["mismatch/multiple_choice/k3"] == pytest.approx(metrics["mismatch/k3"])
    same = learner(peaked).update(rollouts(peaked, lprocessor, torch.float32))
    assert same["mismatch/abs_diff_max"] < 1e-4 < metrics["mismatch/abs_diff_max"]
    assert not any(name.startswith("rollout_corr/") for name in metrics)


def expected_loss(samples, old, weights, keep) -> float:
    adv = torch.cat([s.advantages for s in samples]).double()
    return float(-(adv * weights * keep).sum() / keep.sum())


def test_token_tis_changes_the_loss_as_the_formula_says(peaked, bf16_rows):
    samples, old = bf16_rows
    lr = torch.cat([o.double() - s.behaviour_logprobs.double() for s, o in zip(samples, old)])
    weights, ones = lr.exp().clamp(max=2.0), torch.ones_like(lr)
    plain = learner(peaked).update(samples)
    corrected = learner(peaked, "token_tis").update(samples)
    assert plain["pg_loss"] == pytest.approx(expected_loss(samples, old, ones, ones), rel=1e-4, abs=1e-6)
    assert corrected["pg_loss"] == pytest.approx(expected_loss(samples, old, weights, ones), rel=1e-4, abs=1e-6)
    assert abs(corrected["pg_loss"] - plain["pg_loss"]) > 1e-4
    assert corrected["rollout_corr/is_mean"] == pytest.approx(float(weights.mean()), rel=1e-5)


def test_rejection_drops_tokens_from_the_loss_and_its_normaliser(peaked, bf16_rows):
    samples, old = bf16_rows
    lr = torch.cat([o.double() - s.behaviour_logprobs.double() for s, o in zip(samples, old)])
    k3 = lr.exp() - 1 - lr
    upper = float(k3.median())  # about half the tokens are rejected
    spec = RolloutCorrectionSpec(rejection=(RejectionRule(statistic="token_k3", upper=upper),))
    keep = (k3 <= upper).double()
    metrics = learner(peaked, spec).update(samples)
    assert metrics["pg_loss"] == pytest.approx(expected_loss(samples, old, torch.ones_like(lr), keep), rel=1e-4, abs=1e-6)
    assert metrics["rollout_corr/rejected_token_frac"] == pytest.approx(float(1 - keep.mean()))


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "per-row"])
def test_composes_with_stale_and_offline_rows_and_either_forward(peaked, bf16_rows, grouped):
    """Fresh and stale rows take min(pi_prox/mu, 1.5) (on the stale row instead of the decoupled weight, cap 2);
    the offline row keeps its ratio pi/mu and no weight; the metrics are over the fresh rows alone."""
    samples, old = bf16_rows
    kinds = ["fresh"] * len(samples)
    kinds[1], kinds[2] = "stale", "offline"
    mixed = [
        replace(s, staleness=1) if k == "stale" else replace(s, offline=True) if k == "offline" else s
        for s, k in zip(samples, kinds)
    ]
    lr = [o.double() - s.behaviour_logprobs.double() for s, o in zip(samples, old)]
    tis = {"fresh": lambda x: x.exp().clamp(max=1.5), "stale": lambda x: x.exp().clamp(max=1.5), "offline": torch.exp}
    weights = torch.cat([tis[k](x) for k, x in zip(kinds, lr)])
    ones = torch.ones_like(weights)
    spec = RolloutCorrectionSpec(is_level="token", is_cap=1.5)
    algo = AlgoSpec(policy_loss="reinforce", rollout_correction=spec)
    trainer = TrainerSpec(micro_batch_tokens=4096, grouped_forward=grouped)
    made = Learner(copy.deepcopy(peaked), algo=algo, optim=OptimSpec(lr=1e-3), trainer=trainer)
    metrics = made.update(mixed)
    assert metrics["pg_loss"] == pytest.approx(expected_loss(samples, old, weights, ones), rel=1e-4, abs=1e-6)
    fresh = torch.cat([x for k, x in zip(kinds, lr) if k == "fresh"])
    assert metrics["mismatch/abs_diff_mean"] == pytest.approx(float(fresh.abs().mean()), rel=1e-5)
