"""The vLLM engine for real, on a small random-init Qwen2.5-VL (needs CUDA and vLLM: skipped here).

The model is larger than the CPU tiny models (head_dim 64, which vLLM's attention kernels take).
vLLM starts from the saved random init, then receives an HF copy whose output layer is sharpened
(so log-probs depend visibly on the input): its rollouts come in prompt-major order, n per prompt,
with log-probs equal to the sharpened model's teacher-forced ones at the sampling temperature, as
the learner's grouped pass scores them (`logprobs_mode="processed_logprobs"`, bf16 tolerance),
which holds only if the weight sync reached every layer vLLM uses.
"""

from __future__ import annotations

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.models import load_model, load_processor
from evr1.models.testing import video_prompts
from evr1.models.tiny import TinyModel
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.logprobs import LogprobModel
from evr1.specs import ModelSpec, RolloutSpec

SMALL = TinyModel(name="gpu-small-qwen2.5-vl", family="qwen2.5-vl", hidden=256, heads=4, vision_width=128)


@pytest.mark.gpu
def test_vllm_rollouts_and_weight_sync(tmp_path) -> None:
    pytest.importorskip("vllm", reason="the vllm extra is not installed")
    from evr1.engines.vllm import VLLMEngine

    spec = ModelSpec(name=str(SMALL.materialize(tmp_path)), dtype="bfloat16")
    rollout = RolloutSpec(engine="vllm", gpu_memory_utilization=0.3, enforce_eager=True, max_prompt_tokens=2048)
    engine = VLLMEngine.from_spec(spec, rollout)
    processor = load_processor(spec)
    prompts = video_prompts(processor, "qwen2.5-vl", ["What colour?", "Which way does it move?"])
    model = load_model(spec, device="cuda")
    with torch.no_grad():
        model.lm_head.weight.mul_(30.0)
    engine.sync_from(model)
    assert engine.version == 1

    pad = processor.tokenizer.pad_token_id
    for temperature in (1.0, 0.5):
        results = engine.generate(prompts, SamplingParams(n=3, temperature=temperature, max_tokens=8, seed=0))
        assert [(r.prompt_index, r.sample_index) for r in results] == [(i, j) for i in range(2) for j in range(3)]
        # the learner's grouped pass (each prompt once, its n responses on its cache), as in training
        scorer = LogprobModel(model, micro_batch_tokens=16_384, temperature=temperature, pad_id=pad)
        expected = scorer.compute_logprobs(
            [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r)), group_id=r.prompt_index) for r in results]
        )
        for i, r in enumerate(results):
            assert r.finish_reason in ("stop", "length") and len(r) <= 8
            # bf16 on both sides, sharpened: the HF engine alone already differs from a full forward
            # by up to ~0.1 (measured on CPU); a broken sync or wrong prompt is off by whole nats
            gap = (r.logprobs - expected[i]).abs()
            assert gap.max() < 0.25 and gap.mean() < 0.05, (temperature, gap)
