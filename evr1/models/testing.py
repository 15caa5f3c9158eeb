"""Helpers for tests of anything that needs a tiny model and a real multimodal prompt.

Frames are made with numpy and run through the family's own HF processors, so prompts carry
exactly what the media pipeline produces in training.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evr1.models.families import Family, alignment
from evr1.models.prompts import Prompt, build_prompt
from evr1.specs import ModelSpec


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
