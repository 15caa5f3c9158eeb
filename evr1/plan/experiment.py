"""The planner's inputs from an experiment: its model's `Architecture` and the `Workload` of its learner step."""

from __future__ import annotations

from typing import Any

from evr1.data.frame_sampling import frame_pixel_limits
from evr1.plan.architecture import Architecture
from evr1.plan.memory import Workload, lora_params


def video_frames(experiment: Any) -> int:
    """The frame count of the experiment's longest video: `nframes`, else `max_frames`."""
    video = experiment.data.video
    return video.nframes or video.max_frames


def tokens_per_patch(experiment: Any, arch: Architecture, frames: int) -> int:
    """Merged visual tokens per temporal patch of a `frames`-frame video at the experiment's pixel budget."""
    _, max_pixels = frame_pixel_limits(experiment.data.video, frames, arch.factor)
    return max(1, int(max_pixels) // arch.factor**2)


def workload_of(experiment: Any, arch: Architecture, *, frames: int | None = None, text_tokens: int = 256) -> Workload:
    """The learner step `experiment` runs on its longest video (`frames` to override its frame count).

    `model.dtype` "auto" plans for a GPU (bfloat16 compute); responses are planned at
    `rollout.max_response_tokens`; `text_tokens` is the prompt's text around the video.
    """
    model, trainer, resources = experiment.model, experiment.trainer, experiment.resources
    frames = frames or video_frames(experiment)
    lora = model.lora
    return Workload(
        frames=frames,
        tokens_per_patch=tokens_per_patch(experiment, arch, frames),
        text_tokens=text_tokens,
        n=experiment.rollout.n,
        response_tokens=experiment.rollout.max_response_tokens,
        micro_batch_tokens=trainer.micro_batch_tokens,
        dp=resources.learner_workers,
        fsdp=resources.learner_sharding == "fsdp",
        compute_bytes=4 if model.dtype == "float32" else 2,
        lora_params=lora_params(arch, lora.rank, lora.target_modules) if lora is not None else 0,
        freeze_vision=model.freeze_vision or (lora is not None and lora.vision == "frozen"),
        checkpointing=model.gradient_checkpointing,
        grouped=trainer.grouped_forward,
        chunk_tokens=trainer.logprob_chunk_tokens,
        vision_frames_per_pass=model.vision_frames_per_pass,
        reference=experiment.algo.kl.enabled,
        entropy_grad=experiment.algo.entropy_coef != 0,
    )
