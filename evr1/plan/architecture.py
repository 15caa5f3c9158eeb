"""The shapes of a Qwen-VL model that its training memory depends on, read from its HF config.

`architecture(spec)` reads the config of the experiment's model (a registered tiny model, a local
HF directory, or a hub id whose config is one of `PUBLISHED` below, so that GPU recipes can be
planned on a machine without their weights) and counts its parameters exactly, by building the
model on torch's meta device (no memory, no weights).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evr1.errors import Evr1Error
from evr1.models.families import Family, family_of_model_type
from evr1.specs import ModelSpec

# Public config.json values of the GPU recipes' models (the fields memory depends on).
PUBLISHED: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-VL-7B-Instruct": {
        "model_type": "qwen2_5_vl",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "qwen2_5_vl_text", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
            "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
        },
        "vision_config": {
            "depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "out_hidden_size": 3584,
            "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
            "fullatt_block_indexes": [7, 15, 23, 31],
        },
    },
    "Qwen/Qwen3-VL-8B-Instruct": {
        "model_type": "qwen3_vl",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "qwen3_vl_text", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
            "tie_word_embeddings": False,
        },
        "vision_config": {
            "depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16, "out_hidden_size": 4096,
            "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 2304,
            "deepstack_visual_indexes": [8, 16, 24],
        },
    },
}


@dataclass(frozen=True)
class Architecture:
    """Sizes of the language model (`hidden` ... `vocab`), the vision tower (`v_*`) and parameter counts."""

    family: Family
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    v_depth: int
    v_hidden: int
    v_intermediate: int
    v_heads: int
    patch: int
    temporal_patch: int
    merge: int
    deepstack: int  # Qwen3-VL: vision levels added to the first decoder layers' states
    params: int  # all parameters
    layer_params: int  # one decoder layer (an FSDP2 unit)
    vision_params: int

    @property
    def v_gated(self) -> bool:
        """Whether the tower's MLP is gated (SwiGLU, Qwen2.5-VL) rather than fc-GELU-fc."""
        return self.family == "qwen2.5-vl"

    @property
    def factor(self) -> int:
        """Pixels a merged visual token's side covers (28 or 32)."""
        return self.patch * self.merge


def config_dict(spec: ModelSpec) -> dict[str, Any]:
    """The HF config of `spec`'s model as a dict: a published one for a known hub id, else its config.json."""
    if spec.name in PUBLISHED:
        return PUBLISHED[spec.name]
    from evr1.models.loading import model_path

    path = Path(model_path(spec))
    if not (path / "config.json").is_file():
        raise Evr1Error(
            f"no config.json for model {spec.name!r} here: point model.name at a local HF directory "
            f"(or plan one of {sorted(PUBLISHED)})"
        )
    return json.loads((path / "config.json").read_text())


def from_config(config: dict[str, Any]) -> Architecture:
    """The `Architecture` of an HF config dict (parameters counted on the meta device)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    fam = family_of_model_type(config["model_type"])
    hf = AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(hf)
    text, vision = hf.get_text_config(), hf.vision_config
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    v_hidden = getattr(vision, "embed_dim", None) or vision.hidden_size  # Qwen2-VL names the tower's width embed_dim
    v_intermediate = getattr(vision, "intermediate_size", None) or int(vision.mlp_ratio * v_hidden)
    return Architecture(
        family=fam, hidden=text.hidden_size, layers=text.num_hidden_layers, heads=text.num_attention_heads,
        kv_heads=text.num_key_value_heads, head_dim=head_dim, intermediate=text.intermediate_size,
        vocab=text.vocab_size, v_depth=vision.depth, v_hidden=v_hidden, v_intermediate=v_intermediate,
        v_heads=vision.num_heads, patch=vision.patch_size, temporal_patch=vision.temporal_patch_size,
        merge=vision.spatial_merge_size, deepstack=len(getattr(vision, "deepstack_visual_indexes", None) or ()),
        params=sum(p.numel() for p in model.parameters()),
        layer_params=sum(p.numel() for p in model.model.language_model.layers[0].parameters()),
        vision_params=sum(p.numel() for p in model.model.visual.parameters()),
    )  # fmt: skip


def architecture(spec: ModelSpec) -> Architecture:
    """The `Architecture` of the experiment's model."""
    return from_config(config_dict(spec))
