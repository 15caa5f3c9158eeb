"""The Qwen-VL model families evr1 supports, and how to tell which one a model belongs to."""

from __future__ import annotations

from typing import Any, Literal, get_args

from evr1.errors import Evr1Error, known_list

Family = Literal["qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5"]
FAMILIES: tuple[Family, ...] = get_args(Family)

# HF `model_type` -> family (MoE variants share the dense family's processor and prompt layout).
_MODEL_TYPES: dict[str, Family] = {
    "qwen2_vl": "qwen2-vl",
    "qwen2_5_vl": "qwen2.5-vl",
    "qwen3_vl": "qwen3-vl",
    "qwen3_vl_moe": "qwen3-vl",
    "qwen3_5": "qwen3.5",
    "qwen3_5_moe": "qwen3.5",
}

# Vision patch edge in pixels; frames and images are resized to multiples of patch * merge (2).
PATCH_SIZE: dict[Family, int] = {"qwen2-vl": 14, "qwen2.5-vl": 14, "qwen3-vl": 16, "qwen3.5": 16}
SPATIAL_MERGE = 2


def media_family(fam: Family) -> Family:
    """The family whose processors, media tensors and prompt layout `fam` uses: Qwen3.5's checkpoints ship
    `Qwen3VLProcessor` and `Qwen3VLVideoProcessor` (per-frame timestamps, 16-pixel patches), so "qwen3-vl"."""
    return "qwen3-vl" if fam == "qwen3.5" else fam


def is_hybrid(config: Any) -> bool:
    """Whether a model (or its config) has linear-attention layers (Qwen3.5's Gated DeltaNet) next to full ones."""
    text = getattr(config, "config", config).get_text_config()
    return "linear_attention" in (getattr(text, "layer_types", None) or ())


def alignment(fam: Family) -> int:
    """Pixels that frame/image sides are rounded to: 28 for Qwen2/2.5-VL, 32 for Qwen3-VL."""
    return PATCH_SIZE[fam] * SPATIAL_MERGE


def family_of_model_type(model_type: str) -> Family:
    """The family of an HF `model_type` (`qwen2_5_vl` -> `qwen2.5-vl`)."""
    try:
        return _MODEL_TYPES[model_type]
    except KeyError:
        raise Evr1Error(
            f"model_type {model_type!r} is not a supported Qwen-VL model; supported: {known_list(_MODEL_TYPES)}"
        ) from None


def family(obj: Any) -> Family:
    """The family of a `ModelSpec`, an HF config, model or processor, a family name or a `model_type`."""
    from evr1.specs import ModelSpec

    if isinstance(obj, str):
        return obj if obj in FAMILIES else family_of_model_type(obj)  # type: ignore[return-value]
    if isinstance(obj, ModelSpec):
        from evr1.models.loading import spec_family

        return spec_family(obj)
    if hasattr(obj, "image_processor") and hasattr(obj, "tokenizer"):
        return processor_family(obj)
    config = getattr(obj, "config", obj)  # a model carries its config
    model_type = getattr(config, "model_type", None)
    if model_type is None:
        raise Evr1Error(f"cannot tell the model family of a {type(obj).__name__}")
    return family_of_model_type(model_type)


def processor_family(processor: Any) -> Family:
    """The media family of a Qwen-VL processor (by its class; a Qwen3.5 processor is a Qwen3-VL one, see
    `media_family`)."""
    name = type(processor).__name__
    for prefix, fam in (("Qwen3VL", "qwen3-vl"), ("Qwen2_5_VL", "qwen2.5-vl"), ("Qwen2VL", "qwen2-vl")):
        if name.startswith(prefix):
            return fam  # type: ignore[return-value]
    raise Evr1Error(f"{name} is not a Qwen-VL processor")
