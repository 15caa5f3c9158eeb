"""The live path gives exactly what qwen-vl-utils `fetch_video` + the official HF processor give.

Reference: `fetch_video(ele)` (its torchcodec reader, see conftest) then the family's video
processor with `do_resize=False, do_sample_frames=False` (the qwen-vl-utils recipe: frames are
already sampled and sized). Images: `fetch_image` then the HF image processor (which finds them at
its size), or with `ImageSpec.resize="torch"` the HF image processor alone.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from media_cases import CLIPS, IMAGES
from PIL import Image

from evr1.data.frame_sampling import Geometry
from evr1.data.live import prepare_image, prepare_video
from evr1.data.loader import family_processors
from evr1.data.patches import Normaliser, Patches, image_patches, video_patches
from evr1.specs import ImageSpec, VideoSpec

FAMILIES = ["qwen2.5-vl", "qwen3-vl"]
SPECS = [
    (VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=96 * 28 * 28), None, None),
    (VideoSpec(fps=3.5, min_frames=6, max_frames=12, min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28,
               total_pixels=600 * 28 * 28), None, None),
    (VideoSpec(fps=None, nframes=6, min_pixels=4 * 28 * 28, max_pixels=48 * 28 * 28), 0.4, 2.1),
]


@pytest.fixture(scope="module")
def processors():
    return {family: family_processors(family) for family in FAMILIES}


def _reference(vision_process, path, spec: VideoSpec, start, end, processor):
    ele = {"video": str(path), "min_pixels": spec.min_pixels, "max_pixels": spec.max_pixels}
    if spec.total_pixels is not None:
        ele["total_pixels"] = spec.total_pixels
    if spec.nframes is not None:
        ele["nframes"] = spec.nframes
    else:
        ele.update(fps=spec.fps, min_frames=spec.min_frames, max_frames=spec.max_frames)
    if start is not None:
        ele.update(video_start=start, video_end=end)
    video, meta, sample_fps = _fetch(vision_process, ele, processor.patch_size)
    out = processor(videos=[video], do_resize=False, do_sample_frames=False, cap_pixels_per_frame=False, return_tensors="pt")
    return video, meta, sample_fps, out


def _fetch(vision_process, ele, patch_size):
    (video, meta), sample_fps = vision_process.fetch_video(
        ele, image_patch_size=patch_size, return_video_metadata=True, return_video_sample_fps=True
    )
    return video, meta, sample_fps


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("clip", list(CLIPS))
@pytest.mark.parametrize("case", range(len(SPECS)))
def test_video_matches_fetch_video_and_hf_processor(reference_reader, processors, media_root, family, clip, case) -> None:
    spec, start, end = SPECS[case]
    proc = processors[family].video_processor
    video, meta, sample_fps, ref = _reference(reference_reader, media_root / clip, spec, start, end, proc)

    ours = prepare_video(media_root / clip, spec, Geometry.of(proc), start, end)
    values = Normaliser.of(proc).apply(ours.patches)

    assert list(ours.info.frame_indices) == list(meta["frames_indices"])
    assert (ours.info.height, ours.info.width) == tuple(video.shape[-2:])
    assert ours.info.video_fps == pytest.approx(meta["fps"]) and ours.info.sample_fps == pytest.approx(sample_fps)
    assert list(ours.info.grid_thw) == ref["video_grid_thw"][0].tolist()
    assert values.dtype == torch.float32 and torch.equal(values, ref["pixel_values_videos"])  # bitwise


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", list(IMAGES))
@pytest.mark.parametrize("resize", ["pil", "torch"])
def test_image_matches_fetch_image_and_hf_image_processor(processors, media_root, family, name, resize) -> None:
    from qwen_vl_utils import vision_process

    spec = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=80 * 28 * 28, resize=resize)
    proc = processors[family].image_processor
    size = {"shortest_edge": spec.min_pixels, "longest_edge": spec.max_pixels}
    if resize == "pil":
        ele = {"image": str(media_root / name), "min_pixels": spec.min_pixels, "max_pixels": spec.max_pixels}
        image = vision_process.fetch_image(ele, image_patch_size=proc.patch_size)
    else:
        image = vision_process.to_rgb(Image.open(media_root / name))
    ref = proc(images=[image], size=size, return_tensors="pt")
    ours = prepare_image(media_root / name, spec, Geometry.of(proc))
    assert list(ours.info.grid_thw) == ref["image_grid_thw"][0].tolist()
    assert torch.equal(Normaliser.of(proc).apply(ours.patches), ref["pixel_values"])


def test_qwen3_timestamps_follow_the_processor_rule(processors, media_root) -> None:
    """Timestamps are on the clip clock, (frame index - the clip's first frame) / source fps; the Qwen3-VL
    processor, given the loader's metadata, averages the same times per temporal patch."""
    spec = VideoSpec(fps=2.0, min_pixels=16 * 32 * 32, max_pixels=64 * 32 * 32)
    proc = processors["qwen3-vl"]
    ours = prepare_video(media_root / "long.mp4", spec, Geometry.of(proc.video_processor), 1.0, 4.5)
    fps = CLIPS["long.mp4"][2]
    assert ours.info.frame_indices[0] == 25 and ours.info.frame_indices[-1] == 112  # ceil(1.0*25), floor(4.5*25)
    assert ours.info.first_frame == 25 and ours.info.timestamps == tuple((i - 25) / fps for i in ours.info.frame_indices)
    assert ours.info.timestamps[0] == 0.0 and ours.info.timestamps[-1] == pytest.approx(87 / 25)
    assert (ours.info.source_width, ours.info.source_height) == CLIPS["long.mp4"][:2]
    from transformers import Qwen3VLProcessor

    per_patch = Qwen3VLProcessor._calculate_timestamps(None, list(ours.info.clip_indices), fps, 2)
    assert per_patch == [(a + b) / 2 for a, b in zip(ours.info.timestamps[::2], ours.info.timestamps[1::2])]


@settings(max_examples=12, deadline=None)
@given(t=st.integers(1, 5), gh=st.integers(1, 3), gw=st.integers(1, 3), family=st.sampled_from(FAMILIES), seed=st.integers(0, 99))
def test_patch_layout_and_arithmetic_equal_hf_for_any_frames(t, gh, gw, family, seed) -> None:
    """Random uint8 frames (odd counts padded): our layout + normalisation == the HF processor, bitwise."""
    procs = family_processors(family)
    vp, ip = procs.video_processor, procs.image_processor
    geometry = Geometry.of(vp)
    side = geometry.factor
    frames = torch.randint(0, 256, (t, 3, gh * side, gw * side), generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)
    ref = vp(videos=[frames], do_resize=False, do_sample_frames=False, cap_pixels_per_frame=False, return_tensors="pt")
    patches = video_patches(frames, geometry)
    assert torch.equal(Normaliser.of(vp).apply(patches), ref["pixel_values_videos"])
    reused = torch.full(patches.out_shape, float("nan"))  # a read writes into pooled memory holding an older output
    assert torch.equal(Normaliser.of(vp).apply(patches, reused), ref["pixel_values_videos"])
    ref_image = ip(images=[frames[0]], do_resize=False, return_tensors="pt")
    assert torch.equal(Normaliser.of(ip).apply(image_patches(frames[0], Geometry.of(ip))), ref_image["pixel_values"])


@pytest.mark.parametrize("family", FAMILIES)
def test_every_byte_of_every_channel_normalises_as_hf(family) -> None:
    """A value depends on its channel and byte only, so frames holding all 256 bytes in each channel
    (a different order per channel) prove the arithmetic equal to the HF processor's on every input."""
    procs = family_processors(family)
    vp, ip = procs.video_processor, procs.image_processor
    geometry = Geometry.of(vp)
    side = geometry.factor
    pixel = torch.arange(2 * side * side).reshape(2, 1, side, side)
    frames = torch.cat([(pixel * (2 * c + 1) + 7 * c) % 256 for c in range(3)], dim=1).to(torch.uint8)
    assert all(len(frames[:, c].unique()) == 256 for c in range(3))
    ref = vp(videos=[frames], do_resize=False, do_sample_frames=False, cap_pixels_per_frame=False, return_tensors="pt")
    assert torch.equal(Normaliser.of(vp).apply(video_patches(frames, geometry)), ref["pixel_values_videos"])
    image = frames[0, :, : Geometry.of(ip).factor, : Geometry.of(ip).factor]
    assert all(len(image[c].unique()) == 256 for c in range(3))
    ref_image = ip(images=[image], do_resize=False, return_tensors="pt")
    assert torch.equal(Normaliser.of(ip).apply(image_patches(image, Geometry.of(ip))), ref_image["pixel_values"])


def test_normalise_into_a_reused_buffer(processors, media_root) -> None:
    proc = processors["qwen2.5-vl"].video_processor
    prepared = prepare_video(media_root / "small.mp4", VideoSpec(min_pixels=3136, max_pixels=64 * 28 * 28), Geometry.of(proc))
    norm = Normaliser.of(proc)
    fresh = norm.apply(prepared.patches)
    buffer = torch.full(prepared.patches.out_shape, float("nan"))
    assert norm.apply(prepared.patches, out=buffer) is buffer and torch.equal(buffer, fresh)
    with pytest.raises(ValueError, match="out must be"):
        norm.apply(prepared.patches, out=torch.empty(3, 3))
    seq, c, _, pp = prepared.patches.data.shape
    three = Patches(torch.zeros(seq, c, 3, pp, dtype=torch.uint8), prepared.patches.grid_thw, 2)
    with pytest.raises(ValueError, match="patches store 3 frames per temporal patch, the model takes 2"):
        norm.apply(three)


@pytest.mark.parametrize("flags", [{"do_normalize": False}, {"do_normalize": False, "do_rescale": False}, {"do_rescale": False}])
def test_other_processor_arithmetic_is_followed(flags) -> None:
    from transformers import Qwen2VLVideoProcessor

    proc = Qwen2VLVideoProcessor(**flags)
    geometry = Geometry.of(proc)
    frames = torch.randint(0, 256, (2, 3, 56, 84), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
    ref = proc(videos=[frames], do_resize=False, do_sample_frames=False, cap_pixels_per_frame=False, return_tensors="pt")
    assert torch.equal(Normaliser.of(proc).apply(video_patches(frames, geometry)), ref["pixel_values_videos"])


@pytest.mark.parametrize("model_type", ["qwen3_5", "qwen3_5_moe", "qwen3_vl_moe"])
def test_qwen35_and_moe_checkpoints_use_the_qwen3vl_processors(model_type: str) -> None:
    """transformers maps Qwen3.5 (dense and MoE) and Qwen3-VL-MoE checkpoints to Qwen3-VL's processor classes, and
    evr1's Qwen3.5 defaults are Qwen3-VL's: the Qwen3-VL parity cases here are theirs too."""
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    assert PROCESSOR_MAPPING_NAMES[model_type] == PROCESSOR_MAPPING_NAMES["qwen3_vl"] == "Qwen3VLProcessor"
    assert VIDEO_PROCESSOR_MAPPING_NAMES[model_type] == VIDEO_PROCESSOR_MAPPING_NAMES["qwen3_vl"]
    # Qwen3-VL-MoE has no entry of its own: its processor's saved config names the image processor class
    assert IMAGE_PROCESSOR_MAPPING_NAMES.get(model_type, IMAGE_PROCESSOR_MAPPING_NAMES["qwen3_vl"]) == (
        IMAGE_PROCESSOR_MAPPING_NAMES["qwen3_vl"])
    ours, theirs = family_processors("qwen3.5"), family_processors("qwen3-vl")
    assert ours.video_processor.to_dict() == theirs.video_processor.to_dict()
    assert ours.image_processor.to_dict() == theirs.image_processor.to_dict()


def test_a_negative_start_is_the_references_clamp_to_0(reference_reader, processors, media_root) -> None:
    """qwen-vl-utils clamps `video_start` to 0; a record's negative `start` is read as 0 and gives its pixels."""
    from evr1.data.records import MediaRef

    ref = MediaRef(kind="video", path="small.mp4", start=-0.7, end=1.2)
    assert (ref.start, ref.end) == (0.0, 1.2) and MediaRef(kind="video", path="v.mp4", start=-3).start == 0.0
    spec, proc = SPECS[2][0], processors["qwen2.5-vl"].video_processor
    _, meta, _, expected = _reference(reference_reader, media_root / "small.mp4", spec, -0.7, 1.2, proc)
    ours = prepare_video(media_root / "small.mp4", spec, Geometry.of(proc), ref.start, ref.end)
    assert list(ours.info.frame_indices) == list(meta["frames_indices"]) and ours.info.first_frame == 0
    assert torch.equal(Normaliser.of(proc).apply(ours.patches), expected["pixel_values_videos"])


def test_over_the_budget_the_reference_goes_on_and_evr1_refuses(reference_reader, processors, media_root) -> None:
    """8 frames floored at min_pixels need twice total_pixels: the reference makes them anyway, evr1 says why not."""
    from evr1.data.frame_sampling import MediaError

    spec = VideoSpec(fps=None, nframes=8, min_pixels=24 * 28 * 28, max_pixels=48 * 28 * 28, total_pixels=48 * 28 * 28)
    proc = processors["qwen2.5-vl"].video_processor
    video, *_ = _reference(reference_reader, media_root / "small.mp4", spec, None, None, proc)
    assert tuple(video.shape) == (8, 3, 112, 168)  # 24 tokens a frame, at the floor: 8 * 24 / 2 = 96 tokens for 48
    with pytest.raises(MediaError, match="qwen-vl-utils would go over the budget, evr1 refuses: lower min_pixels"):
        prepare_video(media_root / "small.mp4", spec, Geometry.of(proc))
