"""The record prompter remembers which frames each video prompt holds (the rewards read them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.data.loader import MediaLoader
from evr1.data.prompting import RecordPrompter
from evr1.data.records import Record
from evr1.data.testclips import write_clip
from evr1.specs import CacheSpec, ImageSpec, PromptSpec, VideoSpec


def test_frame_times_of_each_video_prompt_until_forgotten(processor, tmp_path: Path) -> None:
    write_clip(tmp_path / "v.mp4", 64, 48, 4, 16)  # 4 s at 4 fps
    video = VideoSpec(fps=1.0, min_frames=2, max_frames=4, min_pixels=28 * 28, max_pixels=56 * 56)
    prompter = RecordPrompter(processor, MediaLoader(video, ImageSpec(), CacheSpec(), processor, tmp_path), PromptSpec())
    clip = Record(id="c", problem="When?", problem_type="temporal_grounding", answer={"time": [1, 2]},
                  media=[{"kind": "video", "path": "v.mp4", "start": 1.0, "end": 3.0}])
    text = Record(id="t", problem="2+2?", problem_type="numerical", answer=4)
    prompter.many([clip, text])
    stamps, fps = prompter.timing["c"]
    # the clip [1, 3] s spans frames 4..12 (9 frames at 4 fps); 2 sampled: 2 / 9 * 4 fps (qwen-vl-utils' rule)
    # and the two are its first and last frames, 4 and 12: 1.0 s and 3.0 s into the source video
    assert fps == pytest.approx(8 / 9) and stamps == pytest.approx((1.0, 3.0))
    assert "t" not in prompter.timing  # no video, no frame times
    assert prompter.forget() == {"media/loaded": 1, "media/cache_hits": 0}
    assert prompter.timing == {}
