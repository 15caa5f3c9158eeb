"""The tiny-model factory, the offline tokenizer and chat templates, and loading by spec."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from evr1.errors import Evr1Error
from evr1.models import FAMILIES, TinyModel, alignment, family, load_model, load_processor, model_path
from evr1.models.loading import resolve_attention, resolve_dtype
from evr1.models.testing import tiny_spec
from evr1.models.tokenizer import SPECIAL_TOKENS, TAG_TOKENS
from evr1.registry import MODELS
from evr1.specs import ModelSpec


def test_registry_has_one_tiny_model_per_family() -> None:
    for fam in FAMILIES:
        entry = MODELS.get(f"tiny-{fam}")
        assert isinstance(entry, TinyModel) and entry.family == fam
        assert MODELS.describe(f"tiny-{fam}").origin == "builtin"
    for fam in ("qwen3-vl", "qwen3.5"):
        entry = MODELS.get(f"tiny-{fam}-moe")
        assert isinstance(entry, TinyModel) and entry.family == fam and entry.moe
    assert MODELS.describe("tiny-qwen3.5-moe").summary == (
        "A random-init Qwen3.5 MoE (2 layers of width 64, Gated DeltaNet + full attention) for tests and the CPU"
        " quickstart.")  # what `evr1 list models` prints


def test_build_is_deterministic_and_cached(tmp_path: Path) -> None:
    tiny = TinyModel(name="t", family="qwen2-vl")
    first = tiny.materialize(tmp_path / "a")
    assert tiny.materialize(tmp_path / "a") == first  # cached: same directory, not rebuilt
    second = tiny.materialize(tmp_path / "b")
    assert first.name == second.name and first.name.startswith("t-")
    for name in ("config.json", "tokenizer.json", "processor_config.json", "generation_config.json"):
        assert (first / name).read_text() == (second / name).read_text(), name
    a, b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_concurrent_builds_share_one_directory(tmp_path: Path) -> None:
    tiny = TinyModel(name="t", family="qwen2.5-vl")
    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(lambda _: tiny.materialize(tmp_path), range(2)))
    assert paths[0] == paths[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [paths[0].name, paths[0].name + ".lock"]


def test_load_by_directory(spec: ModelSpec, fam: str) -> None:
    by_path = ModelSpec(name=model_path(spec), dtype="float32")
    assert family(by_path) == fam
    assert family(load_model(by_path)) == fam


def test_config_change_changes_directory(tmp_path: Path) -> None:
    base = TinyModel(name="t", family="qwen3-vl")
    assert base.directory(tmp_path) != TinyModel(name="t", family="qwen3-vl", seed=1).directory(tmp_path)
    assert base.directory(tmp_path) != TinyModel(name="t", family="qwen3-vl", hidden=32).directory(tmp_path)


def test_tokenizer_special_tokens_are_single_ids(processor) -> None:
    tok = processor.tokenizer
    for token in SPECIAL_TOKENS + TAG_TOKENS:
        ids = tok(token, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1 and tok.convert_ids_to_tokens(ids[0]) == token
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert 400 <= len(tok) <= 1000
    ids = tok("<think>red</think><answer>A</answer><|im_end|>")["input_ids"]
    # Tags stay in the decoded text; the end-of-turn token is special and is dropped.
    assert tok.decode(ids, skip_special_tokens=True) == "<think>red</think><answer>A</answer>"


def test_byte_level_tokenizer_round_trips_any_text(processor) -> None:
    text = "Zürich → 東京, 3.14 seconds! <answer>é</answer>"
    ids = processor.tokenizer(text)["input_ids"]
    assert processor.tokenizer.decode(ids) == text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "qwen2-vl",
            (
                "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                "<|vision_start|><|video_pad|><|vision_end|>Why?<|im_end|>\n<|im_start|>assistant\n"
            ),
        ),
        (
            "qwen2.5-vl",
            (
                "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                "<|vision_start|><|video_pad|><|vision_end|>Why?<|im_end|>\n<|im_start|>assistant\n"
            ),
        ),
        (
            "qwen3-vl",
            "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>Why?<|im_end|>\n<|im_start|>assistant\n",
        ),
        (  # Qwen3.5 thinks by default: its generation prompt opens the thinking block
            "qwen3.5",
            ("<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>Why?<|im_end|>\n<|im_start|>assistant\n"
             "<think>\n"),
        ),
    ],
)
def test_chat_template_layout(name: str, expected: str, model_cache: Path) -> None:
    processor = load_processor(tiny_spec(name, model_cache))
    messages = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": "Why?"}]}]
    assert processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == expected


def test_qwen35_thinking_switch(model_cache: Path) -> None:
    """`enable_thinking=False` (PromptSpec.thinking=False) gives Qwen3.5's empty thinking block; other families'
    templates ignore the argument."""
    from evr1.models import build_prompt

    messages = [{"role": "user", "content": "Why?"}]
    head = "<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n"
    qwen35 = load_processor(tiny_spec("qwen3.5", model_cache))
    assert build_prompt(qwen35, messages, thinking=False).text == head + "<think>\n\n</think>\n\n"
    assert build_prompt(qwen35, messages, thinking=True).text == head + "<think>\n"
    assert build_prompt(qwen35, messages).text == head + "<think>\n"
    assert build_prompt(load_processor(tiny_spec("qwen3-vl", model_cache)), messages, thinking=False).text == head


@pytest.mark.parametrize(("name", "model_type", "fam"), [("tiny-qwen3-vl-moe", "qwen3_vl_moe", "qwen3-vl"),
                                                         ("tiny-qwen3.5-moe", "qwen3_5_moe", "qwen3.5")])
def test_moe_variants(name: str, model_type: str, fam: str, model_cache: Path) -> None:
    """The MoE tiny models: their family's model type with 4 experts (2 per token), loaded and generating."""
    from evr1.models.families import is_hybrid

    spec = ModelSpec(name=name, cache_dir=str(model_cache), dtype="float32")
    model = load_model(spec)
    assert model.config.model_type == model_type and family(model) == fam == family(spec)
    text = model.config.get_text_config()
    assert (text.num_experts, text.num_experts_per_tok) == (4, 2)
    assert is_hybrid(model) == (fam == "qwen3.5")
    assert any(".mlp.experts." in n for n, _ in model.named_parameters())
    out = model.generate(input_ids=torch.tensor([[20, 21, 22]]), max_new_tokens=3, do_sample=False)
    assert out.shape == (1, 6)


