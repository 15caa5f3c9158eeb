"""LoRA specs, the layers they adapt in each tiny family, and the merged weights (checked by hand)."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from evr1.errors import ConfigError
from evr1.models import load_model
from evr1.models.lora import add_adapters, merged_state_dict, scalings, target_names
from evr1.models.testing import tiny_spec
from evr1.specs import LoraSpec, ModelSpec

PROJECTIONS = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rank": 0}, "rank\n  Input should be greater than 0"),
        ({"alpha": 0.0}, "alpha\n  Input should be greater than 0"),
        ({"dropout": 1.0}, "dropout\n  Input should be less than 1"),
        ({"target_modules": ()}, "name at least one linear layer"),
        ({"target_modules": ("q_proj", "v_proj", "q_proj")}, "repeated names ['q_proj']"),
        ({"vision": "all"}, "Input should be 'frozen', 'merger' or 'tower'"),
        ({"bias": "all"}, "Extra inputs are not permitted"),
    ],
)
def test_lora_spec_rejects_bad_values(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        LoraSpec(**fields)


def test_frozen_vision_contradicting_adapted_vision_is_refused() -> None:
    with pytest.raises(ValidationError, match="freeze_vision=True contradicts lora.vision='merger'"):
        ModelSpec(freeze_vision=True, lora=LoraSpec(vision="merger"))
    assert ModelSpec(freeze_vision=True, lora=LoraSpec()).lora.vision == "frozen"  # consistent: accepted


def _linear(model, name: str) -> bool:
    return isinstance(model.get_submodule(name), torch.nn.Linear)


def test_default_targets_are_the_language_models_projections_only(fam, model) -> None:
    names = target_names(model, LoraSpec())
    layers = model.config.get_text_config().num_hidden_layers
    if fam == "qwen3.5":  # layer 0 Gated DeltaNet (3 projections), layer 1 full attention (4), 3 MLP ones each
        assert len(names) == (3 + 3) + (4 + 3)
        assert {n.rsplit(".", 1)[-1] for n in names} == PROJECTIONS | {"in_proj_qkv", "in_proj_z", "out_proj"}
        assert {n.rsplit(".", 2)[-2] for n in names if ".layers.0." in n} == {"linear_attn", "mlp"}
    else:
        assert len(names) == 7 * layers  # 4 attention + 3 MLP projections per decoder layer
        assert {n.rsplit(".", 1)[-1] for n in names} == PROJECTIONS
    assert all(".language_model.layers." in n and _linear(model, n) for n in names)  # never the tower's MLP


@pytest.mark.parametrize("vision", ["merger", "tower"])
def test_vision_options_add_the_merger_or_the_whole_tower(model, vision: str) -> None:
    names = set(target_names(model, LoraSpec(target_modules=("q_proj",), vision=vision)))
    visual = {n for n in names if ".visual." in f".{n}"}
    tower = model.model.visual.named_modules(prefix="model.visual")
    linear_in_tower = {n for n, m in tower if isinstance(m, torch.nn.Linear)}
    mergers = {n for n in linear_in_tower if "merger" in n}
    assert mergers and mergers <= linear_in_tower
    assert visual == (mergers if vision == "merger" else linear_in_tower)
    assert {n.rsplit(".", 1)[-1] for n in names - visual} == {"q_proj"}


def test_qwen3_deepstack_mergers_count_as_mergers(model_cache) -> None:
    model = load_model(tiny_spec("qwen3-vl", model_cache))
    names = target_names(model, LoraSpec(target_modules=("q_proj",), vision="merger"))
    assert any(".deepstack_merger_list." in n for n in names)  # Qwen3-VL's extra mergers, beside its main one


def test_unknown_target_lists_the_candidates(fam, model) -> None:
    with pytest.raises(ConfigError) as err:
        target_names(model, LoraSpec(target_modules=("q_proj", "qkv_proj", "lm_head")))
    text = str(err.value)
    assert "model.lora.target_modules: ['qkv_proj', 'lm_head'] name no linear layer" in text
    if fam == "qwen3.5":
        assert ("['down_proj', 'gate_proj', 'in_proj_a', 'in_proj_b', 'in_proj_qkv', 'in_proj_z', 'k_proj', 'o_proj',"
                " 'out_proj', 'q_proj', 'up_proj', 'v_proj']") in text
    else:
        assert "['down_proj', 'gate_proj', 'k_proj', 'o_proj', 'q_proj', 'up_proj', 'v_proj']" in text


def test_merged_weights_are_w_plus_scale_b_a_by_hand(model_cache) -> None:
    spec = tiny_spec("qwen2.5-vl", model_cache)
    base = load_model(spec).state_dict()
    model = add_adapters(load_model(spec), LoraSpec(rank=4, alpha=6.0, target_modules=("v_proj", "down_proj")), seed=0)
    assert set(scalings(model).values()) == {1.5}  # alpha / rank
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # B starts at zero; give it values so that the merge shows
        for name, param in model.named_parameters():
            if ".lora_B." in name:
                param.copy_(torch.randn(param.shape, generator=g))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    merged = merged_state_dict(model.state_dict(), scalings(model))
    assert list(merged) == list(base)  # the base model's names, in its order
    layer = "model.language_model.layers.1.mlp.down_proj"
    a, b = state[f"{layer}.lora_A.default.weight"], state[f"{layer}.lora_B.default.weight"]
    assert a.shape == (4, base[f"{layer}.weight"].shape[1]) and b.shape == (base[f"{layer}.weight"].shape[0], 4)
    assert torch.allclose(merged[f"{layer}.weight"], base[f"{layer}.weight"] + 1.5 * b @ a, atol=1e-6)
    changed = {k for k in base if not torch.equal(merged[k], base[k])}
    assert changed == {n for n in base if n.endswith(("v_proj.weight", "down_proj.weight")) and ".language_model." in n}
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())  # merging left the model alone


def test_adapter_init_follows_the_seed(model_cache) -> None:
    spec = tiny_spec("qwen2.5-vl", model_cache)
    lora = LoraSpec(rank=2, target_modules=("q_proj",))

    def adapter_a(seed: int) -> torch.Tensor:
        model = add_adapters(load_model(spec), lora, seed=seed)
        return model.get_submodule("model.language_model.layers.0.self_attn.q_proj").lora_A["default"].weight

    torch.manual_seed(123)
    first = adapter_a(0)
    torch.manual_seed(456)  # the global generator does not matter
    assert torch.equal(adapter_a(0), first) and not torch.equal(adapter_a(1), first)
