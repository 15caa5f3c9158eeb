"""The record prompter remembers what each prompt showed (the rewards read it), and on which clock."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evr1.data.loader import MediaLoader
from evr1.data.prompting import RecordPrompter
from evr1.data.records import Record
from evr1.data.testclips import write_clip
from evr1.models import load_processor
from evr1.models.families import family
from evr1.models.testing import tiny_spec
from evr1.rewards import spatio_temporal, temporal_grounding
from evr1.rewards.contract import Shown
from evr1.runner.loop.reward_phase import reward_input
from evr1.specs import CacheSpec, ImageSpec, PromptSpec, RewardSpec, VideoSpec

# (width, height) as shown: 64x48 frames within [28², 56²] px and a 300x200 image within [8, 64] x 28² px,
# smart_resized to multiples of 28 (Qwen2/2.5-VL) or 32 (Qwen3-VL); and each family's box units.
SHOWN = {
    "qwen2-vl": ((56, 56), (252, 168), "relative_1000"),
    "qwen2.5-vl": ((56, 56), (252, 168), "pixels"),
    "qwen3-vl": ((64, 32), (256, 160), "relative_1000"),
}


def test_what_each_prompt_showed_until_forgotten(processor, tmp_path: Path) -> None:
    write_clip(tmp_path / "v.mp4", 64, 48, 4, 16)  # 4 s at 4 fps
    Image.fromarray(np.zeros((200, 300, 3), np.uint8)).save(tmp_path / "i.png")
    video = VideoSpec(fps=1.0, min_frames=2, max_frames=4, min_pixels=28 * 28, max_pixels=56 * 56)
    image = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)
    prompter = RecordPrompter(processor, MediaLoader(video, image, CacheSpec(), processor, tmp_path), PromptSpec())
    clip = Record(id="c", problem="When?", problem_type="temporal_grounding", answer={"time": [1, 2]},
                  media=[{"kind": "video", "path": "v.mp4", "start": 1.0, "end": 3.0}])
    picture = Record(id="p", problem="Where?", problem_type="spatial_grounding", answer=[0, 0, 1, 1],
                     media=[{"kind": "image", "path": "i.png"}])
    text = Record(id="t", problem="2+2?", problem_type="numerical", answer=4)
    prompter.many([clip, picture, text])
    frames, pixels, units = SHOWN[family(processor)]
    shown = prompter.shown["c"]
    # the clip [1, 3] s spans frames 4..12 (9 frames at 4 fps); 2 sampled: 2 / 9 * 4 fps (qwen-vl-utils' rule),
    # its first and last frames, 4 and 12: 0 s and 2 s on the clip clock (1 s and 3 s into the file)
    assert shown.fps == pytest.approx(8 / 9) and shown.frame_timestamps == pytest.approx((0.0, 2.0))
    assert (shown.size, shown.source_size, shown.box_units) == (frames, (64, 48), units)
    assert prompter.shown["p"] == Shown(pixels, (300, 200), None, None, units)
    assert "t" not in prompter.shown  # no media, nothing shown
    assert prompter.forget() == {"media/loaded": 2, "media/cache_hits": 0}
    assert prompter.shown == {}


# clock: (the prompt's patch times, the response's box times for 1 s and 2 s of the clip, its interval for 0.5-2.5 s)
CLOCKS = {"source": (["2.5", "4.5"], ("3", "4"), "[2.5, 4.5]"), "clip": (["0.5", "2.5"], ("1", "2"), "[0.5, 2.5]")}


@pytest.mark.parametrize("clock", list(CLOCKS))
def test_qwen3_prompt_and_rewards_read_the_clock_the_prompt_showed(model_cache, tmp_path: Path, clock: str) -> None:
    """A 6 s, 4 fps video clipped to [2, 5] s: frames 8..20, four taken (8, 12, 16, 20). On the clip clock
    they are at 0, 1, 2, 3 s, on the source clock (the default, qwen-vl-utils') at 2, 3, 4, 5 s; the Qwen3-VL
    prompt stamps each 2-frame patch with its mean. Answers in seconds are read on the prompt's clock, answers
    by frame index on the frames; the references are on the clip clock either way."""
    processor = load_processor(tiny_spec("qwen3-vl", model_cache))
    write_clip(tmp_path / "v.mp4", 64, 48, 4, 24)
    video = VideoSpec(fps=None, nframes=4, min_pixels=32 * 32, max_pixels=64 * 64, clock=clock)
    assert VideoSpec().clock == "source"
    prompter = RecordPrompter(processor, MediaLoader(video, ImageSpec(), CacheSpec(), processor, tmp_path), PromptSpec())
    track = {"boxes": {"1": [0, 0, 0.5, 0.5], "2": [0.5, 0.5, 1, 1]}}  # at 1 s and 2 s of the clip
    clip = {"kind": "video", "path": "v.mp4", "start": 2.0, "end": 5.0}
    record = Record(id="c", problem="Track it.", problem_type="tracking", answer=track, media=[clip])
    prompt = prompter(record)
    stamps, (t1, t2), interval = CLOCKS[clock]
    assert re.findall(r"<([0-9.]+) seconds>", prompt.text) == stamps
    by_frame = '[{"frame": 1, "bbox_2d": [0, 0, 500, 500]}, {"frame": 2, "bbox_2d": [500, 500, 1000, 1000]}]'
    inp = reward_input(record, f"<answer>{by_frame}</answer>", "c#0", prompter.shown)
    assert inp.frame_timestamps == (0.0, 1.0, 2.0, 3.0) and inp.fps == pytest.approx(4 / 13 * 4)
    assert inp.clock_offset == (2.0 if clock == "source" else 0.0)  # frame 8 at 4 fps
    # 64x48 frames to multiples of 32 within [32², 64²] px: 48 / 32 = 1.5 rounds (to even) to 2, so 64x64
    assert (inp.shown_size, inp.source_size, inp.box_units) == ((64, 64), (64, 48), "relative_1000")
    assert spatio_temporal.score_tracking(inp, RewardSpec()) == 1.0  # frames 1 and 2: 1 s and 2 s, as the reference
    by_time = f'{{"{t1}s": [0, 0, 500, 500], "{t2}s": [500, 500, 1000, 1000]}}'
    assert spatio_temporal.score_tracking(reward_input(record, f"<answer>{by_time}</answer>", "c#1", prompter.shown),
                                          RewardSpec()) == 1.0
    wrong = f'{{"{float(t1) + 2}s": [0, 0, 500, 500]}}'  # 2 s late on the prompt's clock: no shared timestamp
    assert spatio_temporal.score_tracking(reward_input(record, f"<answer>{wrong}</answer>", "c#2", prompter.shown),
                                          RewardSpec()) == 0.0
    grounding = Record(id="g", problem="When?", problem_type="temporal_grounding", answer=[0.5, 2.5], media=[clip])
    prompter(grounding)
    answer = reward_input(grounding, f"<answer>{interval}</answer>", "g#0", prompter.shown)
    assert temporal_grounding.score(answer, RewardSpec()) == pytest.approx(1.0)
    late = reward_input(grounding, "<answer>[4.5, 6.5]</answer>" if clock == "clip" else "<answer>[0.5, 2.5]</answer>",
                        "g#1", prompter.shown)
    assert temporal_grounding.score(late, RewardSpec()) == 0.0  # read on the wrong clock: no overlap
