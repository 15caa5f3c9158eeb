"""Everything around the vLLM engine that is not a vLLM call: pure, and tested without vLLM.

- Requests: our `Prompt` (expanded text + processor-ready tensors from the cache) becomes a vLLM
  prompt dict. vLLM expands media placeholders itself (a prompt's placeholders are always
  re-expanded, by the rules of the HF processor: with transformers >= 5.10 the bare image or
  video pad becomes the item's tokens, Qwen3-VL's timed per-patch groups included), so each
  item's expansion is collapsed back to one bare pad, and the media go in as the exact resized uint8 frames recovered from the tensors,
  with metadata that reproduces the prompt's timing (Qwen2.5-VL seconds per temporal patch,
  Qwen3-VL timestamps) and `do_sample_frames=False, do_resize=False`: vLLM neither decodes,
  resamples nor resizes, and its HF processor turns the frames back into the same tensors.
- Sampling: our `SamplingParams` as vLLM `SamplingParams` keyword arguments.
- Outputs: vLLM's `RequestOutput`s as our `RolloutResult`s, prompt-major.
- Weights: learner state-dict names as checkpoint names, in bounded batches.
- Placement: the Ray GPU requests of the rollout and learner workers, colocated or separate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError, Evr1Error
from evr1.models.families import media_family

if TYPE_CHECKING:
    import numpy as np
    import torch

    from evr1.engines.base import RolloutResult, SamplingParams, Weights
    from evr1.models.prompts import Prompt
    from evr1.specs import ModelSpec, ResourcesSpec, RolloutSpec

INSTALL_HINT = (
    "install it with `pip install -e '.[vllm]'` on a CUDA machine (vLLM is GPU-only); "
    "elsewhere set rollout.engine='hf'"
)
WRAPPER_PREFIXES = ("module.", "_orig_mod.")
# vLLM's sampler (vllm/v1/sample/sampler.py) offers raw_logprobs (log-softmax of the model's
# logits, before logit bias, penalties and temperature), processed_logprobs (after them and after
# top-k/top-p, renormalised over the kept tokens; greedy requests: at temperature 1), and the
# matching *_logits. None is tempered but unfiltered. processed_logprobs is our RolloutResult's
# `log_softmax(logits / T)` exactly when top-k/top-p are off (the recipes' setting; the only logit
# bias is BAN_BIAS on placeholder tokens, whose mass is ~0); with them on it is of the truncated
# distribution, higher by -log(kept mass). The learner's ratios never use these values (it
# recomputes old-policy log-probs itself); the KL reward penalty does. vLLM samples with its own
# (PyTorch) sampler whenever processed log-probs are asked for, FlashInfer's top-k/top-p too.
LOGPROBS_MODE = "processed_logprobs"
BAN_BIAS = -100.0  # placeholder tokens are never sampled (vLLM's OpenAI server clamps biases to +-100)
_DTYPES = {"auto": "bfloat16", "float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def missing_vllm_message(error: BaseException, *, cuda: bool) -> str:
    """The actionable message for a failed `import vllm`."""
    where = "" if cuda else " (and this machine has no CUDA GPU)"
    return f"the vllm rollout engine needs vLLM, which could not be imported{where}: {error}. To use it, {INSTALL_HINT}."


# -- requests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MediaTokens:
    """The placeholder tokens of a Qwen-VL processor, as text."""

    image: str = "<|image_pad|>"
    video: str = "<|video_pad|>"
    start: str = "<|vision_start|>"
    end: str = "<|vision_end|>"

    @classmethod
    def of(cls, processor: Any) -> MediaTokens:
        default = cls()  # Qwen2-VL processors do not name their vision start/end tokens
        return cls(processor.image_token, processor.video_token,
                   getattr(processor, "vision_start_token", default.start), getattr(processor, "vision_end_token", default.end))


@dataclass(frozen=True)
class Collapsed:
    """A prompt's text with one placeholder per media item, and each video's timestamps (Qwen3-VL)."""

    text: str
    timestamps: list[list[float]]


def collapse_placeholders(text: str, family: str, tokens: MediaTokens = MediaTokens()) -> Collapsed:
    """Undo the placeholder expansion of `build_prompt`: what vLLM's HF processor expands again.

    A run of image or video pads becomes one pad (Qwen2/2.5-VL keep the template's
    `<|vision_start|>`/`<|vision_end|>` around it). Qwen3-VL: a video's
    `<t seconds><|vision_start|>pads<|vision_end|>` groups become one bare `<|video_pad|>`, and
    their times are returned (Qwen3.5 likewise).
    """
    family = media_family(family)  # type: ignore[arg-type]
    e = {k: re.escape(v) for k, v in vars(tokens).items()}
    text = re.sub(f"(?:{e['image']})+", lambda _: tokens.image, text)
    timestamps: list[list[float]] = []
    if family == "qwen3-vl":
        group = f"<([0-9]+(?:\\.[0-9]+)?) seconds>{e['start']}(?:{e['video']})+{e['end']}"

        def one_video(match: re.Match) -> str:
            timestamps.append([float(t) for t in re.findall(group, match.group(0))])
            return tokens.video

        text = re.sub(f"(?:{group})+", one_video, text)
    else:
        text = re.sub(f"(?:{e['video']})+", lambda _: tokens.video, text)
    return Collapsed(text, timestamps)


def _split_rows(values: torch.Tensor, grids: torch.Tensor) -> list[tuple[torch.Tensor, tuple[int, int, int]]]:
    """Concatenated processor rows split per item (`t*h*w` rows each)."""
    sizes = [int(t) * int(h) * int(w) for t, h, w in grids.tolist()]
    if sum(sizes) != values.shape[0]:
        raise Evr1Error(f"pixel rows ({values.shape[0]}) do not match the grids {grids.tolist()} ({sum(sizes)} rows)")
    return [(part, tuple(int(v) for v in grid)) for part, grid in zip(values.split(sizes), grids.tolist())]


def frames_from_pixels(
    values: torch.Tensor, grid_thw: tuple[int, int, int], *, patch_size: int, merge_size: int,
    temporal_patch_size: int, mean: Sequence[float], std: Sequence[float],
) -> np.ndarray:
    """The uint8 frames `(T, H, W, 3)` that a Qwen-VL processor turned into `values` (one item's rows).

    The inverse of the processor: undo `(x - 255*mean) / (255*std)` (`mean`/`std` as fractions of
    255, the processor's `image_mean`/`image_std`), round, and undo the patch permutation. Exact for
    pixels that were uint8 (the cache's default storage); `T = t * temporal_patch_size`.
    """
    import torch

    gt, gh, gw = grid_thw
    ps, m, tp = patch_size, merge_size, temporal_patch_size
    channels = values.shape[-1] // (tp * ps * ps)
    if values.shape != (gt * gh * gw, channels * tp * ps * ps):
        raise Evr1Error(f"pixel values of shape {tuple(values.shape)} do not fit grid {grid_thw} with patch {ps}x{ps}x{tp}")
    scale = torch.tensor(std, dtype=torch.float32).mul(255.0)
    shift = torch.tensor(mean, dtype=torch.float32).mul(255.0)
    x = values.float().reshape(gt, gh // m, gw // m, m, m, channels, tp, ps, ps)
    x = x * scale.view(1, 1, 1, 1, 1, -1, 1, 1, 1) + shift.view(1, 1, 1, 1, 1, -1, 1, 1, 1)
    x = x.round().clamp(0, 255).to(torch.uint8)
    # (t, h/m, w/m, m, m, C, tp, ps, ps) -> (t, tp, h/m, m, ps, w/m, m, ps, C)
    x = x.permute(0, 6, 1, 3, 7, 2, 4, 8, 5)
    return x.reshape(gt * tp, gh * ps, gw * ps, channels).numpy()


def video_metadata(frames: int, *, seconds_per_patch: float | None, timestamps: Sequence[float] | None, patch: int) -> dict:
    """Metadata that makes the HF processor (inside vLLM) reproduce the prompt's timing exactly.

    Qwen2.5-VL takes `sampled_fps = len(frames_indices) / total_num_frames * fps` and
    `second_per_grid_ts = patch / sampled_fps`; Qwen3-VL times each temporal patch as the mean of
    its frames' `index / fps`, printed with one decimal, so 10 fps with both frames of patch j at
    index `round(10 * t_j)` gives back `t_j`.
    """
    if timestamps is not None:
        indices = [round(10 * t) for t in timestamps for _ in range(patch)]
        if len(indices) != frames:
            raise Evr1Error(f"{len(timestamps)} timestamps for {frames} frames in temporal patches of {patch}")
        return {"fps": 10.0, "frames_indices": indices, "total_num_frames": max(indices) + 1, "do_sample_frames": False}
    fps = patch / seconds_per_patch if seconds_per_patch else 2.0
    return {"fps": fps, "frames_indices": list(range(frames)), "total_num_frames": frames, "do_sample_frames": False}


@dataclass(frozen=True)
class PixelLayout:
    """What `frames_from_pixels` needs to know about a processor (image or video)."""

    patch_size: int
    merge_size: int
    temporal_patch_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def of(cls, processor: Any) -> PixelLayout:
        if not (getattr(processor, "do_normalize", True) and getattr(processor, "do_rescale", True)):
            raise Evr1Error("the vllm engine needs a processor that rescales and normalises pixels (the Qwen-VL default)")
        return cls(int(processor.patch_size), int(processor.merge_size), int(processor.temporal_patch_size),
                   tuple(processor.image_mean), tuple(processor.image_std))

    def frames(self, values: torch.Tensor, grid: tuple[int, int, int]) -> np.ndarray:
        return frames_from_pixels(values, grid, patch_size=self.patch_size, merge_size=self.merge_size,
                                  temporal_patch_size=self.temporal_patch_size, mean=self.mean, std=self.std)


def vllm_request(
    prompt: Prompt, family: str, tokens: MediaTokens, image: PixelLayout, video: PixelLayout, index: int = 0
) -> dict[str, Any]:
    """The vLLM prompt dict (`prompt`, `multi_modal_data`, `mm_processor_kwargs`) for one of our prompts.

    `family` is the model's or its processor's (Qwen3.5's prompts are laid out as Qwen3-VL's: `media_family`)."""
    family = media_family(family)  # type: ignore[arg-type]
    if not prompt.text:
        raise Evr1Error(f"prompt {index} has no text; build prompts with evr1.models.prompts.build_prompt")
    collapsed = collapse_placeholders(prompt.text, family, tokens)
    mm: dict[str, list[Any]] = {}
    if "pixel_values" in prompt.mm:
        items = _split_rows(prompt.mm["pixel_values"], prompt.mm["image_grid_thw"].reshape(-1, 3))
        mm["image"] = [image.frames(values, grid)[0] for values, grid in items]
    if "pixel_values_videos" in prompt.mm:
        items = _split_rows(prompt.mm["pixel_values_videos"], prompt.mm["video_grid_thw"].reshape(-1, 3))
        if family == "qwen3-vl" and len(collapsed.timestamps) != len(items):
            raise Evr1Error(f"prompt {index}: {len(items)} video(s) but {len(collapsed.timestamps)} timed in its text")
        seconds = prompt.mm.get("second_per_grid_ts")
        videos = []
        for i, (values, grid) in enumerate(items):
            frames = video.frames(values, grid)
            meta = video_metadata(
                len(frames),
                seconds_per_patch=float(seconds.reshape(-1)[i]) if seconds is not None else None,
                timestamps=collapsed.timestamps[i] if family == "qwen3-vl" else None,
                patch=video.temporal_patch_size,
            )
            videos.append((frames, meta))
        mm["video"] = videos
    for kind, token in (("image", tokens.image), ("video", tokens.video)):
        found, given = collapsed.text.count(token), len(mm.get(kind, []))
        if found != given:
            raise Evr1Error(f"prompt {index} has {found} {kind} placeholder(s) but {given} {kind}(s) in its tensors")
    request: dict[str, Any] = {"prompt": collapsed.text}
    if mm:
        request["multi_modal_data"] = mm
        request["mm_processor_kwargs"] = {"do_sample_frames": False, "do_resize": False}
    return request


# -- sampling --------------------------------------------------------------------------------


def stop_token_ids(generation_eos: int | Sequence[int] | None, tokenizer_eos: int | None) -> tuple[int, ...]:
    """The model's end tokens: the generation config's `eos_token_id`(s), then the tokenizer's."""
    eos = [generation_eos] if isinstance(generation_eos, int) else list(generation_eos or [])
    if tokenizer_eos is not None:
        eos.append(tokenizer_eos)
    if not eos:
        raise Evr1Error("the model has no end-of-sequence token (generation_config.json or tokenizer eos_token)")
    return tuple(dict.fromkeys(int(t) for t in eos))


def request_seed(seed: int | None, prompt_index: int, n: int) -> int | None:
    """A distinct seed per prompt (vLLM seeds sample j of a request with `seed + j`)."""
    return None if seed is None else (seed + prompt_index * n) % 2**63


def check_temperature(temperature: float) -> None:
    """vLLM refuses temperatures above 2 and samples at 0.01 below 0.01 (log-probs would not be ours)."""
    if temperature > 2 or 0 < temperature < 0.01:
        raise ConfigError(f"the vllm engine samples at temperature 0 or in [0.01, 2] (got {temperature})")


def sampling_kwargs(
    params: SamplingParams, stop_ids: Sequence[int], banned: Sequence[int], seed: int | None
) -> dict[str, Any]:
    """vLLM `SamplingParams(**kwargs)` for our params: the sampled token's log-prob (`LOGPROBS_MODE`), our stops.

    Given `params.stop_token_ids` replace the model's end tokens, as in the HF engine (vLLM's
    `ignore_eos`); otherwise vLLM stops at the end tokens of the tokenizer and generation config.
    Stop strings stay in the text (`include_stop_str_in_output`), as the HF engine keeps them, so a
    closing tag such as `</answer>` reaches the reward. vLLM's repetition penalty and min-p are the HF
    engine's (`evr1.engines.sampling`).
    """
    check_temperature(params.sampling_temperature)
    return {
        "n": params.n,
        "temperature": params.sampling_temperature,
        "top_p": params.top_p,
        "top_k": 0 if params.top_k == -1 else params.top_k,  # vLLM: 0 = all tokens
        "min_p": params.min_p,
        "repetition_penalty": params.repetition_penalty,
        "stop": list(params.stop) or None,
        "include_stop_str_in_output": bool(params.stop),
        "max_tokens": params.max_tokens,
        "logprobs": 0,  # the sampled token's log-prob only
        "stop_token_ids": list(params.stop_token_ids or stop_ids),
        "ignore_eos": bool(params.stop_token_ids),
        "logit_bias": {int(t): BAN_BIAS for t in banned} or None,
        "seed": seed,
        "skip_special_tokens": True,
    }


# -- outputs ---------------------------------------------------------------------------------


def _result(prompt_index: int, completion: Any, stop_ids: frozenset[int], stops: frozenset[str]) -> RolloutResult:
    import torch

    from evr1.engines.base import RolloutResult

    ids = [int(t) for t in completion.token_ids]
    logprobs = completion.logprobs
    if logprobs is None or len(logprobs) != len(ids):
        raise Evr1Error(f"vLLM returned {0 if logprobs is None else len(logprobs)} log-probs for {len(ids)} tokens")
    values = [float(step[token].logprob) for step, token in zip(logprobs, ids)]
    reason = completion.finish_reason
    on_string = isinstance(completion.stop_reason, str) and completion.stop_reason in stops
    if reason == "stop" and not on_string and (not ids or ids[-1] not in stop_ids):
        raise Evr1Error(f"vLLM stopped a response on something other than a stop token or string ({completion.stop_reason!r})")
    if reason not in ("stop", "length"):
        raise Evr1Error(f"vLLM finished a response with {reason!r} (expected 'stop' or 'length')")
    return RolloutResult(
        prompt_index=prompt_index,
        sample_index=int(completion.index),
        token_ids=torch.tensor(ids, dtype=torch.long),
        logprobs=torch.tensor(values, dtype=torch.float32),
        finish_reason=reason,
        text=completion.text,
    )


def rollout_results(outputs: Sequence[Any], n: int, stop_ids: Iterable[int], stop: Iterable[str] = ()) -> list[RolloutResult]:
    """vLLM `RequestOutput`s (one per prompt, in prompt order) as `RolloutResult`s, prompt-major; `stop`: the
    request's stop strings."""
    stops, strings = frozenset(int(t) for t in stop_ids), frozenset(stop)
    results = []
    for prompt_index, output in enumerate(outputs):
        completions = sorted(output.outputs, key=lambda c: c.index)
        if [c.index for c in completions] != list(range(n)):
            raise Evr1Error(f"vLLM returned samples {[c.index for c in completions]} for prompt {prompt_index}, expected {n}")
        results += [_result(prompt_index, c, stops, strings) for c in completions]
    return results


def check_prompt_tokens(outputs: Sequence[Any], prompts: Sequence[Prompt]) -> None:
    """Fail unless vLLM expanded every prompt to our token ids (the learner scores the responses after them)."""
    for i, (output, prompt) in enumerate(zip(outputs, prompts, strict=True)):
        theirs, ours = list(output.prompt_token_ids or ()), prompt.input_ids.tolist()
        if theirs != ours:
            at = next((j for j, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
            raise Evr1Error(
                f"vLLM made prompt {i} into {len(theirs)} tokens, evr1 into {len(ours)} (first difference at "
                f"token {at}): its media placeholders were expanded differently; report this with the model family"
            )


# -- weights ---------------------------------------------------------------------------------


def checkpoint_name(name: str) -> str:
    """A learner parameter name without wrapper prefixes (DDP `module.`, torch.compile `_orig_mod.`)."""
    changed = True
    while changed:
        changed = False
        for prefix in WRAPPER_PREFIXES:
            if name.startswith(prefix):
                name, changed = name[len(prefix) :], True
    return name


def weight_batches(weights: Weights, max_bytes: int, *, cpu: bool = False) -> Iterator[list[tuple[str, torch.Tensor]]]:
    """`(checkpoint name, tensor)` pairs in batches of at most `max_bytes` (a larger tensor goes alone).

    `cpu` moves the tensors to the CPU (vLLM's tensor-parallel workers take them pickled).
    """
    items = weights.items() if isinstance(weights, Mapping) else weights
    batch: list[tuple[str, Any]] = []
    size = 0
    for name, tensor in items:
        nbytes = tensor.numel() * tensor.element_size()
        if batch and size + nbytes > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append((checkpoint_name(name), tensor.detach().cpu() if cpu else tensor))
        size += nbytes
    if batch:
        yield batch


# -- engine and placement --------------------------------------------------------------------


def engine_kwargs(model_path: str, model: ModelSpec, rollout: RolloutSpec, *, seed: int = 0) -> dict[str, Any]:
    """`vllm.LLM(**kwargs)` for our specs (model path already resolved)."""
    if model.attn_implementation not in ("auto", "flash_attention_2", "sdpa"):
        raise ConfigError(f"model.attn_implementation={model.attn_implementation!r} has no vLLM equivalent; use 'auto'")
    check_temperature(rollout.temperature)
    return {
        "model": model_path,
        "dtype": _DTYPES[model.dtype],
        "tensor_parallel_size": rollout.tensor_parallel_size,
        "gpu_memory_utilization": rollout.gpu_memory_utilization,
        "enforce_eager": rollout.enforce_eager,
        "enable_sleep_mode": rollout.colocate,
        "max_model_len": rollout.max_prompt_tokens + rollout.max_response_tokens,
        "logprobs_mode": LOGPROBS_MODE,
        "seed": seed,
    }


@dataclass(frozen=True)
class GpuRequests:
    """Ray `num_gpus` of the rollout worker and of each learner worker (by rank)."""

    rollout: float
    learners: tuple[float, ...]
    colocated: bool


def gpu_requests(resources: ResourcesSpec, rollout: RolloutSpec) -> GpuRequests:
    """Where the rollout engine runs: on a learner's GPU (colocated) or on GPUs of its own.

    Colocated, learner 0 and the engine ask for half a GPU each (create the learners first, so Ray
    puts the engine on learner 0's GPU; vLLM sleeps while the learner trains). Separate, the engine
    takes `tensor_parallel_size` GPUs besides the learners'. Without GPUs everything runs on CPU.
    """
    learners, tp = resources.learner_workers, rollout.tensor_parallel_size
    if resources.num_gpus == 0:
        return GpuRequests(0.0, (0.0,) * learners, colocated=False)
    if rollout.colocate:
        if tp > 1:
            raise ConfigError(
                f"a colocated engine shares one learner GPU, so rollout.tensor_parallel_size must be 1 (got {tp}); "
                "set rollout.colocate=False to give it GPUs of its own"
            )
        return GpuRequests(0.5, (0.5,) + (1.0,) * (learners - 1), colocated=True)
    if resources.num_gpus < learners + tp:
        raise ConfigError(
            f"a separate rollout engine needs {tp} GPU(s) besides the {learners} learner GPU(s), but "
            f"resources.num_gpus={resources.num_gpus}; raise num_gpus or set rollout.colocate=True"
        )
    return GpuRequests(float(tp), (1.0,) * learners, colocated=False)
