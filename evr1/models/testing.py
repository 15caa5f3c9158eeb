"""Helpers for tests of anything that needs a tiny model and a real multimodal prompt.

Frames are made with numpy and run through the family's own HF processors, so prompts carry
exactly what the media pipeline produces in training.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evr1.models.families import Family, alignment
from evr1.models.prompts import Prompt, build_prompt
from evr1.specs import ModelSpec

if TYPE_CHECKING:
    import torch


# Parameters whose gradients reach the loss only through the decay `g` of Qwen3.5's linear-attention layers.
_DECAY_PATH = ("linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.in_proj_a.weight")


def gradient_bound(name: str, want: torch.Tensor) -> float:
    """The largest error norm an exactness test allows on the gradient `want` of parameter `name`: 1e-4 of its norm,
    but 2e-3 of it plus 1e-7 on the decay path of Qwen3.5's linear attention (`A_log`, `dt_bias`, `in_proj_a`).

    Those gradients go through transformers' float32 chunked delta rule (float32 whatever the model's dtype), whose
    triangular solve leaves them an absolute noise of up to 4e-8 (heads that decay fast have true gradients below
    that) and moves them by about 3e-4 between HF's own padded batch and single rows of the same inputs; padding
    that moves a chunk boundary (another micro-batch) changes the noise. With that kernel run in float64 the grouped
    forward matched single rows to 2e-7 (measured once), so the states it keeps are exact.
    """
    if name.endswith(_DECAY_PATH):
        return 2e-3 * float(want.norm()) + 1e-7
    return 1e-4 * float(want.norm()) + 1e-12


def tiny_spec(fam: Family, cache_dir: str | Path, **fields: Any) -> ModelSpec:
    """The `ModelSpec` of the registered tiny model of `fam`, built under `cache_dir`."""
    return ModelSpec(name=f"tiny-{fam}", cache_dir=str(cache_dir), dtype="float32", **fields)


def random_frames(fam: Family, seed: int, frames: int = 4, cells: tuple[int, int] = (2, 2)) -> np.ndarray:
    """Random uint8 frames `(T, H, W, 3)` whose sides are `cells` multiples of the family's alignment."""
    rng = np.random.default_rng(seed)
    side = alignment(fam)
    return rng.integers(0, 256, (frames, cells[0] * side, cells[1] * side, 3), dtype=np.uint8)


def process_video(processor: Any, frames: np.ndarray, fps: float = 2.0, stride: int = 1) -> Any:
    """The video processor's output for pre-sampled `frames` (every `stride`-th frame of a `fps` video)."""
    from transformers.video_utils import VideoMetadata

    meta = VideoMetadata(
        total_num_frames=len(frames) * stride, fps=fps, frames_indices=list(range(0, len(frames) * stride, stride))
    )
    return processor.video_processor(
        videos=[frames], video_metadata=[meta], return_metadata=True, do_sample_frames=False, return_tensors="pt"
    )


def process_image(processor: Any, image: np.ndarray) -> Any:
    """The image processor's output for one `(H, W, 3)` uint8 image."""
    return processor.image_processor(images=[image], return_tensors="pt")


def video_prompts(processor: Any, fam: Family, questions: Sequence[str], seed: int = 0) -> list[Prompt]:
    """One prompt per question, each with its own random video (widths vary, so lengths differ)."""
    return [
        build_prompt(processor, q, [process_video(processor, random_frames(fam, seed + i, cells=(2, 2 + i % 2)))])
        for i, q in enumerate(questions)
    ]
