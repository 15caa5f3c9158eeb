"""`seek` and `zoom` on real generated clips, with frame times and crop boxes computed by hand."""

from __future__ import annotations

import re

import pytest
import torch

from evr1.data.cache_build import build_cache
from evr1.data.loader import MediaLoader, family_processors
from evr1.data.records import MediaRef, Record
from evr1.data.testclips import write_clip
from evr1.engines.tool_rollout import reply_segment
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.registry import TOOLS
from evr1.specs import CacheSpec, ImageSpec, ToolsSpec, VideoSpec
from evr1.tools.builtin import crop_box
from evr1.tools.media import ToolMedia

# 96x64 px at 10 fps, 50 frames (5 s); frames of 4 tokens' minimum are shown at 84x56 (the 28 px grid)
VIDEO = VideoSpec(fps=2.0, min_frames=2, min_pixels=4 * 28 * 28, max_pixels=16 * 28 * 28)
IMAGE = ImageSpec(min_pixels=4 * 28 * 28, max_pixels=64 * 28 * 28)
TOOL_SPEC = ToolsSpec(zoom_min_pixels=24 * 28 * 28, zoom_max_pixels=96 * 28 * 28)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("tools")
    write_clip(root / "clip.mp4", 96, 64, 10, 50)
    return root


@pytest.fixture(scope="module")
def procs():
    return family_processors("qwen2.5-vl")


def _record(start: float | None = None, end: float | None = None) -> Record:
    ref = MediaRef(kind="video", path="clip.mp4", start=start, end=end)
    return Record(id="r1", problem="q", problem_type="multiple_choice", answer="A", media=[ref])


def _context(root, procs, record: Record, cache: CacheSpec | None = None):
    cache = cache or CacheSpec(mode="bypass")
    shown = MediaLoader(VIDEO, IMAGE, cache, procs, root).load(record)
    return ToolMedia.build(TOOL_SPEC, VIDEO, IMAGE, cache, procs, root).context(record, shown)


def test_seek_returns_the_span_at_the_spec_fps(root, procs) -> None:
    reply = TOOLS["seek"]({"start_s": 1.0, "end_s": 3.0}, _context(root, procs, _record()))
    # frames ceil(1.0*10)=10 .. floor(3.0*10)=30: 21 frames (2.1 s) at 2 fps -> 4.2 -> 4; linspace(10, 30, 4)
    (media,) = reply.media
    assert reply.error is None and media.info.frame_indices == (10, 17, 23, 30)
    assert reply.text == "4 frames of 1-3 s, at 1, 1.7, 2.3, 3 s."
    assert (media.info.width, media.info.height) == (84, 56) and media.grid_thw.tolist() == [[2, 4, 6]]
    assert reply.visual_tokens == 2 * 4 * 6 // 4 and not media.cache_hit


def test_seek_times_are_on_the_prompt_clock_of_a_clip(root, procs) -> None:
    context = _context(root, procs, _record(1.0, 4.0))  # a Qwen2.5-VL prompt counts from the clip's start (frame 10)
    assert context.time_range() == pytest.approx((0.0, 3.1))  # frames 10..40
    reply = TOOLS["seek"]({"start_s": 0.5, "end_s": 2.5}, context)
    # source 1.5-3.5 s: frames 15..35, 21 frames -> 4: linspace(15, 35, 4) = 15, 21.67, 28.33, 35
    assert reply.media[0].info.frame_indices == (15, 22, 28, 35)
    assert reply.text == "4 frames of 0.5-2.5 s, at 0.5, 1.2, 1.8, 2.5 s."


def test_seek_is_served_from_the_cache_when_it_holds_the_span(root, procs, tmp_path) -> None:
    cache = CacheSpec(path=str(tmp_path / "cache"))
    media = ToolMedia.build(TOOL_SPEC, VIDEO, IMAGE, cache, procs, root)
    span = Record(id="s", problem="q", problem_type="multiple_choice", answer="A",
                  media=[MediaRef(kind="video", path="clip.mp4", start=1.0, end=3.0)])
    build_cache([span], video=media.video, image=IMAGE, cache=cache, processor=procs, data_root=root, workers=0,
                progress=False)
    hit = TOOLS["seek"]({"start_s": 1.0, "end_s": 3.0}, _context(root, procs, _record(), cache)).media[0]
    live = TOOLS["seek"]({"start_s": 1.0, "end_s": 3.0}, _context(root, procs, _record())).media[0]
    assert hit.cache_hit and torch.equal(hit.pixel_values, live.pixel_values) and hit.info == live.info


