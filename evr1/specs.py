"""Frozen, typed leaf specs. Validation happens when an experiment is built.

Every setting lives in exactly one spec. A spec shared by several parts (the `VideoSpec` used by
the cache, the rollout and the eval adapter) is one object in the experiment graph, passed to all.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from evr1.problem_types import ProblemType


class Spec(BaseModel):
    """Base of all specs: immutable, unknown fields rejected, defaults validated."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


def _in_registry(registry: str):
    def check(name: str) -> str:
        from evr1.registry import REGISTRIES, UnknownNameError  # built-ins load lazily

        try:
            REGISTRIES[registry].canonical(name)
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None  # pydantic then names the field path
        return name

    return AfterValidator(check)


def RegistryName(registry: str):  # noqa: N802 - reads like a type in annotations
    """A `str` field that must name a component of `registry` (checked at validation)."""
    return Annotated[str, _in_registry(registry)]


PositiveInt = Annotated[int, Field(gt=0)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class ModelSpec(Spec):
    """The policy model: a `models` registry name (e.g. a tiny test model) or a local HF directory."""

    name: str = "tiny-qwen2.5-vl"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    attn_implementation: Literal["sdpa", "flash_attention_2", "eager"] = "sdpa"
    freeze_vision: bool = False
    gradient_checkpointing: bool = False


class VideoSpec(Spec):
    """How a video becomes frames: sampling rate or count, frame limits and pixel budgets."""

    fps: Annotated[float, Field(gt=0)] | None = 2.0
    nframes: PositiveInt | None = None
    min_frames: PositiveInt = 4
    max_frames: PositiveInt = 128
    min_pixels: PositiveInt = 128 * 28 * 28
    max_pixels: PositiveInt = 768 * 28 * 28
    total_pixels: PositiveInt | None = None
    decoder: Literal["pyav", "torchcodec", "decord"] = "pyav"

    @model_validator(mode="after")
    def _consistent(self) -> VideoSpec:
        if (self.fps is None) == (self.nframes is None):
            raise ValueError("set exactly one of fps and nframes")
        if self.min_frames > self.max_frames:
            raise ValueError(f"min_frames ({self.min_frames}) > max_frames ({self.max_frames})")
        if self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) > max_pixels ({self.max_pixels})")
        return self


class ImageSpec(Spec):
    """How an image is resized: its own pixel budget, independent of video."""

    min_pixels: PositiveInt = 4 * 28 * 28
    max_pixels: PositiveInt = 1280 * 28 * 28

    @model_validator(mode="after")
    def _consistent(self) -> ImageSpec:
        if self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) > max_pixels ({self.max_pixels})")
        return self


class CacheSpec(Spec):
    """The LMDB tensor cache: where it is and how misses are handled."""

    path: str | None = None
    mode: Literal["prefer", "only", "bypass"] = "prefer"
    map_size_gb: PositiveInt = 256


class DataSpec(Spec):
    """Training and validation data, and how their media are prepared."""

    train: tuple[str, ...] = ()
    val: tuple[str, ...] = ()
    data_root: str | None = None
    video: VideoSpec = Field(default_factory=VideoSpec)
    image: ImageSpec = Field(default_factory=ImageSpec)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    sampler: RegistryName("samplers") | None = None
    modality_ratio: dict[Literal["video", "image", "text"], Annotated[float, Field(ge=0)]] | None = None


class RolloutSpec(Spec):
    """Sampling: engine, responses per prompt and decoding settings."""

    engine: RegistryName("engines") | None = None  # None: vllm on a GPU where installed, else hf
    n: PositiveInt = 8
    temperature: Annotated[float, Field(ge=0)] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    top_k: int = -1
    max_prompt_tokens: PositiveInt = 4096
    max_response_tokens: PositiveInt = 512


class MixerSpec(Spec):
    """Offline trajectories placed in on-policy groups (none by default)."""

    name: RegistryName("mixers") | None = None
    k: Annotated[int, Field(ge=0)] = 0


class RewardSpec(Spec):
    """How responses are scored: per-type routes and the accuracy/format weights."""

    routes: dict[ProblemType, RegistryName("rewards")] = {}
    accuracy_weight: Probability = 0.9
    format_weight: Probability = 0.1


class KLSpec(Spec):
    """KL regularisation against a reference model (off by default)."""

    enabled: bool = False
    estimator: Literal["k1", "k2", "k3", "abs"] = "k3"
    coef: Annotated[float, Field(ge=0)] = 0.0
    as_reward_penalty: bool = False


class AlgoSpec(Spec):
    """The RL algorithm: advantage estimator, policy loss and its clipping, aggregation, KL."""

    advantage: RegistryName("advantages") = "grpo"
    policy_loss: RegistryName("policy_losses") = "ppo_clip"
    clip_low: Annotated[float, Field(ge=0)] = 0.2
    clip_high: Annotated[float, Field(ge=0)] = 0.28
    loss_agg: Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"] = "token_mean"
    kl: KLSpec = Field(default_factory=KLSpec)
    entropy_coef: float = 0.0


class OptimSpec(Spec):
    """AdamW and its learning-rate schedule."""

    lr: Annotated[float, Field(gt=0)] = 1e-6
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    grad_clip: Annotated[float, Field(gt=0)] | None = 1.0


class TrainerSpec(Spec):
    """The loop: steps, batch sizes, seed, checkpoint and validation cadence, output."""

    steps: PositiveInt = 100
    prompts_per_step: PositiveInt = 8
    micro_batch_tokens: PositiveInt = 16384
    seed: int = 0
    save_every: Annotated[int, Field(ge=0)] = 0
    val_every: Annotated[int, Field(ge=0)] = 0
    log_samples: Annotated[int, Field(ge=0)] = 2
    run_root: str = "runs"


class ResourcesSpec(Spec):
    """Ray and placement: embedded local Ray unless `ray_address` is given."""

    ray_address: str | None = None
    num_cpus: PositiveInt | None = None
    num_gpus: Annotated[int, Field(ge=0)] = 0
    learner_workers: PositiveInt = 1
    object_store_memory_mb: PositiveInt = 512


class EvalSpec(Spec):
    """Benchmarks evaluated periodically and by `evr1 eval`."""

    benchmarks: tuple[RegistryName("benchmarks"), ...] = ()
    data_root: str | None = None
    video: VideoSpec = Field(default_factory=VideoSpec)
    every_steps: Annotated[int, Field(ge=0)] = 0
