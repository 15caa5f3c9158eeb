"""The HF engine on CUDA with the tiny models (skipped without a GPU): bf16 as a smoke test, and
float32 with a sharpened output layer (log-probs that depend on the input) against one full forward
at a tolerance that catches wrong positions in cached decoding."""

from __future__ import annotations

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.models import load_model
from evr1.models.forward import response_logprobs
from evr1.models.testing import video_prompts
from evr1.specs import RolloutSpec

SHARPEN = 30.0  # as tests/engines/conftest.py: random init is near-uniform


@pytest.mark.gpu
def test_bf16_sdpa_rollout_on_cuda(spec, processor, fam: str) -> None:
    engine = HFEngine.from_spec(spec.model_copy(update={"dtype": "auto"}), RolloutSpec(), device="cuda")
    assert engine.model.dtype == (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32)
    assert engine.model.config._attn_implementation in ("sdpa", "flash_attention_2")
    prompts = video_prompts(processor, fam, ["What colour?", "A longer question about the video?"])
    results = engine.generate(prompts, SamplingParams(n=3, max_tokens=8, seed=0))
    assert len(results) == 6 and all(r.logprobs.device.type == "cpu" for r in results)
    logprobs, _ = response_logprobs(engine.model, [prompts[r.prompt_index] for r in results],
                                    [r.token_ids for r in results], engine.pad_id)
    for i, r in enumerate(results):  # cached decode vs one full forward, both in bf16
        assert torch.allclose(r.logprobs, logprobs[i, : len(r)].cpu(), atol=0.1)
    again = engine.generate(prompts, SamplingParams(n=3, max_tokens=8, seed=0))
    assert all(torch.equal(a.token_ids, b.token_ids) for a, b in zip(results, again))


@pytest.mark.gpu
def test_float32_cached_decode_matches_a_full_forward_on_cuda(spec, processor, fam: str, monkeypatch) -> None:
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)  # float32 means float32 here
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    model = load_model(spec.model_copy(update={"dtype": "float32"}), device="cuda")
    with torch.no_grad():
        model.lm_head.weight.mul_(SHARPEN)
    engine = HFEngine(model, processor)
    prompts = video_prompts(processor, fam, ["What colour?", "A longer question about the video?"])
    results = engine.generate(prompts, SamplingParams(n=3, max_tokens=8, seed=0))
    logprobs, _ = response_logprobs(model, [prompts[r.prompt_index] for r in results], [r.token_ids for r in results],
                                    engine.pad_id)
    for i, r in enumerate(results):
        assert torch.allclose(r.logprobs, logprobs[i, : len(r)].cpu(), atol=1e-3), i
