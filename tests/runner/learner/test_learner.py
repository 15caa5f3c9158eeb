"""The learner on a real tiny Qwen2.5-VL: loss values, micro-batching, off-policy rows, KL, skips, sync."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.algos.aggregation import Normaliser
from evr1.algos.entropy import entropy_from_logits
from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.errors import ConfigError
from evr1.models import load_model
from evr1.models.forward import gather_logprobs, response_logits, response_logprobs
from evr1.registry import POLICY_LOSSES
from evr1.runner.learner.batching import Sample, prefix_micro_batches
from evr1.runner.learner.learner import Learner
from evr1.runner.learner.logprobs import LogprobModel
from evr1.specs import AlgoSpec, KLSpec, OptimSpec, TrainerSpec

from .learner_fixtures import learner_for, lprocessor_fixture, lspec_fixture, make_samples, params_of  # noqa: F401

LR = 1e-3
# AdamW's first step is about lr * sign(g): gradients at the float-noise level (summed in another
# order) may move a weight by a visible fraction of lr. Scale errors show in the loss and the
# gradient norm, which are compared tightly; weights to 2% of one step.
STEP_ATOL = 2e-2 * LR


def _with_advantages(samples: list[Sample], rows: list[list[float]]) -> list[Sample]:
    for sample, values in zip(samples, rows):
        sample.response_ids = sample.response_ids[: len(values)]
        sample.advantages = torch.tensor(values)
    return samples


def test_loss_is_minus_mean_advantage_at_ratio_one_and_the_step_matches_a_manual_one(lspec, lprocessor) -> None:
    samples = _with_advantages(make_samples(lprocessor, "vt"), [[1.0, 0.5, -1.0], [2.0, 0.0, 0.0, -0.5]])
    algo = AlgoSpec(entropy_coef=0.01)
    # the manual step below forwards per row (the grouped forward is pinned to it in test_grouped_forward.py)
    learner = learner_for(lspec, algo=algo, lr=LR, grouped_forward=False)
    before = params_of(learner)
    metrics = learner.update(samples)

    # by hand: ratio 1 everywhere, token_mean over 7 tokens: pg = -(0.5 + 1.5) / 7
    assert metrics["pg_loss"] == pytest.approx(-2.0 / 7.0, abs=1e-6)
    assert metrics["ratio_mean"] == metrics["ratio_min"] == metrics["ratio_max"] == pytest.approx(1.0)
    assert metrics["clip_frac_low"] == metrics["clip_frac_high"] == 0.0

    # manually: response_logprobs + the registered loss + clipping + AdamW on a fresh copy
    model = load_model(lspec).train()
    prompts, responses = [s.prompt for s in samples], [s.response_ids for s in samples]
    logits, targets, mask = response_logits(model, prompts, responses, learner.pad_id)
    logprobs = gather_logprobs(logits, targets)
    entropy = entropy_from_logits(logits)
    advantages = torch.zeros(mask.shape)
    for row, s in enumerate(samples):
        advantages[row, : s.response_tokens] = s.advantages
    loss, _ = POLICY_LOSSES.get("ppo_clip")(
        logprobs, logprobs.detach(), advantages, mask, spec=algo, normaliser=Normaliser.of(mask), entropy=entropy
    )
    mean_entropy = float(entropy.detach()[mask].mean())
    assert float(loss.detach()) == pytest.approx(-2.0 / 7.0 - 0.01 * mean_entropy, abs=1e-5)
    assert metrics["loss"] == pytest.approx(float(loss.detach()), abs=1e-5)
    assert metrics["entropy"] == pytest.approx(mean_entropy, abs=1e-5)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    assert metrics["grad_norm"] == pytest.approx(float(norm), rel=1e-4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    optimizer.step()
    after = params_of(learner)
    changed = 0
    for name, value in model.state_dict().items():
        assert torch.allclose(after[name], value, atol=1e-6), name
        changed += not torch.equal(after[name], before[name])
    assert changed > 10  # the update really moved the weights


def test_micro_batch_split_does_not_change_the_update(lspec, lprocessor) -> None:
    samples = make_samples(lprocessor, "vivtvi", seed=3)
    assert len(prefix_micro_batches(samples, 100_000)) == 1 and len(prefix_micro_batches(samples, 120)) == 3
    whole, split = learner_for(lspec, micro_batch_tokens=100_000), learner_for(lspec, micro_batch_tokens=120)
    m_whole, m_split = whole.update(samples), split.update(samples)
    for key in ("loss", "pg_loss", "entropy", "grad_norm"):
        assert m_split[key] == pytest.approx(m_whole[key], rel=1e-4, abs=1e-6), key
    a, b = params_of(whole), params_of(split)
    assert all(torch.allclose(a[k], b[k], atol=STEP_ATOL) for k in a)


def test_old_logprobs_taken_as_a_pass_of_their_own_update_exactly_as_taken_inside(lspec, lprocessor) -> None:
    """The driver's visible old-policy pass (`old_logprobs`, then `update(old=...)`) is the update's own first step:
    the same log-probs (zeros on the offline row, which never uses them), the same weights after the step."""
    samples = make_samples(lprocessor, "vitv", seed=5, offline=[2])
    inside, outside = learner_for(lspec), learner_for(lspec)
    old = outside.old_logprobs(samples)
    assert torch.equal(old[2], torch.zeros(samples[2].response_tokens))
    assert all(torch.equal(o, c) for i, (o, c) in enumerate(zip(old, outside.compute_logprobs(samples))) if i != 2)
    m_inside, m_outside = inside.update(samples), outside.update(samples, old=old)
    for metrics in (m_inside, m_outside):
        del metrics["update_s"], metrics["tokens_per_s"]  # timings
    assert m_outside == m_inside
    a, b = params_of(inside), params_of(outside)
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="3 old log-prob rows for 4 samples"):
        outside.update(samples, old=old[:3])


def test_offline_rows_are_trained_against_their_behaviour_logprobs(lspec, lprocessor) -> None:
    samples = _with_advantages(make_samples(lprocessor, "vv", offline=[1]), [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    learner = learner_for(lspec)
    current = learner.compute_logprobs(samples)
    samples[1].behaviour_logprobs = current[1] - math.log(2.0)  # pi / mu = 2 on the offline row
    metrics = learner.update(samples)
    # drift diagnostics: ratio 1 on the 3 online tokens; pi/mu = 2 on the 4 offline ones, reported apart
    assert metrics["ratio_max"] == pytest.approx(1.0, abs=1e-5) and metrics["clip_frac_high"] == 0.0
    assert metrics["offline/ratio_mean"] == pytest.approx(2.0, rel=1e-5)
    assert metrics["offline/ratio_max"] == pytest.approx(2.0, rel=1e-5)
    assert metrics["offline/clip_frac_high"] == pytest.approx(1.0)  # clipped above 1.28 with A > 0
    assert metrics["offline_token_frac"] == pytest.approx(4 / 7)
    # clipped tokens give no gradient: pg = -(3 * 1 + 4 * 1.28) / 7
    assert metrics["pg_loss"] == pytest.approx(-(3 + 4 * 1.28) / 7, rel=1e-5)


def test_offline_rows_without_behaviour_use_the_fallback_not_a_ratio(lspec, lprocessor) -> None:
    samples = make_samples(lprocessor, "vvi", offline=[1, 2], known=False)
    metrics = learner_for(lspec).update(samples)
    # only the online row (3 tokens) has a ratio; the offline rows (4 + 5 tokens) use shaping
    assert metrics["ratio_min"] == pytest.approx(1.0, abs=1e-5) and metrics["ratio_max"] == pytest.approx(1.0, abs=1e-5)
    assert metrics["offline_token_frac"] == pytest.approx(9 / 12) and metrics["skipped_steps"] == 0


def test_kl_term_against_a_reference(lspec, lprocessor) -> None:
    algo = AlgoSpec(kl=KLSpec(enabled=True, coef=0.1, estimator="k3"))
    samples = make_samples(lprocessor, "vi")
    learner = learner_for(lspec, algo=algo)
    with pytest.raises(ConfigError, match="no ref_logprobs"):
        learner.update(samples)
    reference = LogprobModel.from_spec(lspec, TrainerSpec())
    ref = reference.compute_logprobs(samples)
    for sample, logprobs in zip(samples, ref):
        sample.ref_logprobs = logprobs - 0.5  # log pi - log pi_ref = 0.5 on every token
    metrics = learner.update(samples)
    k3 = math.exp(-0.5) - 1 + 0.5
    assert metrics["kl"] == pytest.approx(k3, rel=1e-4)
    assert metrics["loss"] == pytest.approx(metrics["pg_loss"] + 0.1 * k3, rel=1e-4, abs=1e-6)
    assert metrics["kl_coef"] == 0.1
    assert not any(p.requires_grad for p in reference.model.parameters())


def test_nan_loss_skips_the_update_without_touching_the_weights(lspec, lprocessor) -> None:
    samples = make_samples(lprocessor, "vivi")
    samples[2].advantages = torch.full_like(samples[2].advantages, float("nan"))  # group 1
    learner = learner_for(lspec, mini_batches=2, micro_batch_tokens=100)
    before = params_of(learner)
    bad_only = learner.update([samples[2], samples[3]])
    assert bad_only["skipped_steps"] == 1 and bad_only["optimizer_steps"] == 2  # group 0's mini-batch is empty
    assert all(torch.equal(before[k], v) for k, v in params_of(learner).items())
    assert not learner.optimizer.state  # AdamW never stepped
    metrics = learner.update(samples)  # group 0 trains, group 1 is skipped
    assert metrics["skipped_steps"] == 1 and metrics["optimizer_steps"] == 2 and math.isfinite(metrics["grad_norm"])
    assert learner.skipped_steps == 2 and learner.optimizer_steps == 4
    assert any(not torch.equal(before[k], v) for k, v in params_of(learner).items())
    assert all(torch.isfinite(v).all() for v in params_of(learner).values())


def test_mini_batches_and_epochs_step_the_optimizer_and_the_schedule(lspec, lprocessor) -> None:
    trainer = TrainerSpec(steps=3, mini_batches=2, epochs=2, micro_batch_tokens=4096)
    learner = Learner.from_spec(lspec, AlgoSpec(), OptimSpec(lr=LR, warmup_steps=8), trainer)
    metrics = learner.update(make_samples(lprocessor, "vvii"))
    assert metrics["optimizer_steps"] == 4 and learner.optimizer_steps == 4
    assert metrics["lr"] == pytest.approx(LR * 4 / 8)  # the last step's: warm-up step 3 of 8
    assert metrics["ratio_max"] > 1.0 or metrics["ratio_min"] < 1.0  # later steps see moved weights
    assert metrics["samples"] == 4 and metrics["tokens"] > metrics["response_tokens"] > 0


def test_frozen_vision_and_gradient_checkpointing(lspec, lprocessor) -> None:
    samples = make_samples(lprocessor, "vi")
    plain = learner_for(lspec)
    frozen = learner_for(lspec.model_copy(update={"freeze_vision": True, "gradient_checkpointing": True}))
    before = params_of(frozen)
    m_plain, m_frozen = plain.update(samples), frozen.update(samples)
    after = params_of(frozen)
    visual = [k for k in after if ".visual." in f".{k}"]
    assert visual and all(torch.equal(before[k], after[k]) for k in visual)
    assert any(not torch.equal(before[k], after[k]) for k in after if k not in visual)
    assert m_frozen["loss"] == pytest.approx(m_plain["loss"], abs=1e-6)  # same forward, fewer trained weights
    assert m_frozen["grad_norm"] < m_plain["grad_norm"]


def test_engine_after_sync_scores_and_samples_like_the_learner(lspec, lprocessor) -> None:
    learner = learner_for(lspec, lr=5e-2)
    samples = make_samples(lprocessor, "vit")
    learner.update(samples)
    engine = HFEngine(load_model(lspec), lprocessor)
    prompts = [s.prompt for s in samples]
    stale, _ = response_logprobs(engine.model, prompts, [s.response_ids for s in samples], engine.pad_id)
    engine.sync_from(learner.model)
    assert engine.version == 1
    fresh, _ = response_logprobs(engine.model, prompts, [s.response_ids for s in samples], engine.pad_id)
    ours = learner.compute_logprobs(samples)
    for row, mine in enumerate(ours):
        assert torch.allclose(fresh[row, : len(mine)], mine, atol=1e-5)
        assert not torch.allclose(stale[row, : len(mine)], mine, atol=1e-3)  # the update mattered
    results = engine.generate(prompts, SamplingParams(n=2, max_tokens=5, seed=0))
    rollouts = [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r))) for r in results]
    for result, mine in zip(results, learner.compute_logprobs(rollouts)):
        assert torch.allclose(result.logprobs, mine, atol=1e-4)


def test_inconsistent_inputs_are_rejected(lspec, lprocessor) -> None:
    samples = make_samples(lprocessor, "vv")
    with pytest.raises(ValueError, match="advantages has shape"):
        Sample(samples[0].prompt, samples[0].response_ids, torch.zeros(99))
    samples[0].ref_logprobs = torch.zeros(samples[0].response_tokens)
    with pytest.raises(ValueError, match="ref_logprobs given for 1 of 2"):
        learner_for(lspec).update(samples)
