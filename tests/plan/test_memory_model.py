"""The memory model's terms by hand, the published architectures, the frame search and `evr1 plan` as a user runs it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from evr1.plan.architecture import PUBLISHED, Architecture, from_config
from evr1.plan.memory import Workload, advice, block_elements, estimate, largest_frames, layer_elements, lora_params

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_inproc import evr1

MiB = 2**20
# A made-up model with round numbers, so that every term can be computed by hand below.
ARCH = Architecture(
    family="qwen2.5-vl", hidden=100, layers=10, heads=4, kv_heads=2, head_dim=25, intermediate=400, vocab=1000,
    v_depth=4, v_hidden=50, v_intermediate=200, v_heads=2, patch=14, temporal_patch=2, merge=2, deepstack=0,
    params=1_000_000, layer_params=50_000, vision_params=100_000,
)
WORK = Workload(frames=8, tokens_per_patch=10, text_tokens=60, n=4, response_tokens=25, micro_batch_tokens=10_000,
                compute_bytes=4, chunk_tokens=0)


def test_per_token_elements_of_a_layer_and_a_block() -> None:
    # 6h + 3q + 2kv + heads + 4i + 2 = 600 + 300 + 100 + 4 + 1600 + 2; 11w + heads + 4i + 2 = 550 + 2 + 800 + 2
    assert layer_elements(ARCH) == 2606
    assert block_elements(ARCH) == 1354
    assert block_elements(replace(ARCH, family="qwen2-vl")) == 9 * 50 + 2 + 2 * 200 + 4


def test_terms_of_a_float32_step_by_hand() -> None:
    terms = estimate(ARCH, WORK).terms
    prompt = 4 * 10 + 60  # 4 frame pairs of 10 tokens and the text: 100 tokens; 4 rows of 25 after it
    assert WORK.prompt_tokens == prompt and WORK.rows_per_micro_batch == 4
    assert terms["weights"] == 4 * 1_000_000
    assert terms["gradients"] == 4 * 1_000_000 and terms["optimizer"] == 8 * 1_000_000
    tokens, kv = prompt + 4 * 25, 2 * 2 * 25 * 4
    assert terms["activations"] == 10 * (tokens * 2606 * 4 + 4 * prompt * kv)
    assert terms["logprob chunk"] == 4 * 4 * 1000 * 100  # 4 float32 [100 tokens, 1000] tensors
    patches = 4 * 10 * 4
    assert terms["vision tower"] == patches * 1176 * 4 + 40 * 100 * 4 + 4 * patches * 1354 * 4 + patches * 1354 * 4


def test_sharding_checkpointing_chunking_and_lora_change_their_terms() -> None:
    fsdp = estimate(ARCH, replace(WORK, dp=4, fsdp=True, compute_bytes=2)).terms
    root = 1_000_000 - 10 * 50_000
    assert fsdp["weights"] == 4 * 1_000_000 / 4 + 2 * (root + 2 * 50_000)
    assert fsdp["optimizer"] == 8 * 1_000_000 / 4
    ckpt = estimate(ARCH, replace(WORK, checkpointing=True)).terms
    tokens, kv = 200, 2 * 2 * 25 * 4
    assert ckpt["activations"] == 10 * (tokens * 100 * 4 + 100 * kv) + 2 * (tokens * 2606 * 4 + 4 * 100 * kv)
    assert estimate(ARCH, replace(WORK, chunk_tokens=16)).terms["logprob chunk"] == 4 * 4 * 1000 * 16
    assert estimate(ARCH, replace(WORK, chunk_tokens=16, entropy_grad=True)).terms["logprob chunk"] == 5 * 4 * 1000 * 16
    adapters = lora_params(ARCH, 8, ("q_proj", "down_proj"))
    assert adapters == 10 * 8 * ((100 + 100) + (400 + 100))
    lora = estimate(ARCH, replace(WORK, lora_params=adapters)).terms
    assert lora["gradients"] == 4 * adapters and lora["optimizer"] == 8 * adapters
    assert estimate(ARCH, replace(WORK, grouped=False)).terms["activations"] == 10 * 4 * 125 * 2606 * 4


def test_rows_per_micro_batch_split_a_group_over_the_budget() -> None:
    assert replace(WORK, micro_batch_tokens=150).rows_per_micro_batch == 2  # (150 - 100) // 25
    assert replace(WORK, micro_batch_tokens=50).rows_per_micro_batch == 1  # a row alone over the budget
    assert replace(WORK, micro_batch_tokens=500, grouped=False).rows_per_micro_batch == 4  # 500 // 125


def test_largest_frames_is_the_last_count_that_fits() -> None:
    def at(frames: int) -> Workload:
        return replace(WORK, frames=frames)

    budget = estimate(ARCH, at(40)).total
    assert largest_frames(ARCH, at, budget) == 40
    assert largest_frames(ARCH, at, budget - 1) == 38
    assert largest_frames(ARCH, at, 1.0) == 0
    assert advice(ARCH, WORK, estimate(ARCH, WORK).total) == []
    tips = advice(ARCH, WORK, estimate(ARCH, WORK).total / 2)
    assert tips and tips[0].startswith("model.gradient_checkpointing=True: saves")


def test_published_architectures_count_the_known_parameters() -> None:
    qwen25 = from_config(PUBLISHED["Qwen/Qwen2.5-VL-7B-Instruct"])
    assert (qwen25.params, qwen25.vision_params, qwen25.layers, qwen25.vocab) == (8_292_166_656, 676_550_144, 28, 152_064)
    assert layer_elements(qwen25) == 6 * 3584 + 3 * 3584 + 2 * 512 + 28 + 4 * 18944 + 2
    qwen3 = from_config(PUBLISHED["Qwen/Qwen3-VL-8B-Instruct"])
    assert (qwen3.params, qwen3.deepstack, qwen3.factor) == (8_767_123_696, 3, 32)


def test_evr1_plan_prints_the_terms_the_fit_and_the_largest_frame_count() -> None:
    out = evr1("plan", "quickstart", "--gpu-memory", "1GB")
    assert out.returncode == 0, out.stderr
    for term in ("weights", "gradients", "optimizer", "activations", "logprob chunk", "vision tower", "total"):
        assert f"    {term}" in out.stdout
    assert "fits" in out.stdout and "largest frame count that fits:" in out.stdout
    tight = evr1("plan", "quickstart", "--gpu-memory", "1MiB", "--headroom", "0")
    assert "does NOT fit" in tight.stdout and "to fit: " in tight.stdout


@pytest.mark.parametrize("size", ["80 GB", "lots", "12 parsecs"])
def test_evr1_plan_refuses_a_size_it_cannot_read(size: str) -> None:
    out = evr1("plan", "quickstart", "--gpu-memory", size)
    if size == "80 GB":
        assert out.returncode == 0
    else:
        assert out.returncode == 2 and "give a size such as 80GB" in out.stderr
