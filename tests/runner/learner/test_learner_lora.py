"""The learner with LoRA adapters: only the adapters train, the engine gets the merged weights,
checkpoints continue exactly, the export loads without peft, two workers step as one, and with the
adapters off it scores as the base model (the KL reference)."""

from __future__ import annotations

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.errors import ConfigError, Evr1Error
from evr1.models import load_model, load_processor
from evr1.models.forward import response_logprobs
from evr1.models.lora import ADAPTER_DIR, adapters_off
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.distributed import free_port
from evr1.runner.learner.learner import Learner
from evr1.runner.learner.logprobs import LogprobModel
from evr1.specs import AlgoSpec, LoraSpec, ModelSpec, OptimSpec, TrainerSpec

from .learner_fixtures import (  # noqa: F401
    FAMILY,
    SCENARIOS,
    TRAINER,
    dp_updates,
    in_worker_group,
    lprocessor_fixture,
    lspec_fixture,
    make_samples,
    params_of,
    run_workers,
    scenario_samples,
    shard,
)

LORA = LoraSpec(rank=4, alpha=8.0)
TIMING = ("update_s", "tokens_per_s", "prompt_fallback_rows")  # and a count of per-shard work


def lora_learner(
    spec: ModelSpec, *, temperature: float = 1.0, world_size: int = 1, rank: int = 0, **trainer
) -> Learner:
    optim = OptimSpec(lr=1e-2, warmup_steps=2, schedule="cosine", weight_decay=0.01)
    trainer_spec = TrainerSpec(**{"steps": 5, "micro_batch_tokens": 400, **trainer})
    spec = spec.model_copy(update={"lora": LORA})
    return Learner.from_spec(
        spec, AlgoSpec(), optim, trainer_spec, temperature=temperature, world_size=world_size, rank=rank
    )


def adapters(learner: Learner) -> dict[str, torch.Tensor]:
    return {k: v for k, v in params_of(learner).items() if ".lora_" in k}


def test_only_the_adapters_train_and_the_base_stays_bit_identical(lspec, lprocessor) -> None:
    learner = lora_learner(lspec)
    trained = {id(p) for group in learner.optimizer.param_groups for p in group["params"]}
    named = dict(learner.model.named_parameters())
    assert trained == {id(p) for n, p in named.items() if ".lora_" in n}  # AdamW sees the adapters only
    before = params_of(learner)
    metrics = learner.update(make_samples(lprocessor, "vit", seed=3))
    after = params_of(learner)
    assert metrics["skipped_steps"] == 0.0 and metrics["grad_norm"] > 0
    assert all(torch.equal(before[k], after[k]) for k in before if ".lora_" not in k)  # the vision tower included
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(".lora_A." in k or ".lora_B." in k for k in changed)
    assert all(after[k].abs().sum() > 0 for k in before if ".lora_B." in k)  # B left zero after one step


def test_engine_after_sync_scores_and_samples_like_the_learner(lspec, lprocessor) -> None:
    temperature = 0.7
    learner = lora_learner(lspec, temperature=temperature)
    samples = make_samples(lprocessor, "vit", seed=5)
    learner.update(samples)
    engine = HFEngine(load_model(lspec), lprocessor)
    prompts, responses = [s.prompt for s in samples], [s.response_ids for s in samples]
    stale, _ = response_logprobs(engine.model, prompts, responses, engine.pad_id, temperature=temperature)
    engine.load_weights(learner.weights())
    fresh, _ = response_logprobs(engine.model, prompts, responses, engine.pad_id, temperature=temperature)
    for row, mine in enumerate(learner.compute_logprobs(samples)):
        assert torch.allclose(fresh[row, : len(mine)], mine, atol=1e-5)
        assert not torch.allclose(stale[row, : len(mine)], mine, atol=1e-3)  # the adapters changed the policy
    results = engine.generate(prompts, SamplingParams(n=2, temperature=temperature, max_tokens=5, seed=0))
    rollouts = [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r))) for r in results]
    for result, mine in zip(results, learner.compute_logprobs(rollouts)):
        assert torch.allclose(result.logprobs, mine, atol=1e-4)


def test_adapters_off_scores_as_the_base_model_then_switches_them_back_on(lspec, lprocessor) -> None:
    temperature = 0.7
    learner = lora_learner(lspec, temperature=temperature)
    samples = make_samples(lprocessor, "vit", seed=6)
    learner.update(samples)  # the adapters are no longer zero
    trainable = {n for n, p in learner.model.named_parameters() if p.requires_grad}
    base = LogprobModel.from_spec(lspec, TrainerSpec(micro_batch_tokens=400), temperature=temperature)
    expected = base.compute_logprobs(samples)
    with adapters_off(learner.model):
        off = learner.compute_logprobs(samples)
    on = learner.compute_logprobs(samples)
    for row, want in enumerate(expected):
        assert torch.allclose(off[row], want, atol=1e-5)
        assert not torch.allclose(on[row], want, atol=1e-3)  # back on: the trained policy again
    with pytest.raises(RuntimeError, match="inside the block"), adapters_off(learner.model):
        raise RuntimeError("inside the block")
    after = learner.compute_logprobs(samples)
    assert all(torch.equal(a, b) for a, b in zip(after, on))
    assert {n for n, p in learner.model.named_parameters() if p.requires_grad} == trainable  # still trainable
    with pytest.raises(Evr1Error, match="has no LoRA adapters to switch off"), adapters_off(base.model):
        pass


