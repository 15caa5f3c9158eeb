"""Frozen, typed leaf specs. Validation happens when an experiment is built.

Every setting lives in exactly one spec. A spec shared by several parts (the `VideoSpec` used by
the cache, the rollout and the eval adapter) is one object in the experiment graph, passed to all.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

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


def RegistryName(registry: str):
    """A `str` field that must name a component of `registry` (checked at validation)."""
    return Annotated[str, _in_registry(registry)]


PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


LANGUAGE_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoraSpec(Spec):
    """LoRA adapters (peft) on the policy: only the adapters train, every base weight stays frozen.

    Each adapted linear layer computes `W x + (alpha / rank) * B A x`. `target_modules`: names of
    the language model's linear layers to adapt (default: attention and MLP projections; checked
    against the model when it loads). `vision`: "frozen" adapts nothing in the vision tower,
    "merger" also its patch merger(s) (Qwen3-VL: the deepstack mergers too), "tower" every linear
    layer of the tower. `dropout` acts on the adapters' input while training only; 0 (the default)
    keeps the training forward the same function as the old-policy one (ratio 1 on-policy).
    Defaults: rank 64, alpha 128 (scale 2), as in `evr1.recipes.lora`.
    """

    rank: PositiveInt = 64
    alpha: Annotated[float, Field(gt=0)] = 128.0
    dropout: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    target_modules: tuple[str, ...] = LANGUAGE_PROJECTIONS
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
    cache_dir: str | None = None
    lora: LoraSpec | None = None

    @model_validator(mode="after")
    def _vision_choice(self) -> ModelSpec:
        if self.freeze_vision and self.lora is not None and self.lora.vision != "frozen":
            raise ValueError(f"freeze_vision=True contradicts lora.vision={self.lora.vision!r}: set one of them")
        return self


class VideoSpec(Spec):
    """How a video becomes frames: sampling rate or count, frame limits and pixel budgets.

    `fps` samples `duration * fps` frames clamped to `[min_frames, max_frames]`; `nframes` takes a
    fixed count (both rounded to pairs of frames). `min_pixels`/`max_pixels` bound each frame (also
    capped at 768 tokens, as qwen-vl-utils caps it); `total_pixels` (qwen-vl-utils' meaning) lowers
    the per-frame bound to `total_pixels * 2 / frames`. Unset pixel limits are qwen-vl-utils'
    defaults in the model family's own factor (28 px for Qwen2/2.5-VL, 32 px for Qwen3-VL): 128 to
    768 tokens a frame, 115,200 in all. `decoder`: "pyav" (default), "decord" or "torchcodec" (extras
    of those names; the same frames bit for bit, 10-bit video aside: see the README). `clock`: what a
    Qwen3-VL prompt's frame times count from: "source" (seconds of the source video, as
    qwen-vl-utils + the HF processor time a clip) or "clip" (seconds since the clip's first frame).
    """

    fps: Annotated[float, Field(gt=0)] | None = 2.0
    nframes: PositiveInt | None = None
    min_frames: PositiveInt = 4
    max_frames: PositiveInt = 768
    min_pixels: PositiveInt | None = None
    max_pixels: PositiveInt | None = None
    total_pixels: PositiveInt | None = None
    decoder: Literal["pyav", "torchcodec", "decord"] = "pyav"
    clock: Literal["source", "clip"] = "source"

    @model_validator(mode="after")
    def _consistent(self) -> VideoSpec:
        if (self.fps is None) == (self.nframes is None):
            raise ValueError("set exactly one of fps and nframes")
        if self.min_frames > self.max_frames:
            raise ValueError(f"min_frames ({self.min_frames}) > max_frames ({self.max_frames})")
        _check_pixel_range(self.min_pixels, self.max_pixels, 128)
        return self


def _check_pixel_range(min_pixels: int | None, max_pixels: int | None, default_min_tokens: int) -> None:
    """min <= max, an unset min being its family default (`default_min_tokens` of 28 or 32 px squares)."""
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise ValueError(f"min_pixels ({min_pixels}) > max_pixels ({max_pixels})")
    floor = default_min_tokens * 28 * 28
    if min_pixels is None and max_pixels is not None and max_pixels < floor:
        raise ValueError(
            f"max_pixels ({max_pixels}) < the default min_pixels ({floor} for Qwen2/2.5-VL,"
            f" {default_min_tokens * 32 * 32} for Qwen3-VL): set min_pixels too"
        )


class ImageSpec(Spec):
    """How an image is resized: its own pixel budget, independent of video.

    Unset limits are qwen-vl-utils' defaults in the family's factor: 4 to 16,384 tokens. `resize`:
    "pil" (default) resizes as qwen-vl-utils `fetch_image` does (Pillow's bicubic filter), so the
    pixels are the reference's; "torch" resizes as the HF image processor alone would (torchvision's
    antialiased bicubic on uint8): 1.2x faster on a 12 MP photo, 0.4% of its values 1 level off.
    """

    min_pixels: PositiveInt | None = None
    max_pixels: PositiveInt | None = None
    resize: Literal["pil", "torch"] = "pil"

    @model_validator(mode="after")
    def _consistent(self) -> ImageSpec:
        _check_pixel_range(self.min_pixels, self.max_pixels, 4)
        return self


class CacheSpec(Spec):
    """The LMDB tensor cache: where it is, how misses are handled and how pixels are stored.

    `storage="uint8"`: resized uint8 pixels in patch order, normalised on read, bitwise equal to
    the live path (1 byte per value). `"bfloat16"`: the normalised values rounded to bf16 (2 bytes,
    not bitwise equal), for processors whose arithmetic is not a per-channel normalisation.
    """

    path: str | None = None
    mode: Literal["prefer", "only", "bypass"] = "prefer"
    map_size_gb: PositiveInt = 256
    storage: Literal["uint8", "bfloat16"] = "uint8"


class PromptSpec(Spec):
    """How a record becomes the user turn: the question, lettered options, then the instruction.

    `chat_template`: a Jinja file rendering the chat in place of the processor's own template (None),
    e.g. a fine-tuned model's; it gets what HF chat templates get (`messages`, `add_generation_prompt`)
    and must write each media item's placeholder as the processor's template does. `evr1 data prompt`
    prints the prompt a record gets.
    """

    system: str | None = None  # None: the chat template's default system prompt
    instruction: str = "Give the final answer inside <answer></answer>."
    chat_template: str | None = None


class SynthSpec(Spec):
    """Synthetic data written to `out` before training when `out/train.jsonl` is missing."""

    tasks: tuple[str, ...] = ("quickstart",)  # `quickstart`, `all`, or task names of evr1.data.synth
    out: str = "data/quickstart"
    n_train: PositiveInt = 256
    n_val: PositiveInt = 64
    seed: int = 0
    blank_control: bool = True  # also `<out>-blank/`: the same records with blanked media


class DataSpec(Spec):
    """Training and validation data, and how their media are prepared.

    `train`/`val` name JSON/JSONL or Parquet files, Hugging Face datasets saved with `save_to_disk`
    (local only: nothing is downloaded), or folders of record files. `columns` maps record fields to
    the names the files use (e.g. `{"problem": "question", "answer": "solution"}`); in tables, columns
    that are no record field are ignored. `data_root` is where media paths are resolved; by default
    each record file's own folder. `max_failed_records`: the share of training records whose media
    may fail to load (each is dropped and logged in `data_failures.jsonl`) before the run stops; at
    least one is allowed unless it is 0.
    """

    train: tuple[str, ...] = ()  # record files or folders; one path alone is read as a one-element tuple
    val: tuple[str, ...] = ()  # likewise
    columns: dict[str, str] = Field(default_factory=dict)  # record field -> column name in the files
    data_root: str | None = None
    prompt: PromptSpec = Field(default_factory=PromptSpec)
    synth: SynthSpec | None = None
    video: VideoSpec = Field(default_factory=VideoSpec)
    image: ImageSpec = Field(default_factory=ImageSpec)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    sampler: RegistryName("samplers") | None = None
    modality_ratio: dict[Literal["video", "image", "text"], Annotated[float, Field(ge=0)]] | None = None
    max_failed_records: Annotated[float, Field(ge=0, le=1)] = 0.01

    @field_validator("train", "val", mode="before")
    @classmethod
    def _one_path(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("columns")
    @classmethod
    def _record_fields(cls, value: dict[str, str]) -> dict[str, str]:
        from evr1.data.records import Record
        from evr1.errors import suggest

        for field in value:
            if field not in Record.model_fields:
                raise ValueError(f"{field!r} is not a record field.{suggest(field, Record.model_fields)}"
                                 f" Record fields: {', '.join(Record.model_fields)}")
        return value


_VLLM_FIELDS = ("tensor_parallel_size", "gpu_memory_utilization", "colocate", "enforce_eager")


class RolloutSpec(Spec):
    """Sampling: engine, responses per prompt and decoding settings.

    vLLM settings (an error with `engine="hf"`, which has no use for them):
    `tensor_parallel_size` GPUs per engine; `gpu_memory_utilization` the share of each GPU's
    memory vLLM may take (weights + KV cache); `colocate` shares the learner's GPUs (vLLM sleeps,
    freeing its memory, while the learner trains) instead of GPUs of its own; `enforce_eager`
    skips CUDA-graph capture (slower decoding, faster start, less memory).
    """

    engine: RegistryName("engines") | None = None  # None: vllm on a GPU where installed, else hf
    n: PositiveInt = 8
    temperature: Annotated[float, Field(ge=0)] = 1.0  # 0: greedy, one response per prompt (n must be 1)
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    top_k: int = -1  # -1: off; else the k most likely tokens
    min_p: Annotated[float, Field(ge=0, le=1)] = 0.0  # 0: off; else drop tokens below min_p x the top probability
    repetition_penalty: Annotated[float, Field(gt=0)] = 1.0  # 1: off; >1 discourages tokens of the prompt and response
    stop: tuple[Annotated[str, Field(min_length=1)], ...] = ()  # a response ends with the first of these it writes
    max_prompt_tokens: PositiveInt = 4096
    max_response_tokens: PositiveInt = 512
    tensor_parallel_size: PositiveInt = 1
    gpu_memory_utilization: Annotated[float, Field(gt=0, lt=1)] = 0.6
    colocate: bool = True
    enforce_eager: bool = False

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError(f"must be -1 (off) or a positive number of tokens, got {value}")
        return value

    @model_validator(mode="after")
    def _greedy_is_one_response(self) -> RolloutSpec:
        if self.temperature == 0 and self.n != 1:
            raise ValueError(
                f"temperature=0 is greedy decoding, one response per prompt: set n=1 (got n={self.n}) or temperature > 0"
            )
        return self

    @model_validator(mode="after")
    def _vllm_temperature(self) -> RolloutSpec:
        if self.engine == "vllm" and (self.temperature > 2 or 0 < self.temperature < 0.01):
            raise ValueError(f"the vllm engine samples at temperature 0 or in [0.01, 2] (got {self.temperature})")
        return self

    @model_validator(mode="after")
    def _vllm_only(self) -> RolloutSpec:
        if self.engine == "hf":
            fields = type(self).model_fields
            stray = [name for name in _VLLM_FIELDS if getattr(self, name) != fields[name].default]
            if stray:
                raise ValueError(f"{', '.join(stray)} only apply to the vllm engine, not engine='hf'")
        return self


class MixerSpec(Spec):
    """Offline trajectories placed in on-policy groups (none by default).

    `k` offline responses per group of `rollout.n`. `file`: a JSONL of curated responses
    (`{"id": record_id, "response": text, "logprobs": [...]?}`, several per id) used instead of
    the records' `offline_response`; log-probs at `rollout.temperature`, without top-k/top-p.
    `threshold` (mixer `offline_k_threshold`): mix only groups whose on-policy accuracy (over the
    responses their reward applies to) is below it. `decay_steps` (mixer `offline_k_decay`): k
    decays linearly to 0 over that many steps. Without `name` none of these may be set.
    """

    name: RegistryName("mixers") | None = None
    k: Annotated[int, Field(ge=0)] = 0
    file: str | None = None
    threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    decay_steps: PositiveInt | None = None

    @model_validator(mode="after")
    def _settings_need_a_mixer(self) -> MixerSpec:
        if self.name is None:
            fields = type(self).model_fields
            stray = [
                f"{f}={getattr(self, f)!r}" for f in ("k", "file", "threshold", "decay_steps") if getattr(self, f) != fields[f].default
            ]
            if stray:
                from evr1.registry import MIXERS

                raise ValueError(
                    f"{', '.join(stray)} given without mixer.name, so nothing would be mixed: set mixer.name (one of"
                    f" {', '.join(MIXERS.names())}), or keep k=0 and file, threshold, decay_steps None to train on-policy"
                )
        return self


class JudgeSpec(Spec):
    """An OpenAI-compatible chat endpoint (e.g. a vLLM server) used by the `*_judge` rewards."""

    base_url: str | None = None  # e.g. "http://127.0.0.1:8000/v1"
    model: str | None = None
    api_key_env: str | None = None  # the NAME of an environment variable holding the API key
    timeout_s: Annotated[float, Field(gt=0)] = 30.0
    retries: Annotated[int, Field(ge=0)] = 2
    concurrency: PositiveInt = 8
    max_tokens: PositiveInt = 16


class CodeSandboxSpec(Spec):
    """Running Python answers of `code` problems: in a bubblewrap sandbox, on a SandboxFusion-style service
    (`sandbox="remote"` at `url`, like the judge), or as plain processes only when `sandbox="unsandboxed"`.
    Limits hold per sample (`timeout_s`: wall time of all its tests) and per sandbox (the rest)."""

    execute: bool = True  # False: Python code problems are "not applicable" (score None)
    sandbox: Literal["bubblewrap", "remote", "unsandboxed"] = "bubblewrap"
    url: str | None = None  # remote: the service's root, e.g. "http://127.0.0.1:8080" (POST {url}/run_code)
    retries: Annotated[int, Field(ge=0)] = 2  # remote: retries of a failed request, with back-off
    timeout_s: Annotated[float, Field(gt=0)] = 5.0  # wall time per sample; also the CPU time per process
    memory_mb: PositiveInt = 512  # per sandbox (a cgroup) where the machine allows, else per process
    processes: PositiveInt = 16  # per sandbox, its own 2-3 included
    output_mb: PositiveInt = 1  # the stdout of a program (one stdin/stdout case)
    file_mb: PositiveInt = 16  # all files the answer writes (its tmpfs), its stderr and prints included
    workers: PositiveInt = 2
    # host root where no cgroup can be made: each running sandbox has its own uid and gid from here (so that
    # RLIMIT_NPROC counts per sandbox); uid_base to uid_base + 4095 must belong to no account or process
    uid_base: PositiveInt = 2_000_000

    @model_validator(mode="after")
    def _remote_needs_url(self) -> CodeSandboxSpec:
        if self.sandbox == "remote" and not self.url:
            raise ValueError("code.sandbox='remote' needs code.url, e.g. 'http://127.0.0.1:8080'")
        return self


class RewardSpec(Spec):
    """How responses are scored: per-type routes, answer extraction, format, weights and limits.

    `extra` adds rewards scored for every sample beside its route, by weight (as TRL's `reward_funcs`
    with `reward_weights`): the score is the weighted mean of the accuracy, the format and the extra
    rewards that apply to the sample (one returning None is left out of that sample's mean). Each
    one's value is a component named after it, and gets its own metrics (`reward/extra/<name>/*`).
    """

    routes: dict[ProblemType, RegistryName("rewards")] = {}  # overrides of the default route (type -> same name)
    extra: dict[RegistryName("rewards"), Annotated[float, Field(gt=0)]] = {}  # more rewards for every sample: weight
    accuracy_weight: Probability = 0.9
    format_weight: Probability = 0.1
    format: Literal["full", "partial", "none"] = "full"
    strictness: Literal["lenient", "strict"] = "lenient"  # strict: only an <answer> tag counts
    numeric_rel_tol: Annotated[float, Field(ge=0)] = 0.0  # opt-in numeric tolerance (0: exact)
    numeric_abs_tol: Annotated[float, Field(ge=0)] = 0.0
    timeout_s: Annotated[float, Field(gt=0)] = 10.0  # per sample; a scorer past it is reported
    math_timeout_s: Annotated[float, Field(gt=0)] = 5.0  # process-level, per sample
    math_workers: PositiveInt = 2
    fail_on_error: bool = False  # True: a scorer error or timeout fails the step
    # What the numbers of answered boxes count. "auto": the answering model family's convention when the
    # input names it (Qwen2.5-VL: pixels of its resized input; Qwen2/3-VL: 0-1000; an answer whose values
    # are all <= 1 is read as fractions), else guessed from magnitudes; "model": the family's convention,
    # an error when unknown; "pixels" (of the input as shown), "relative_1000", "normalized" (0-1),
    # "source_pixels" (of the original image): for a dataset whose prompt asks for those units.
    box_units: Literal["auto", "model", "pixels", "relative_1000", "normalized", "source_pixels"] = "auto"
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    code: CodeSandboxSpec = Field(default_factory=CodeSandboxSpec)

    @field_validator("routes", mode="before")
    @classmethod
    def _route_aliases(cls, routes: object) -> object:
        if isinstance(routes, dict):  # "mcq" -> multiple_choice
            return {ProblemType.parse(k): v for k, v in routes.items()}
        return routes

    @model_validator(mode="after")
    def _weights(self) -> RewardSpec:
        if self.accuracy_weight + self.format_weight <= 0:
            raise ValueError("accuracy_weight + format_weight must be positive")
        taken = sorted({"accuracy", "format"} & set(self.extra))
        if taken:
            raise ValueError(f"extra reward names {taken} are the router's own components: weigh them with "
                             "accuracy_weight and format_weight")
        return self


class KLSpec(Spec):
    """KL regularisation against a reference model (off by default).

    A loss term (`coef * KL`, aggregated like the policy loss) or, with `as_reward_penalty`, a
    per-token penalty subtracted from the rewards before the advantage estimator; never both.
    Per-token estimates are clamped to [-clamp, clamp]. With `target` the coefficient adapts
    (Ziegler et al. 2019): it starts at `coef` and moves by at most 20% per `horizon` samples.
    """

    enabled: bool = False
    estimator: Literal["k1", "k2", "k3", "abs"] = "k3"
    coef: Annotated[float, Field(ge=0)] = 0.0
    as_reward_penalty: bool = False
    clamp: Annotated[float, Field(gt=0)] = 10.0
    target: Annotated[float, Field(gt=0)] | None = None
    horizon: PositiveInt = 10_000

    @model_validator(mode="after")
    def _not_inert(self) -> KLSpec:
        if self.enabled and self.coef == 0:
            raise ValueError("KL is enabled with coef 0, which does nothing: set coef > 0 (the start value if target is set)")
        if not self.enabled:
            stray = [f for f, off in (("coef", 0.0), ("as_reward_penalty", False), ("target", None)) if getattr(self, f) != off]
            if stray:
                raise ValueError(f"{', '.join(stray)} set but KL is not enabled: set enabled=True or leave them unset")
        return self


class OffPolicySpec(Spec):
    """How off-policy rows are trained: offline responses in mixed groups, and stale online rows.

    Offline rows with known behaviour log-probs use them as the importance-ratio denominator and
    are clipped like online rows. Rows without use `unknown_behaviour`: "shaping" (LUFFY):
    per-token objective A*f(p), f(p) = p/(p + shaping_gamma), no clipping; "unit_weight":
    importance weight 1, objective A*log p, no clipping. `loss_weight` scales the policy-gradient
    term of every offline row. `in_baseline`: offline rewards count in the group baseline
    (otherwise the baseline, the mean, is over online rows only and offline rows are scored against
    it; the std scale stays over every row of the group, so advantages stay bounded).

    Stale online rows (sampled by weights `staleness > 0` versions old: pipelined rollouts) are
    trained with decoupled PPO (`evr1.algos.offpolicy`, docs/off_policy.md): the loss clips
    pi/pi_prox, pi_prox the learner's recomputed old log-probs, and with `behaviour_weight`
    multiplies each token's term by the detached w = min(pi_prox/mu, `behaviour_weight_cap`), mu
    the rollout's log-prob (w = 1 where mu is unknown). `behaviour_weight=False` trains them as if sampled by pi_prox. The cap
    bounds a token's weight at cap times its on-policy one (default 2), so a token the old policy
    sampled at a probability far below today's cannot dominate the step (bounded variance, at a
    small bias where it bites); one step of staleness keeps most weights near 1, and
    `stale/weight_truncated_frac` reports how often the cap bites. Truncating keeps such a token
    in the gradient at the cap (AReaL drops tokens above it instead); a cap below 1 would
    down-weight tokens on which both policies agree, so it is at least 1.
    """

    unknown_behaviour: Literal["shaping", "unit_weight"] = "shaping"
    shaping_gamma: Annotated[float, Field(gt=0)] = 0.1
    loss_weight: Annotated[float, Field(ge=0)] = 1.0
    in_baseline: bool = True
    behaviour_weight: bool = True
    behaviour_weight_cap: Annotated[float, Field(ge=1)] = 2.0

    @model_validator(mode="after")
    def _not_inert(self) -> OffPolicySpec:
        if self.unknown_behaviour != "shaping" and self.shaping_gamma != 0.1:
            raise ValueError(f"shaping_gamma is only used with unknown_behaviour='shaping' (got {self.unknown_behaviour!r})")
        if not self.behaviour_weight and self.behaviour_weight_cap != 2.0:
            raise ValueError("behaviour_weight_cap is only used with behaviour_weight=True")
        return self


class DynamicSamplingSpec(Spec):
    """DAPO dynamic sampling: keep groups whose mean `metric` lies strictly inside (low, high)."""

    metric: str = "accuracy"
    low: float = 0.0
    high: float = 1.0

    @model_validator(mode="after")
    def _range(self) -> DynamicSamplingSpec:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be smaller than high ({self.high}): no group could be kept")
        return self


class OverlongSpec(Spec):
    """DAPO overlong shaping: a penalty growing linearly to `penalty` over the last `buffer` tokens."""

    buffer: PositiveInt
    penalty: Annotated[float, Field(gt=0)] = 1.0


_GROUP_SCALED = ("grpo", "gdpo", "passk")
_GROUP_BASELINES = ("grpo", "rloo", "gdpo", "passk", "reinforce_pp_baseline")


class AlgoSpec(Spec):
    """The RL algorithm: advantage estimator, policy loss and its clipping, aggregation, KL.

    Built-in estimators (`evr1/algos/advantages.py`): grpo, rloo, reinforce_pp, reinforce_pp_baseline
    (REINFORCE++ with a group-mean baseline, then whitened over the batch's tokens), remax, gdpo, passk.
    `clip_low`/`clip_high` bound the ratio the policy loss uses: the token ratio for `ppo_clip`
    ([1-clip_low, 1+clip_high]; asymmetric = DAPO clip-higher), the length-normalised sequence
    ratio for `gspo`/`gspo_token` (the paper's 3e-4/4e-4; wider ranges are warned about, not
    refused: that ratio leaves 1 by far more than 1e-3 once the policy moves), the stop-gradient
    importance weight for `cispo` (clip_low=1: no lower bound). `reinforce` does not clip.
    `dual_clip` c (default 3, as verl and EasyR1) caps the loss of a negative-advantage token at
    c*|A| in the clipped losses (`ppo_clip`, `gspo`, `gspo_token`), so a token whose ratio exploded
    (log-ratio 15: gradient 3.3e6*|A| without the cap) gets no gradient; None turns it off. `cispo`
    (its weight is capped at 1+clip_high) and `reinforce` (unclipped by definition) do not read it.
    Other options of one built-in estimator or loss are errors with another (they would do nothing).
    """

    advantage: RegistryName("advantages") = "grpo"
    scale_std: bool = True  # grpo/gdpo/passk divide by the group std; False: Dr. GRPO
    gamma: Annotated[float, Field(gt=0, le=1)] = 1.0  # reinforce_pp discount
    passk_k: PositiveInt | None = None  # passk: the k of pass@k (required there)
    key_weights: dict[str, float] = {}  # gdpo: weight of each normalised reward key (default 1)
    policy_loss: RegistryName("policy_losses") = "ppo_clip"
    clip_low: Annotated[float, Field(ge=0)] = 0.2
    clip_high: Annotated[float, Field(ge=0)] = 0.28
    dual_clip: float | None = 3.0  # clipped losses: cap the loss of negative-advantage tokens at dual_clip*|A|
    log_ratio_clamp: Annotated[float, Field(gt=0)] = 20.0
    loss_agg: Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"] = "token_mean"
    loss_agg_constant: Annotated[float, Field(gt=0)] | None = None  # "constant": tokens per sequence (Dr. GRPO)
    offline: OffPolicySpec = Field(default_factory=OffPolicySpec)
    kl: KLSpec = Field(default_factory=KLSpec)
    entropy_coef: float = 0.0
    dynamic_sampling: DynamicSamplingSpec | None = None
    overlong: OverlongSpec | None = None

    @model_validator(mode="after")
    def _coherent(self) -> AlgoSpec:
        if (self.loss_agg == "constant") != (self.loss_agg_constant is not None):
            raise ValueError("loss_agg='constant' needs loss_agg_constant (and loss_agg_constant needs loss_agg='constant')")
        if self.dual_clip is not None and self.dual_clip <= 1:
            raise ValueError(f"dual_clip must be > 1 (it caps negative-advantage losses at ratio dual_clip), got {self.dual_clip}")
        self._check_advantage_options()
        self._check_loss_options()
        return self

    def _check_advantage_options(self) -> None:
        adv = self.advantage
        if "/" in adv:  # a plugin: we cannot know which options it reads
            return
        if not self.scale_std and adv not in _GROUP_SCALED:
            raise ValueError(f"scale_std=False only applies to {', '.join(_GROUP_SCALED)}, not {adv!r}")
        if self.gamma != 1.0 and adv != "reinforce_pp":
            raise ValueError(f"gamma only applies to reinforce_pp, not {adv!r}")
        if (self.passk_k is not None) != (adv == "passk"):
            raise ValueError("advantage='passk' needs passk_k, and passk_k only applies to passk")
        if self.key_weights and adv != "gdpo":
            raise ValueError(f"key_weights only applies to gdpo, not {adv!r}")
        if adv == "gdpo" and (self.overlong is not None or self.kl.as_reward_penalty):
            shaping = "overlong shaping" if self.overlong is not None else "the KL reward penalty (kl.as_reward_penalty)"
            raise ValueError(
                f"gdpo normalises each reward key separately and never sees the combined score, so {shaping} "
                "would do nothing: use it with another estimator, or a KL loss term (kl.as_reward_penalty=False)"
            )
        if not self.offline.in_baseline and adv not in _GROUP_BASELINES:
            names = ", ".join(_GROUP_BASELINES)
            raise ValueError(f"offline.in_baseline=False only applies to group baselines ({names}), not {adv!r}")

    def _check_loss_options(self) -> None:
        loss = self.policy_loss
        if "/" in loss:
            return
        if loss in ("ppo_clip", "gspo", "gspo_token") and self.clip_low >= 1:
            raise ValueError(f"clip_low must be < 1 for {loss} (the ratio bound 1-clip_low would be <= 0)")
        if loss == "cispo" and self.clip_low > 1:
            raise ValueError("clip_low must be <= 1 for cispo (1 = no lower bound on the importance weight)")
        if loss in ("gspo", "gspo_token") and max(self.clip_low, self.clip_high) > 0.01:
            warnings.warn(
                f"{loss} clips the length-normalised sequence ratio; the GSPO paper uses clip_low/clip_high 3e-4/4e-4, "
                f"and {self.clip_low}/{self.clip_high} clips only rows whose ratio moved that far",
                UserWarning,
                stacklevel=2,
            )


class OptimSpec(Spec):
    """AdamW and its learning-rate schedule.

    Optimizer step k (from 0) uses `lr * (k + 1) / warmup_steps` during warm-up, then the schedule
    decays from `lr` towards `lr * min_lr_ratio` over the remaining steps of the run (`cosine`,
    `linear`) or keeps `lr` (`constant`). `grad_clip` bounds the global gradient norm (None: off).
    """

    lr: Annotated[float, Field(gt=0)] = 1e-6
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: Annotated[float, Field(gt=0)] = 1e-8
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    min_lr_ratio: Probability = 0.0
    grad_clip: Annotated[float, Field(gt=0)] | None = 1.0


class TrainerSpec(Spec):
    """The loop: steps, batch sizes, seed, checkpoint and validation cadence, output."""

    steps: PositiveInt = 100
    prompts_per_step: PositiveInt = 8
    micro_batch_tokens: PositiveInt = 16384  # tokens computed per forward pass (a shared prompt counts once)
    # Learner passes compute each group's prompt (with its media) once and its responses on its KV cache;
    # False forwards every prompt + response row whole (same numbers, n times the prompt's compute).
    grouped_forward: bool = True
    mini_batches: PositiveInt = 1  # optimizer steps per epoch over a step's batch (groups kept whole)
    epochs: PositiveInt = 1  # passes over a step's batch, against the same old-policy log-probs
    # Pipelined rollouts: the engine generates up to this many steps ahead, with weights as many updates old,
    # while the learners update (stale rows get the decoupled-PPO correction, `OffPolicySpec`); 0: in turn.
    max_staleness: Annotated[int, Field(ge=0)] = 0
    seed: int = 0
    save_every: Annotated[int, Field(ge=0)] = 0
    val_every: Annotated[int, Field(ge=0)] = 0
    log_samples: Annotated[int, Field(ge=0)] = 2
    run_root: str = "runs"
    tensorboard: bool = True
    wandb_project: str | None = None  # log to Weights & Biases too (needs `pip install wandb`)
    # Checkpoint retention: after each save keep the newest `keep_checkpoints` (0: keep all) and, with `keep_best`
    # (a logged metric such as "val/data/val/accuracy"), also the one whose step has its best value so far
    # (highest, or lowest with best_mode="min"; a step that did not log it counts its latest earlier value).
    keep_checkpoints: Annotated[int, Field(ge=0)] = 0
    keep_best: str | None = None
    best_mode: Literal["max", "min"] = "max"

    @model_validator(mode="after")
    def _retention(self) -> TrainerSpec:
        if self.keep_best is not None and not self.keep_checkpoints:
            raise ValueError("trainer.keep_best goes with trainer.keep_checkpoints > 0 (with 0 every checkpoint is kept)")
        if self.keep_checkpoints and not self.save_every:
            raise ValueError("trainer.keep_checkpoints needs trainer.save_every > 0: this run saves no checkpoints")
        return self


class ResourcesSpec(Spec):
    """Ray and placement: embedded local Ray unless `ray_address` is given.

    `learner_sharding`: how the `learner_workers` data-parallel workers hold the model.
    "replicated" keeps the whole model and its AdamW state on every worker (about 16 bytes per
    parameter: 112 GB for 7B) and sums gradients in one all-reduce; "fsdp" shards parameters,
    gradients and optimizer state over the workers with FSDP2 (about 16/W bytes per parameter
    each, plus the gathered weights of the embeddings, vision tower and head, and of one decoder
    layer at a time), at the cost of gathering weights for every forward and backward. Needs at
    least 2 learner workers; runs on GPUs (NCCL) or CPUs (gloo).
    """

    ray_address: str | None = None
    num_cpus: PositiveInt | None = None
    num_gpus: Annotated[int, Field(ge=0)] = 0
    learner_workers: PositiveInt = 1
    learner_sharding: Literal["replicated", "fsdp"] = "replicated"
    reward_workers: PositiveInt = 1
    torch_threads: PositiveInt = 1  # per actor: several actors share the machine's cores
    object_store_memory_mb: PositiveInt = 512
    placement: Literal["pack", "spread"] = "pack"  # how the placement group lays the actors' bundles on nodes
    placement_timeout_s: PositiveFloat = 120.0  # refuse when the cluster cannot place the run's actors by then
    rendezvous_timeout_s: PositiveFloat = 60.0  # refuse when a learner cannot join the others by then

    @model_validator(mode="after")
    def _gpus_for_learners(self) -> ResourcesSpec:
        if 0 < self.num_gpus < self.learner_workers:
            raise ValueError(
                f"learner_workers ({self.learner_workers}) > num_gpus ({self.num_gpus}): each learner worker needs a GPU"
            )
        if self.learner_sharding == "fsdp" and self.learner_workers < 2:
            raise ValueError(
                f"learner_sharding='fsdp' shards the model over learner workers but learner_workers is "
                f"{self.learner_workers}: set learner_workers >= 2 or learner_sharding='replicated'"
            )
        return self


class EvalSpec(Spec):
    """Benchmarks evaluated periodically and by `evr1 eval`.

    Answers are greedy, up to `max_response_tokens`; `prompt_mode` "direct" asks for the bare
    answer, "reason" for `<think>` then `<answer>`. Media are read from `cache` when it has a path
    (else decoded live) by `media_workers` threads, `prefetch` samples ahead of generation.
    Open-ended benchmarks call the LLM `judge`. `limit` keeps the first N items per benchmark.
    Both protocols are scored on every evaluation (`evr1.eval.protocols`); `protocol` is the headline:
    "official" (the benchmark authors' scorer) or "strict" (evr1's rules).
    """

    benchmarks: tuple[RegistryName("benchmarks"), ...] = ()
    data_root: str | None = None
    video: VideoSpec = Field(default_factory=VideoSpec)
    image: ImageSpec = Field(default_factory=ImageSpec)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    every_steps: Annotated[int, Field(ge=0)] = 0
    prompt_mode: Literal["direct", "reason"] = "direct"
    max_response_tokens: PositiveInt = 128
    batch_size: PositiveInt = 4
    media_workers: PositiveInt = 2
    prefetch: PositiveInt = 8
    limit: PositiveInt | None = None
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    protocol: Literal["official", "strict"] = "official"
