"""The policy model and its LoRA adapters."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from evr1.specs.base import PositiveInt, Spec

LANGUAGE_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# The Gated DeltaNet (linear attention) layers of hybrid models (Qwen3.5): query-key-value, output gate, output.
LINEAR_ATTENTION_PROJECTIONS = ("in_proj_qkv", "in_proj_z", "out_proj")


class LoraSpec(Spec):
    """LoRA adapters (peft) on the policy: only the adapters train, every base weight stays frozen.

    Each adapted linear layer computes `W x + (alpha / rank) * B A x`. `target_modules`: names of
    the language model's linear layers to adapt (default: attention and MLP projections, and on hybrid
    models such as Qwen3.5 the linear-attention ones, which name no layer of other models; checked
    against the model when it loads). `vision`: "frozen" adapts nothing in the vision tower,
    "merger" also its patch merger(s) (Qwen3-VL: the deepstack mergers too), "tower" every linear
    layer of the tower. `dropout` acts on the adapters' input while training only; 0 (the default)
    keeps the training forward the same function as the old-policy one (ratio 1 on-policy).
    Defaults: rank 64, alpha 128 (scale 2), as in `evr1.recipes.lora`.
    """

    rank: PositiveInt = 64
    alpha: Annotated[float, Field(gt=0)] = 128.0
    dropout: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    target_modules: tuple[str, ...] = LANGUAGE_PROJECTIONS + LINEAR_ATTENTION_PROJECTIONS
    vision: Literal["frozen", "merger", "tower"] = "frozen"

    @field_validator("target_modules")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        if not names:
            raise ValueError(f"name at least one linear layer of the language model, e.g. {LANGUAGE_PROJECTIONS}")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"repeated names {repeated}")
        return names


class ModelSpec(Spec):
    """The policy model: a `models` registry name (e.g. a tiny test model) or a local HF directory.

    `dtype="auto"`: bfloat16 on a GPU that supports it, float32 otherwise. `attn_implementation=
    "auto"`: flash_attention_2 on a GPU where flash-attn is installed, sdpa otherwise. Registered
    models are built (once) under `cache_dir`, by default `~/.cache/evr1/models`. `lora`: train
    LoRA adapters instead of every weight (see `LoraSpec`); the rollout engines and the exported
    model get the merged weights.
    """

    name: str = "tiny-qwen2.5-vl"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    attn_implementation: Literal["auto", "sdpa", "flash_attention_2", "eager"] = "auto"
    freeze_vision: bool = False
    gradient_checkpointing: bool = False
    # The vision tower runs at most this many temporal patches (frame pairs) per call, concatenating the outputs
    # (exact: its attention never crosses a temporal patch); 0: all of a micro-batch's media in one call.
    vision_frames_per_pass: Annotated[int, Field(ge=0)] = 0
    cache_dir: str | None = None
    lora: LoraSpec | None = None

    @model_validator(mode="after")
    def _vision_choice(self) -> ModelSpec:
        if self.freeze_vision and self.lora is not None and self.lora.vision != "frozen":
            raise ValueError(f"freeze_vision=True contradicts lora.vision={self.lora.vision!r}: set one of them")
        return self
