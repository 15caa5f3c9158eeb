"""The learner, the reference model and the HF engine score responses under the sampling distribution at T.

A peaked tiny Qwen2.5-VL (output layer scaled up) makes the temperature change log-probs visibly.
The reference computation is by hand: one untruncated forward over prompt + response with the
model's own positions, then `log_softmax(logits / T)` in float64.
"""

from __future__ import annotations

import copy

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.errors import ConfigError
from evr1.models import load_model
from evr1.models.forward import token_types
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.learner import Learner
from evr1.runner.learner.logprobs import LogprobModel
from evr1.specs import AlgoSpec, OptimSpec, TrainerSpec

from .learner_fixtures import lprocessor_fixture, lspec_fixture, make_samples  # noqa: F401

SHARPEN = 30.0


@pytest.fixture(scope="module")
def peaked(lspec):
    model = load_model(lspec)
    with torch.no_grad():
        model.lm_head.weight.mul_(SHARPEN)
    return model


def _learner(model, temperature: float | None) -> Learner:
    extra = {} if temperature is None else {"temperature": temperature}
    trainer = TrainerSpec(micro_batch_tokens=4096)
    return Learner(copy.deepcopy(model), algo=AlgoSpec(), optim=OptimSpec(lr=1e-3), trainer=trainer, **extra)


def _by_hand(model, sample: Sample, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probs and entropies of `sample`'s response under `log_softmax(logits / temperature)`."""
    prompt, response = sample.prompt, sample.response_ids
    ids = torch.cat([prompt.input_ids, response])
    with torch.no_grad():
        model.model.rope_deltas = None
        full = model(input_ids=ids[None], mm_token_type_ids=token_types(ids, model.config)[None], **prompt.mm).logits
    logp = (full[0, len(prompt) - 1 : -1].double() / temperature).log_softmax(-1)
    return logp.gather(-1, response[:, None])[:, 0], -(logp.exp() * logp).sum(-1)


def test_learner_and_reference_logprobs_are_of_the_tempered_distribution(peaked, lprocessor) -> None:
    samples = make_samples(lprocessor, "vit", seed=1)
    learner = _learner(peaked, 0.5)
    reference = LogprobModel(peaked, micro_batch_tokens=4096, temperature=0.5)
    for model in (learner, reference):
        for sample, got in zip(samples, model.compute_logprobs(samples)):
            expected, _ = _by_hand(peaked, sample, 0.5)
            assert torch.allclose(got.double(), expected, atol=1e-4)
            raw, _ = _by_hand(peaked, sample, 1.0)
            assert (got.double() - raw).abs().max() > 0.1  # T = 0.5 is not the raw policy here


def test_entropy_metric_is_of_the_tempered_distribution(peaked, lprocessor) -> None:
    samples = make_samples(lprocessor, "vi", seed=2)
    metrics = _learner(peaked, 0.5).update(samples)
    entropies = torch.cat([_by_hand(peaked, s, 0.5)[1] for s in samples])
    assert metrics["entropy"] == pytest.approx(float(entropies.mean()), rel=1e-4)
    raw = torch.cat([_by_hand(peaked, s, 1.0)[1] for s in samples])
    assert abs(float(raw.mean()) - metrics["entropy"]) > 0.05


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(n=2, temperature=0.5, max_tokens=6, seed=0),
        SamplingParams(n=2, temperature=0.5, top_k=5, top_p=0.8, max_tokens=6, seed=1),  # filters shape sampling only
    ],
    ids=["t0.5", "t0.5-topk-topp"],
)
def test_engine_logprobs_equal_the_learners_recomputation(peaked, lprocessor, params) -> None:
    samples = make_samples(lprocessor, "vit", seed=3)
    prompts = [s.prompt for s in samples]
    results = HFEngine(copy.deepcopy(peaked), lprocessor).generate(prompts, params)
    rollouts = [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r))) for r in results]
    learner = _learner(peaked, params.temperature)
    for result, mine in zip(results, learner.compute_logprobs(rollouts)):
        assert torch.allclose(result.logprobs, mine, atol=1e-4)
    raw = _learner(peaked, 1.0).compute_logprobs(rollouts)
    assert max(float((r.logprobs - m).abs().max()) for r, m in zip(results, raw)) > 0.1


def test_temperature_one_and_greedy_score_the_raw_policy(peaked, lprocessor) -> None:
    samples = make_samples(lprocessor, "vt", seed=4)
    default, greedy = _learner(peaked, None), _learner(peaked, 0.0)
    assert default.temperature == 1.0
    for sample, a, b in zip(samples, default.compute_logprobs(samples), greedy.compute_logprobs(samples)):
        expected, _ = _by_hand(peaked, sample, 1.0)
        assert torch.allclose(a.double(), expected, atol=1e-4) and torch.equal(a, b)
    prompts = [s.prompt for s in samples]
    engine = HFEngine(copy.deepcopy(peaked), lprocessor)
    results = engine.generate(prompts, SamplingParams(temperature=0.0, max_tokens=6))
    rollouts = [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r))) for r in results]
    for result, mine in zip(results, greedy.compute_logprobs(rollouts)):
        assert torch.allclose(result.logprobs, mine, atol=1e-4)


def test_negative_temperature_is_refused(lspec) -> None:
    with pytest.raises(ConfigError, match="temperature must be >= 0, got -1.0"):
        LogprobModel.from_spec(lspec, TrainerSpec(), temperature=-1.0)