def test_qwen35_layers_are_hybrid(model_cache: Path) -> None:
    """Every 4th decoder layer is full attention, the last one always: 2 layers = one Gated DeltaNet, one full."""
    from evr1.models.tiny import _layer_types

    assert _layer_types(2) == ["linear_attention", "full_attention"]
    assert _layer_types(8) == ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"]
    assert _layer_types(5) == ["linear_attention"] * 3 + ["full_attention"] * 2
    model = load_model(tiny_spec("qwen3.5", model_cache))
    kinds = [type(layer.linear_attn if hasattr(layer, "linear_attn") else layer.self_attn).__name__
             for layer in model.model.language_model.layers]
    assert kinds == ["Qwen3_5GatedDeltaNet", "Qwen3_5Attention"]


def test_chat_template_keeps_a_given_system_and_assistant_turns(processor) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<answer>A</answer>"},
    ]
    text = processor.apply_chat_template(messages, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<answer>A</answer><|im_end|>\n"
    )


def test_load_model_by_spec(fam: str, spec: ModelSpec, model) -> None:
    config = json.loads((Path(model_path(spec)) / "config.json").read_text())
    assert family(config["model_type"]) == fam
    assert family(spec) == fam and family(model) == fam and family(model.config) == fam
    assert model.config._attn_implementation == "sdpa" and model.dtype == torch.float32
    assert not model.training
    n_params = sum(p.numel() for p in model.parameters())
    assert 300_000 < n_params < 1_000_000


def test_placeholder_ids_match_the_tokenizer(model, processor) -> None:
    tok = processor.tokenizer
    assert model.config.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>")
    assert model.config.video_token_id == tok.convert_tokens_to_ids("<|video_pad|>")
    assert model.config.get_text_config().vocab_size == len(tok)
    assert set(model.generation_config.eos_token_id) == {tok.eos_token_id, tok.pad_token_id}


@pytest.mark.parametrize(("name", "pixels"), [("qwen2-vl", 28), ("qwen2.5-vl", 28), ("qwen3-vl", 32), ("qwen3.5", 32)])
def test_family_alignment(name: str, pixels: int) -> None:
    assert alignment(name) == pixels


@pytest.mark.parametrize(
    ("model_type", "expected"),
    [("qwen2_vl", "qwen2-vl"), ("qwen2_5_vl", "qwen2.5-vl"), ("qwen3_vl", "qwen3-vl"), ("qwen3_vl_moe", "qwen3-vl"),
     ("qwen3_5", "qwen3.5"), ("qwen3_5_moe", "qwen3.5")],
)
def test_family_of_model_type(model_type: str, expected: str) -> None:
    assert family(model_type) == expected


def test_family_of_unknown_model_type_names_it() -> None:
    with pytest.raises(Evr1Error, match="llava"):
        family("llava")


def test_unknown_model_name_lists_registered_models(tmp_path: Path) -> None:
    with pytest.raises(Evr1Error, match="tiny-qwen3-vl"):
        model_path(ModelSpec(name="./no/such/dir", cache_dir=str(tmp_path)))
    (tmp_path / "empty").mkdir()
    with pytest.raises(Evr1Error, match="config.json"):
        model_path(ModelSpec(name=str(tmp_path / "empty")))


def test_auto_dtype_and_attention_on_cpu() -> None:
    spec = ModelSpec()
    assert resolve_dtype(spec, "cpu") == torch.float32
    assert resolve_attention(spec, "cpu") == "sdpa"
    assert resolve_dtype(ModelSpec(dtype="bfloat16"), "cpu") == torch.bfloat16
    assert resolve_attention(ModelSpec(attn_implementation="eager"), "cpu") == "eager"


def test_freeze_vision_and_gradient_checkpointing(model_cache: Path) -> None:
    model = load_model(tiny_spec("qwen2.5-vl", model_cache, freeze_vision=True, gradient_checkpointing=True))
    assert not any(p.requires_grad for p in model.model.visual.parameters())
    assert all(p.requires_grad for p in model.model.language_model.parameters())
    assert model.is_gradient_checkpointing