def test_save_and_load_continue_exactly(lspec, lprocessor, tmp_path) -> None:
    first, second = make_samples(lprocessor, "vit", seed=1), make_samples(lprocessor, "tvi", seed=2)
    original = lora_learner(lspec, mini_batches=2)
    original.update(first)
    original.save(str(tmp_path / "step_1"))
    saved = torch.load(tmp_path / "step_1" / "model.pt", weights_only=True)
    assert set(saved) == set(adapters(original))  # adapters only: the base is reloaded from model.name
    resumed = lora_learner(lspec, mini_batches=2, seed=9)  # another initialisation, replaced by the checkpoint
    assert any(not torch.equal(v, adapters(original)[k]) for k, v in adapters(resumed).items())
    resumed.load(str(tmp_path / "step_1"))
    assert resumed.optimizer_steps == 2 and resumed.scheduler.last_epoch == 2
    want, got = original.update(second), resumed.update(second)
    assert {k: v for k, v in got.items() if k not in TIMING} == {k: v for k, v in want.items() if k not in TIMING}
    a, b = params_of(original), params_of(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_of_another_setup_is_refused(lspec, tmp_path) -> None:
    full = Learner.from_spec(lspec, AlgoSpec(), OptimSpec(), TrainerSpec(micro_batch_tokens=400))
    full.save(str(tmp_path / "full"))
    with pytest.raises(Evr1Error, match=r"does not hold this learner's LoRA adapters .* 28 missing"):
        lora_learner(lspec).load(str(tmp_path / "full"))


def test_export_is_a_plain_merged_model_with_the_adapter_beside_it(lspec, lprocessor, tmp_path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    learner = lora_learner(lspec)
    samples = make_samples(lprocessor, "vi", seed=4)
    learner.update(samples)
    learner.export_hf(str(tmp_path / "final"), lprocessor)
    merged = learner.weights()
    plain = AutoModelForImageTextToText.from_pretrained(tmp_path / "final")
    assert not hasattr(plain, "peft_config")
    assert plain.state_dict().keys() == merged.keys()
    assert all(torch.equal(v, merged[k]) for k, v in plain.state_dict().items())
    rebuilt = PeftModel.from_pretrained(load_model(lspec), tmp_path / "final" / ADAPTER_DIR).merge_and_unload()
    assert all(torch.allclose(v, merged[k], atol=1e-6) for k, v in rebuilt.state_dict().items())
    exported = ModelSpec(name=str(tmp_path / "final"), dtype="float32")
    engine = HFEngine(load_model(exported), load_processor(exported))
    results = engine.generate([s.prompt for s in samples], SamplingParams(n=2, max_tokens=4, seed=0))
    rollouts = [Sample(samples[r.prompt_index].prompt, r.token_ids, torch.zeros(len(r))) for r in results]
    for result, mine in zip(results, learner.compute_logprobs(rollouts)):
        assert torch.allclose(result.logprobs, mine, atol=1e-4)


def test_lora_with_fsdp_is_refused(lspec) -> None:
    with pytest.raises(ConfigError, match="model.lora is not supported with FSDP sharding yet"):
        Learner.from_spec(lspec.model_copy(update={"lora": LORA}), AlgoSpec(), OptimSpec(), TrainerSpec(), fsdp=True)


# -- two data-parallel workers (spawned processes, gloo) -------------------------------------
DP_SCENARIOS = ("mixed", "video_vs_text")  # offline rows and two mini-batches; a text-only worker


def lora_dp_worker(rank: int, world_size: int, address: str, cache_dir: str, out_dir: str) -> None:
    in_worker_group(rank, world_size, address, out_dir,
                    lambda out: dp_updates(rank, world_size, cache_dir, out, DP_SCENARIOS, lora_learner))


def test_two_workers_match_one_worker_on_the_whole_batch(lspec, lprocessor, tmp_path) -> None:
    run_workers(2, f"127.0.0.1:{free_port()}", lspec.cache_dir, str(tmp_path), 240, worker=lora_dp_worker)
    for name in DP_SCENARIOS:
        single = lora_learner(lspec, **TRAINER)
        expected = single.update(scenario_samples(lprocessor, name))
        want = params_of(single)
        results = [torch.load(tmp_path / f"{name}-{rank}.pt", weights_only=True) for rank in (0, 1)]
        for result in results:
            for key in expected.keys() - set(TIMING):
                assert result["metrics"][key] == pytest.approx(expected[key], rel=1e-4, abs=1e-6), (name, key)
            for key, value in result["params"].items():
                assert torch.allclose(value, want[key], atol=2e-4), (name, key)  # AdamW's first step: lr-sized noise
        assert all(torch.equal(results[0]["params"][k], results[1]["params"][k]) for k in want)  # replicas agree
        assert all(torch.equal(results[0]["params"][k], want[k]) for k in want if ".lora_" not in k)  # base frozen
