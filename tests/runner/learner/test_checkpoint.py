"""Learner checkpoints (exact continuation, atomic writes) and the HF export of the final model."""

from __future__ import annotations

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.errors import Evr1Error
from evr1.models import load_model, load_processor
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.checkpoint import MODEL_FILE, atomic_directory, load_state
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, ModelSpec, OptimSpec, TrainerSpec

from .learner_fixtures import lprocessor_fixture, lspec_fixture, make_samples, params_of  # noqa: F401

TIMING = ("update_s", "tokens_per_s")


def _learner(spec: ModelSpec) -> Learner:
    optim = OptimSpec(lr=1e-3, warmup_steps=3, schedule="cosine", weight_decay=0.01)
    return Learner.from_spec(spec, AlgoSpec(), optim, TrainerSpec(steps=5, mini_batches=2, micro_batch_tokens=400))


def test_save_and_load_continue_exactly(lspec, lprocessor, tmp_path) -> None:
    first, second = make_samples(lprocessor, "vit", seed=1), make_samples(lprocessor, "tvi", seed=2)
    original = _learner(lspec)
    original.update(first)
    original.save(str(tmp_path / "step_1"))
    resumed = _learner(lspec)
    resumed.load(str(tmp_path / "step_1"))
    assert resumed.optimizer_steps == 2 and resumed.scheduler.last_epoch == 2
    want, got = original.update(second), resumed.update(second)
    assert {k: v for k, v in got.items() if k not in TIMING} == {k: v for k, v in want.items() if k not in TIMING}
    a, b = params_of(original), params_of(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    fresh = _learner(lspec)
    fresh.update(second)  # without the checkpoint the same data gives another update
    assert any(not torch.equal(a[k], v) for k, v in params_of(fresh).items())


def test_save_replaces_a_directory_atomically(lspec, tmp_path) -> None:
    target = tmp_path / "step_2"
    learner = _learner(lspec)
    learner.save(str(target))
    saved = (target / MODEL_FILE).read_bytes()
    with pytest.raises(RuntimeError, match="crash"), atomic_directory(target) as tmp:
        (tmp / MODEL_FILE).write_bytes(b"half written")
        raise RuntimeError("crash while writing")
    assert (target / MODEL_FILE).read_bytes() == saved  # the previous version survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_2"]  # no temporary left behind
    model_state, _, meta = load_state(target)
    assert meta["optimizer_steps"] == 0 and set(model_state) == set(learner.model.state_dict())


def test_loading_something_else_names_what_is_missing(tmp_path) -> None:
    (tmp_path / MODEL_FILE).write_bytes(b"")
    with pytest.raises(Evr1Error, match=r"not a learner checkpoint \(missing optimizer.pt, learner.json\)"):
        load_state(tmp_path)


def test_hf_export_reloads_and_generates_the_trained_policy(lspec, lprocessor, tmp_path) -> None:
    learner = _learner(lspec)
    samples = make_samples(lprocessor, "vi", seed=4)
    learner.update(samples)
    learner.export_hf(str(tmp_path / "final"), lprocessor)
    exported = ModelSpec(name=str(tmp_path / "final"), dtype="float32")
    model, processor = load_model(exported), load_processor(exported)
    assert all(torch.equal(v, params_of(learner)[k]) for k, v in model.state_dict().items())
    engine = HFEngine(model, processor)
    prompts = [s.prompt for s in samples]
    results = engine.generate(prompts, SamplingParams(n=2, max_tokens=4, seed=0))
    assert len(results) == 4 and all(len(r) >= 1 for r in results)
    scored = learner.compute_logprobs(
        [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r))) for r in results]
    )
    for result, mine in zip(results, scored):
        assert torch.allclose(result.logprobs, mine, atol=1e-4)
