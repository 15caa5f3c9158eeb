"""The learner's grouped forward (on by default) against per-row: same log-probs, loss, metrics, gradients.

Groups of every kind in one batch: a video group with an offline row, an image group, a
video+image group, a text-only group of one, and a group whose rows carry different prompts
(forwarded per-row and counted). Budgets small enough to split a group by its responses. And the
rollout/learner parity: the learner's grouped pass scores the HF engine's rollouts as the engine did.
"""

from __future__ import annotations

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.models import build_prompt, load_model
from evr1.models.testing import process_image, process_video, random_frames
from evr1.runner.learner.batching import Sample, prefix_micro_batches
from evr1.specs import AlgoSpec, KLSpec

from .learner_fixtures import FAMILY, FIRST_ORDINARY_ID, learner_for, lprocessor_fixture, lspec_fixture  # noqa: F401

TIMING = {"update_s", "tokens_per_s"}
KL = AlgoSpec(kl=KLSpec(enabled=True, coef=0.05, estimator="k3"), entropy_coef=0.01)


def _media_prompt(processor, seed: int, video: bool, image: bool):
    media = []
    if video:
        media.append(process_video(processor, random_frames(FAMILY, seed, frames=6, cells=(2, 3))))
    if image:
        media.append(process_image(processor, random_frames(FAMILY, seed + 1, frames=1, cells=(2, 2))[0]))
    return build_prompt(processor, f"question {seed}", media)


def _batch(processor) -> list[Sample]:
    g = torch.Generator().manual_seed(5)
    groups = [  # (prompt per row, response lengths, offline rows)
        ([_media_prompt(processor, 1, True, False)] * 4, (6, 2, 9, 4), {2}),
        ([_media_prompt(processor, 2, False, True)] * 3, (5, 1, 3), set()),
        ([_media_prompt(processor, 3, True, True)] * 2, (7, 4), set()),
        ([_media_prompt(processor, 4, False, False)], (5,), set()),
        ([_media_prompt(processor, 5, True, False), _media_prompt(processor, 6, True, False)], (3, 4), set()),
    ]
    samples = []
    for group_id, (prompts, lengths, offline) in enumerate(groups):
        for row, (prompt, length) in enumerate(zip(prompts, lengths)):
            samples.append(Sample(
                prompt=prompt,
                response_ids=torch.randint(FIRST_ORDINARY_ID, 300, (length,), generator=g),
                advantages=torch.randn(length, generator=g),
                behaviour_logprobs=-torch.rand(length, generator=g) * 4 - 0.5 if row in offline else None,
                offline=row in offline,
                group_id=group_id,
                ref_logprobs=-torch.rand(length, generator=g) * 4 - 0.5,
            ))  # fmt: skip
    return samples


def _grads(learner, samples) -> tuple[dict, dict[str, torch.Tensor]]:
    """One update's metrics and the gradients it stepped with (the optimizer's step is skipped)."""
    grads: dict[str, torch.Tensor] = {}

    def keep(*_: object) -> None:
        grads.update({n: p.grad.clone() for n, p in learner.model.named_parameters() if p.grad is not None})

    learner.optimizer.register_step_pre_hook(keep)
    return learner.update(samples), grads


def test_grouped_learner_matches_per_row(lspec, lprocessor) -> None:
    samples = _batch(lprocessor)
    grouped, per_row = learner_for(lspec, algo=KL), learner_for(lspec, algo=KL, grouped_forward=False)
    assert grouped.grouped and not per_row.grouped
    want_lp, got_lp = per_row.compute_logprobs(samples), grouped.compute_logprobs(samples)
    for want, got in zip(want_lp, got_lp):
        assert got.shape == want.shape and (got - want).abs().max() <= 1e-5
    want, want_grads = _grads(per_row, samples)
    got, got_grads = _grads(grouped, samples)
    assert got.pop("prompt_fallback_rows") == 1  # the last group's second row has a prompt of its own
    assert got.keys() == want.keys()
    for key in want.keys() - TIMING:
        assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6), key
    assert got_grads.keys() == want_grads.keys() and any(".visual." in n for n in want_grads)
    for name, value in want_grads.items():
        assert (got_grads[name] - value).norm() <= 1e-4 * value.norm() + 1e-12, name


def test_a_group_over_the_budget_is_split_by_responses_not_truncated(lspec, lprocessor) -> None:
    samples = [s for s in _batch(lprocessor) if s.group_id in (0, 3)]  # a video group of 4, a text one
    budget = samples[0].prompt_tokens + 2 * 9  # the video prompt with two of its responses
    assert prefix_micro_batches(samples, budget) == [[2, 0], [3, 1], [4]]  # longest responses first
    whole, split = learner_for(lspec, algo=KL), learner_for(lspec, algo=KL, micro_batch_tokens=budget)
    m_whole, m_split = whole.update(samples), split.update(samples)
    for key in m_whole.keys() - TIMING:
        assert m_split[key] == pytest.approx(m_whole[key], rel=1e-5, abs=1e-6), key
    assert m_split["response_tokens"] == sum(s.response_tokens for s in samples)  # nothing truncated


def test_the_grouped_pass_scores_hf_rollouts_as_the_engine_sampled_them(lspec, lprocessor) -> None:
    learner = learner_for(lspec)
    engine = HFEngine(load_model(lspec), lprocessor)
    prompts = [_media_prompt(lprocessor, 7, True, False), _media_prompt(lprocessor, 8, False, True)]
    results = engine.generate(prompts, SamplingParams(n=4, max_tokens=8, seed=0))
    samples = [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r.token_ids)), group_id=r.prompt_index)
               for r in results]
    for result, logprobs in zip(results, learner.compute_logprobs(samples)):
        assert torch.allclose(logprobs, result.logprobs, atol=1e-4), (logprobs, result.logprobs)
