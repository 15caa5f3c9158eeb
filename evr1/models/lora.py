"""LoRA adapters on a Qwen-VL policy (peft), and the merged weights that engines and exports get.

The adapters are injected into the HF model in place (`peft.inject_adapter_in_model`), so the
model keeps its class and every attribute the rest of evr1 reads (`model.model.visual`, ...).
Each adapted linear layer `name` then holds `name.base_layer.weight` (frozen) and the trainable
`name.lora_A.default.weight` (r x in) and `name.lora_B.default.weight` (out x r, zero at start).

`merged_state_dict` turns such a state dict into the base model's own one, each adapted weight
replaced by `W + scale * B @ A` (computed in float32, cast back to W's dtype), without touching
the model: rollout engines and exported checkpoints need no LoRA support. `adapters_off` makes the
model compute as its frozen base for a while (the KL reference, with no second copy of the model).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from evr1.errors import ConfigError, Evr1Error
from evr1.specs import LINEAR_ATTENTION_PROJECTIONS, LoraSpec

ADAPTER = "default"  # peft's adapter name; evr1 uses one adapter
ADAPTER_DIR = "lora_adapter"  # the adapter (peft format) inside an exported model directory
_PEFT_PREFIX = "base_model.model."  # how `PeftModel.save_pretrained` names a wrapped model's weights


def _linear_names(model: Any, part: torch.nn.Module) -> list[str]:
    """Full names (in `model`) of the `nn.Linear` layers inside `part`, a submodule of `model`."""
    inside = {id(m) for m in part.modules()}
    return [name for name, m in model.named_modules() if id(m) in inside and isinstance(m, torch.nn.Linear)]


def target_names(model: Any, spec: LoraSpec) -> list[str]:
    """Full names of the linear layers `spec` adapts in `model` (a Qwen-VL HF model).

    Raises `ConfigError` listing the language model's linear layer names when one of
    `spec.target_modules` names none of them (the linear-attention projections may name none in a model
    without linear attention: they are among the defaults for hybrid models).
    """
    from evr1.models.families import is_hybrid

    language = [n for n in _linear_names(model, model.model.language_model) if ".layers." in n]
    candidates = sorted({n.rsplit(".", 1)[-1] for n in language})
    optional = () if is_hybrid(model) else LINEAR_ATTENTION_PROJECTIONS
    unknown = [n for n in spec.target_modules if n not in candidates and n not in optional]
    if unknown:
        raise ConfigError(
            f"model.lora.target_modules: {unknown} name no linear layer of {type(model).__name__}'s language "
            f"model; its layers' linear layers are {candidates}"
        )
    names = [n for n in language if n.rsplit(".", 1)[-1] in spec.target_modules]
    if spec.vision != "frozen":
        visual = _linear_names(model, model.model.visual)
        names += [n for n in visual if spec.vision == "tower" or "merger" in n]
    return names


def add_adapters(model: Any, spec: LoraSpec, *, seed: int) -> Any:
    """Inject `spec`'s adapters into `model` in place and freeze every other parameter.

    The adapters' random `A` matrices come from `seed` (so data-parallel workers start alike);
    adapters are float32 whatever the base dtype (they are AdamW's master weights).
    """
    from peft import LoraConfig, inject_adapter_in_model
    from peft.functional import cast_adapter_dtype

    config = LoraConfig(
        r=spec.rank, lora_alpha=spec.alpha, lora_dropout=spec.dropout, target_modules=target_names(model, spec)
    )
    device = next(model.parameters()).device
    model.requires_grad_(False)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        inject_adapter_in_model(config, model, adapter_name=ADAPTER)
    cast_adapter_dtype(model, ADAPTER)
    return model


def scalings(model: Any) -> dict[str, float] | None:
    """`alpha / rank` of each adapted layer of `model`, by the layer's full name; None without adapters."""
    if not hasattr(model, "peft_config"):  # set by `inject_adapter_in_model`
        return None
    from peft.tuners.lora import LoraLayer

    return {name: m.scaling[ADAPTER] for name, m in model.named_modules() if isinstance(m, LoraLayer)}


@contextmanager
def adapters_off(model: Any) -> Iterator[Any]:
    """Within the block `model` (with adapters, see `add_adapters`) computes as its frozen base.

    Every LoRA layer's adapters are disabled with peft's `enable_adapters(False)`. On leaving the
    block, by an exception too, each layer is set back as it was (adapters on or off, and the
    `requires_grad` of its parameters, which peft's switch changes). Raises `Evr1Error` if `model`
    has no adapters.
    """
    from peft.tuners.lora import LoraLayer

    layers = [m for m in model.modules() if isinstance(m, LoraLayer)]
    if not layers:
        raise Evr1Error(f"{type(model).__name__} has no LoRA adapters to switch off")
    were_off = [m.disable_adapters for m in layers]
    grads = [(p, p.requires_grad) for m in layers for p in m.parameters()]
    try:
        for m in layers:
            m.enable_adapters(False)
        yield model
    finally:
        for m, off in zip(layers, were_off):
            m.enable_adapters(not off)
        for p, flag in grads:
            p.requires_grad_(flag)


def load_adapters(model: Any, state: Mapping[str, torch.Tensor]) -> None:
    """Load adapter weights (`adapter_state` of a model adapted alike) into `model`, which must match them exactly."""
    expected = set(adapter_state(model.state_dict()))
    if set(state) != expected:
        missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
        raise Evr1Error(
            f"the checkpoint does not hold this learner's LoRA adapters (is model.lora the same as when it was"
            f" saved?): {len(missing)} missing (e.g. {missing[:2]}), {len(extra)} unexpected (e.g. {extra[:2]})"
        )
    model.load_state_dict(state, strict=False)


def is_adapter_key(key: str) -> bool:
    return ".lora_A." in key or ".lora_B." in key


def adapter_state(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The adapter weights of a LoRA model's state dict (full names)."""
    return {k: v for k, v in state.items() if is_adapter_key(k)}


@torch.no_grad()
def merged_state_dict(
    state: Mapping[str, torch.Tensor], scale: Mapping[str, float], device: str | torch.device = "cpu"
) -> dict[str, torch.Tensor]:
    """The base model's state dict with the adapters merged in, from a LoRA model's `state`, on `device`.

    `scale`: `scalings(model)`. Each `name.base_layer.weight` of an adapted layer becomes
    `name.weight = W + scale * B @ A` (computed in float32 where W is, then cast to W's dtype and
    moved to `device`: on the default CPU, merging never holds a second copy of the model on a
    GPU); other base-layer tensors are renamed likewise; adapter tensors are dropped.
    """
    merged: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if is_adapter_key(key):
            continue
        module, _, leaf = key.rpartition(".")
        if not module.endswith(".base_layer"):
            merged[key] = value.to(device)
            continue
        owner = module.removesuffix(".base_layer")
        if leaf == "weight" and owner in scale:
            a = state[f"{owner}.lora_A.{ADAPTER}.weight"].to(value.device, torch.float32)
            b = state[f"{owner}.lora_B.{ADAPTER}.weight"].to(value.device, torch.float32)
            value = (value.float() + scale[owner] * (b @ a)).to(value.dtype)
        merged[f"{owner}.{leaf}"] = value.to(device)
    return merged


def save_adapter(directory: str | Path, model: Any, state: Mapping[str, torch.Tensor], base: str) -> Path:
    """Write `model`'s adapter (weights from `state`) in peft's format into `directory`.

    `PeftModel.from_pretrained(<the model at base>, directory)` then rebuilds the trained policy.
    """
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = get_peft_model_state_dict(model, state_dict=adapter_state(state), adapter_name=ADAPTER)
    tensors = {_PEFT_PREFIX + k: v.detach().cpu().contiguous() for k, v in weights.items()}
    save_file(tensors, directory / "adapter_model.safetensors")
    config = replace(model.peft_config[ADAPTER], base_model_name_or_path=base, inference_mode=True)
    config.save_pretrained(directory)
    return directory
