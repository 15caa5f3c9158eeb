"""Loading Qwen-VL models and processors from a `ModelSpec`.

`spec.name` is either a `models` registry name (a factory that builds an HF directory, such as
the tiny test models) or a local HF directory (or a hub id where a network exists). Either way
the model and processor are loaded with `from_pretrained`, so every part sees the same files.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError, Evr1Error, known_list, suggest
from evr1.models.families import Family, family_of_model_type
from evr1.specs import ModelSpec

if TYPE_CHECKING:
    import torch

DEFAULT_CACHE_DIR = Path("~/.cache/evr1/models")


def cache_dir(spec: ModelSpec) -> Path:
    """Where registered models are built: `spec.cache_dir` or `~/.cache/evr1/models`."""
    return Path(spec.cache_dir or DEFAULT_CACHE_DIR).expanduser()


def model_path(spec: ModelSpec) -> str:
    """The HF directory (or hub id) for `spec.name`, building a registered model on first use."""
    from evr1.registry import MODELS

    if spec.name in MODELS:
        return str(MODELS.get(spec.name).materialize(cache_dir(spec)))
    path = Path(spec.name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise Evr1Error(f"model directory {path} has no config.json")
        return str(path)
    if not _hub_id(spec.name):
        raise Evr1Error(_unknown(spec.name))
    return spec.name  # a hub id such as "Qwen/Qwen2.5-VL-3B-Instruct"


def _hub_id(name: str) -> bool:
    return not name.startswith((".", "/", "~")) and name.count("/") == 1


def _unknown(name: str) -> str:
    from evr1.registry import MODELS

    known = [*MODELS.names(), *cached_hub_models()]
    return (f"model {name!r} is neither a registered model ({known_list(MODELS.names())}) nor an HF directory."
            + suggest(name, known))


def cached_hub_models() -> list[str]:
    """The hub ids (`org/name`) with a copy in the local Hugging Face cache (names only: nothing is read)."""
    from huggingface_hub.constants import HF_HUB_CACHE

    root = Path(HF_HUB_CACHE)
    found = root.glob("models--*--*") if root.is_dir() else ()
    return sorted(p.name[len("models--"):].replace("--", "/", 1) for p in found)


def check_model_name(spec: ModelSpec) -> tuple[str, str] | None:
    """Resolve `model.name` without loading or building anything. None for a registered model, a local HF directory
    or a cached hub id; `("missing", message)` for a local path that does not exist here; `("note", message)` for a
    hub id not in the local Hugging Face cache (a run downloads it where a network exists). Any other name raises
    `ConfigError` with the closest registered or cached model."""
    from evr1.registry import MODELS

    path = Path(spec.name).expanduser()
    if spec.name in MODELS or (path.is_dir() and (path / "config.json").is_file()):
        return None
    if path.is_dir():
        raise ConfigError(f"model.name: the model directory {path} has no config.json")
    if spec.name.startswith((".", "/", "~")) or spec.name.count("/") > 1:
        return "missing", f"model.name: the model directory {spec.name} does not exist"
    if not _hub_id(spec.name):
        raise ConfigError(f"model.name: {_unknown(spec.name)}")
    cached = cached_hub_models()
    if spec.name in cached:
        return None
    return "note", (f"model.name: {spec.name!r} is not in the local Hugging Face cache: a run downloads it, where a"
                    f" network exists.{suggest(spec.name, [*MODELS.names(), *cached])}")


def spec_family(spec: ModelSpec) -> Family:
    """The family of the model `spec` names, without loading weights."""
    from evr1.registry import MODELS

    if spec.name in MODELS:
        entry = MODELS.get(spec.name)
        if hasattr(entry, "family"):
            return entry.family
    from transformers import AutoConfig

    return family_of_model_type(AutoConfig.from_pretrained(model_path(spec)).model_type)


def resolve_dtype(spec: ModelSpec, device: str | torch.device) -> torch.dtype:
    """`spec.dtype`, with "auto" meaning bfloat16 on a GPU that supports it and float32 elsewhere."""
    import torch

    if spec.dtype != "auto":
        return getattr(torch, spec.dtype)
    on_cuda = torch.device(device).type == "cuda"
    return torch.bfloat16 if on_cuda and torch.cuda.is_bf16_supported() else torch.float32


def resolve_attention(spec: ModelSpec, device: str | torch.device) -> str:
    """`spec.attn_implementation`, with "auto" meaning flash_attention_2 on a GPU where it is installed."""
    import torch

    if spec.attn_implementation != "auto":
        return spec.attn_implementation
    on_cuda = torch.device(device).type == "cuda"
    return "flash_attention_2" if on_cuda and importlib.util.find_spec("flash_attn") is not None else "sdpa"


def load_model(spec: ModelSpec, *, device: str | torch.device = "cpu", dtype: torch.dtype | None = None) -> Any:
    """The Qwen-VL model for `spec` on `device`, in `dtype` (default: `resolve_dtype`), in eval mode.

    Gradient checkpointing, the vision tower's frames per call and a frozen tower follow the spec; training mode is the
    caller's choice (`model.train()`). `spec.lora` is not applied here: this is the base model
    (rollout engines, the KL reference); the learner adds the adapters (`evr1.models.lora`).
    """
    from transformers import AutoConfig, AutoModelForImageTextToText

    path = model_path(spec)
    config = AutoConfig.from_pretrained(path)
    family_of_model_type(config.model_type)  # a clear error for an unsupported model
    model = AutoModelForImageTextToText.from_pretrained(
        path,
        dtype=dtype or resolve_dtype(spec, device),
        attn_implementation=resolve_attention(spec, device),
    )
    model.to(device)
    model.eval()
    if spec.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if spec.vision_frames_per_pass:
        from evr1.models.vision import micro_batch_frames

        micro_batch_frames(model.model.visual, spec.vision_frames_per_pass)
    if spec.freeze_vision:
        for param in model.model.visual.parameters():
            param.requires_grad_(False)
    return model


def load_processor(spec: ModelSpec) -> Any:
    """The processor (tokenizer, image and video processors, chat template) for `spec`."""
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(model_path(spec))
