"""The vLLM request of a prompt over a clipped video (loaded as training loads it) rebuilds the prompt
exactly: the timestamps of Qwen3-VL (on either clock) and the seconds per patch of Qwen2.5-VL survive."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from vllm_processing import processed_as_vllm_does

from evr1.data.loader import MediaLoader
from evr1.data.records import MediaRef
from evr1.data.testclips import write_clip
from evr1.engines.vllm_adapter import MediaTokens, PixelLayout, vllm_request
from evr1.models import build_prompt, load_processor
from evr1.models.testing import tiny_spec
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

# 6 s at 4 fps clipped to [2, 5] s: frames 8..20, six taken at linspace(8, 20, 6).round() = 8, 10, 13, 15, 18, 20,
# i.e. 0, 0.5, 1.25, 1.75, 2.5, 3 s on the clip clock (2 s later on the source clock); Qwen3-VL stamps each
# 2-frame patch with the mean: 0.25, 1.5, 2.75 (2.25, 3.5, 4.75), printed with one decimal (ties to even)
STAMPS = {"clip": ["0.2", "1.5", "2.8"], "source": ["2.2", "3.5", "4.8"]}


def _clipped_prompt(processor, folder: Path, clock: str):
    """The prompt of a question on `v.mp4` (6 s at 4 fps, written in `folder`) clipped to [2, 5] s."""
    write_clip(folder / "v.mp4", 64, 48, 4, 24)
    video = VideoSpec(fps=None, nframes=6, min_pixels=28 * 28, max_pixels=64 * 64, clock=clock)
    loader = MediaLoader(video, ImageSpec(), CacheSpec(), processor, folder)
    media = loader.load_media(MediaRef(kind="video", path="v.mp4", start=2.0, end=5.0))
    messages = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": "When?"}]}]
    return build_prompt(processor, messages, [media.processor_inputs()])


@pytest.mark.parametrize("clock", list(STAMPS))
def test_a_qwen3_prompt_of_a_clipped_video_is_stamped_on_its_clock(model_cache: Path, tmp_path: Path, clock: str) -> None:
    processor = load_processor(tiny_spec("qwen3-vl", model_cache))
    assert re.findall(r"<([0-9.]+) seconds>", _clipped_prompt(processor, tmp_path, clock).text) == STAMPS[clock]


@pytest.mark.parametrize("clock", list(STAMPS))
def test_a_clipped_video_request_rebuilds_our_prompt(processor, fam: str, tmp_path: Path, clock: str) -> None:
    prompt = _clipped_prompt(processor, tmp_path, clock)
    request = vllm_request(prompt, fam, MediaTokens.of(processor), PixelLayout.of(processor.image_processor),
                           PixelLayout.of(processor.video_processor))
    again = processed_as_vllm_does(processor, request)
    assert again["input_ids"][0].tolist() == prompt.input_ids.tolist()
    for key in prompt.mm:
        assert torch.equal(again[key], prompt.mm[key]), key