def test_zoom_crops_the_nearest_frame_from_the_source(root, procs) -> None:
    context = _context(root, procs, _record(1.0, 4.0))
    reply = TOOLS["zoom"]({"time_s": 1.26, "box": [42, 28, 84, 56]}, context)
    # 1.26 s on the clip clock = 2.26 s of the source: frame round(22.6) = 23. The box is the bottom-right quarter
    # of the 84x56 frame shown: source pixels 48..96 x 32..64 (a 48x32 region). smart_resize(32, 48) with at least
    # 24 tokens: 28x56 is too small, so both sides scale by sqrt(18816 / 1536) = 3.5 -> 112x168.
    (media,) = reply.media
    assert reply.error is None and media.kind == "image" and media.info.frame_indices == (23,)
    assert (media.info.source_width, media.info.source_height) == (48, 32)
    assert (media.info.width, media.info.height) == (168, 112) and media.grid_thw.tolist() == [[1, 8, 12]]
    assert reply.visual_tokens == 24 and reply.text == "The region at 1.26 s, enlarged to 168x112 px."
    other = TOOLS["zoom"]({"time_s": 1.26, "box": [0, 0, 42, 28]}, context).media[0]
    assert not torch.equal(other.pixel_values, media.pixel_values)


@pytest.mark.parametrize(
    ("box", "shown", "source", "expected"),
    [
        ((42, 28, 84, 56), (84, 56), (96, 64), (48, 32, 96, 64)),
        ((10, 10, 11, 11), (84, 56), (96, 64), (11, 11, 13, 13)),  # 11.43 -> 11, 12.57 -> 13: outward
        ((0, 0, 84, 56), (84, 56), (None, None), (0, 0, 84, 56)),
    ],
)
def test_crop_box_rounds_outward_to_source_pixels(box, shown, source, expected) -> None:
    assert crop_box(box, shown, source) == expected


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        ("seek", {"start_s": 3.0, "end_s": 1.0}, "out_of_range"),
        ("seek", {"start_s": 4.0, "end_s": 6.0}, "out_of_range"),
        ("seek", {"start_s": 1.0, "end_s": 1.05}, "bad_clip"),  # frames 10..10: fewer than two
        ("zoom", {"time_s": 9.0, "box": [0, 0, 10, 10]}, "out_of_range"),
        ("zoom", {"time_s": 1.0, "box": [10, 10, 10, 20]}, "bad_box"),
        ("zoom", {"time_s": 1.0, "box": [0, 0, 85, 20]}, "bad_box"),
    ],
)
def test_bad_requests_are_error_replies(root, procs, tool, arguments, error) -> None:
    reply = TOOLS[tool](arguments, _context(root, procs, _record()))
    assert reply.error == error and reply.text.startswith("Error: ") and reply.media == ()


@pytest.mark.parametrize(("clock", "times"), [("clip", (0.5, 1.2, 1.8, 2.5)), ("source", (1.5, 2.2, 2.8, 3.5))])
def test_a_qwen3_vl_reply_labels_its_frames_on_the_prompts_clock(root, tmp_path, clock, times) -> None:
    processor = load_processor(tiny_spec("qwen3-vl", tmp_path))
    video = VIDEO.model_copy(update={"clock": clock, "min_pixels": 4 * 32 * 32, "max_pixels": 16 * 32 * 32})
    record, cache = _record(1.0, 4.0), CacheSpec(mode="bypass")
    shown = MediaLoader(video, IMAGE, cache, processor, root).load(record)
    context = ToolMedia.build(TOOL_SPEC, video, IMAGE, cache, processor, root).context(record, shown)
    low = context.time_range()[0]  # 0 on the clip clock, 1 s (the clip's start) on the source clock
    reply = TOOLS["seek"]({"start_s": low + 0.5, "end_s": low + 2.5}, context)
    # source 1.5-3.5 s: frames 15, 22, 28, 35, shown in pairs (one temporal patch) at each pair's mean time
    labels = re.findall(r"<[\d.]+ seconds>", reply_segment(processor, [reply]).text)
    assert labels == [f"<{(times[0] + times[1]) / 2:.1f} seconds>", f"<{(times[2] + times[3]) / 2:.1f} seconds>"]
    assert reply.text == f"4 frames of {low + 0.5:g}-{low + 2.5:g} s, at {', '.join(f'{t:g}' for t in times)} s."


def test_a_span_the_cache_lacks_in_only_mode_is_an_error_reply(root, procs, tmp_path) -> None:
    built = CacheSpec(path=str(tmp_path / "cache"))
    build_cache([_record()], video=VIDEO, image=IMAGE, cache=built, processor=procs, data_root=root, workers=0,
                progress=False)  # the prompt's video only
    only = built.model_copy(update={"mode": "only"})
    reply = TOOLS["seek"]({"start_s": 1.0, "end_s": 3.0}, _context(root, procs, _record(), only))
    assert reply.error == "cache_miss" and "record 'r1': no cache entry for video 'clip.mp4'" in reply.text
