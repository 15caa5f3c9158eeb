"""The reference's pixels on real-world media, through the live path and through the cache.

Reference: qwen-vl-utils `fetch_video` (with its torchcodec reader, the one it prefers, and its
decord reader) or `fetch_image`, at its default settings, then the family's HF processor (videos
with `do_resize=False, do_sample_frames=False`, as the qwen-vl-utils recipe calls it; images with
the pixel limits of the family's checkpoints, which are qwen-vl-utils' own). evr1 runs at its
default `VideoSpec()` / `ImageSpec()`. Every comparison is bitwise.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from media_cases import DECORD_DIFFERS, REAL_CLIPS, REAL_IMAGES
from qwen_vl_utils import vision_process as qvu

from evr1.data.cache_build import build_cache
from evr1.data.decode import probe_video, read_frames, read_image
from evr1.data.frame_sampling import Geometry, image_pixel_limits
from evr1.data.live import prepare_image, prepare_video
from evr1.data.loader import MediaLoader, family_processors
from evr1.data.patches import Normaliser
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

FAMILIES = ["qwen2.5-vl", "qwen3-vl"]
# (family, clip, reader): every clip with the preferred reader for one family; the other family's factor and
# defaults on the shapes they change; decord on the colour and rotation cases (kept cheap: ~1 s a case)
VIDEO_CASES = (
    [("qwen2.5-vl", name, "torchcodec") for name in REAL_CLIPS]
    + [("qwen3-vl", name, "torchcodec") for name in ("bt709.mp4", "rot90.mp4", "thin.mp4", "flat.mp4")]
    + [("qwen2.5-vl", name, "decord") for name in ("bt709.mp4", "bt709_full.mp4", "rot180.mp4", "bt2020_10bit.mp4")]
    + [("qwen2.5-vl", name, "decord") for name in ("ten_bit.mp4", "odd_444.mp4", "ffv1_odd.mkv", "ffv1_odd_444.mkv")]
)
ARCHIVE_CLIPS = ["ten_bit.mp4", "odd_444.mp4", "ffv1_odd.mkv", "ffv1_odd_444.mkv", "ffv1_odd_10bit.mkv"]


@functools.cache
def _processors(family: str):
    return family_processors(family)


@functools.cache
def _video_reference(root: str, name: str, family: str, backend: str) -> torch.Tensor:
    proc = _processors(family).video_processor
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(qvu, "get_video_reader_backend", lambda: backend)
        video = qvu.fetch_video({"video": f"{root}/{name}"}, image_patch_size=proc.patch_size)
    out = proc(videos=[video], do_resize=False, do_sample_frames=False, cap_pixels_per_frame=False, return_tensors="pt")
    return out["pixel_values_videos"]


@functools.cache
def _image_reference(root: str, name: str, family: str) -> torch.Tensor:
    proc = _processors(family).image_processor
    image = qvu.fetch_image({"image": f"{root}/{name}"}, image_patch_size=proc.patch_size)
    low, high = image_pixel_limits(ImageSpec(), Geometry.of(proc).factor)
    return proc(images=[image], size={"shortest_edge": low, "longest_edge": high}, return_tensors="pt")["pixel_values"]


def _live(root, name: str, family: str, video: VideoSpec | None = None) -> torch.Tensor:
    procs = _processors(family)
    if name in REAL_CLIPS:
        proc = procs.video_processor
        prepared = prepare_video(root / name, video or VideoSpec(), Geometry.of(proc))
    else:
        proc = procs.image_processor
        prepared = prepare_image(root / name, ImageSpec(), Geometry.of(proc))
    return Normaliser.of(proc).apply(prepared.patches)


@pytest.mark.parametrize(("family", "name", "backend"), VIDEO_CASES)
def test_video_is_the_references(real_media_root, family: str, name: str, backend: str) -> None:
    ref = _video_reference(str(real_media_root), name, family, backend)
    ours = _live(real_media_root, name, family)
    if backend == "decord" and name in DECORD_DIFFERS:
        assert ours.shape == ref.shape and not torch.equal(ours, ref)  # see the README: torchcodec is followed
        return
    assert ours.shape == ref.shape and torch.equal(ours, ref)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", REAL_IMAGES)
def test_image_is_the_references(real_media_root, family: str, name: str) -> None:
    ref = _image_reference(str(real_media_root), name, family)
    assert torch.equal(_live(real_media_root, name, family), ref)


def test_the_cache_serves_the_references_pixels(real_media_root, tmp_path, family: str = "qwen3-vl") -> None:
    refs = [MediaRef(kind="video", path=n) for n in REAL_CLIPS] + [MediaRef(kind="image", path=n) for n in REAL_IMAGES]
    records = [Record(id=f"r{i}", problem="q", problem_type="multiple_choice", answer="A", media=[ref])
               for i, ref in enumerate(refs)]
    cache = CacheSpec(path=str(tmp_path / "cache"), mode="only")
    procs = _processors(family)
    report = build_cache(records, video=VideoSpec(), image=ImageSpec(), cache=cache, processor=procs,
                         data_root=real_media_root, workers=0, progress=False)
    assert report.built == len(refs) and not report.failures
    loader = MediaLoader(VideoSpec(), ImageSpec(), cache, procs, real_media_root)
    for ref in refs:
        got = loader.load_media(ref)
        assert got.cache_hit
        expected = (_video_reference(str(real_media_root), ref.path, family, "torchcodec") if ref.kind == "video"
                    else _image_reference(str(real_media_root), ref.path, family))
        assert torch.equal(got.pixel_values, expected), ref.path


@pytest.mark.parametrize("name", ARCHIVE_CLIPS)
def test_the_decord_setting_is_the_references_decord_reader(real_media_root, name: str) -> None:
    """Where qwen-vl-utils reads with decord (torchcodec not installed), `VideoSpec(decoder="decord")` is its
    pixels, bitwise, on 10-bit, 4:4:4 and odd-sided FFV1 clips, live and from the cache."""
    ref = _video_reference(str(real_media_root), name, "qwen2.5-vl", "decord")
    assert torch.equal(_live(real_media_root, name, "qwen2.5-vl", VideoSpec(decoder="decord")), ref)


def test_the_cache_serves_the_decord_readers_pixels(real_media_root, tmp_path, family: str = "qwen2.5-vl") -> None:
    video, cache, procs = VideoSpec(decoder="decord"), CacheSpec(path=str(tmp_path / "cache"), mode="only"), _processors(family)
    refs = [MediaRef(kind="video", path=n) for n in ARCHIVE_CLIPS]
    records = [Record(id=f"r{i}", problem="q", problem_type="multiple_choice", answer="A", media=[ref])
               for i, ref in enumerate(refs)]
    report = build_cache(records, video=video, image=ImageSpec(), cache=cache, processor=procs,
                         data_root=real_media_root, workers=0, progress=False)
    assert report.built == len(refs) and not report.failures
    loader = MediaLoader(video, ImageSpec(), cache, procs, real_media_root)
    for ref in refs:
        got = loader.load_media(ref)
        assert got.cache_hit and torch.equal(got.pixel_values, _video_reference(str(real_media_root), ref.path, family,
                                                                               "decord")), ref.path


@pytest.mark.parametrize("name", ARCHIVE_CLIPS)
def test_decord_differs_by_its_chroma_filter(real_media_root, name: str) -> None:
    """Why the two readers of the reference differ: decord's frames are swscale's with the bilinear filter,
    torchcodec's (and evr1's) with the bicubic one. Where swscale converts without its filters (8-bit 4:4:4 at any
    size, 8-bit 4:2:0 at even sides) the two agree; on 10-bit 4:2:0 and odd-sided 4:2:0 they do not."""
    import av
    import decord

    with av.open(str(real_media_root / name)) as container:
        frame = next(container.decode(video=0))
        space, scale = frame.colorspace, frame.color_range
        bilinear = frame.to_ndarray(format="rgb24", interpolation="BILINEAR", src_colorspace=space,
                                    dst_colorspace=space, src_color_range=scale)
    decorded = decord.VideoReader(str(real_media_root / name)).get_batch([0]).asnumpy()[0]
    assert np.array_equal(bilinear, decorded)
    ours = read_frames(real_media_root / name, [0])[0].astype(int)
    apart = np.abs(ours - decorded.astype(int))
    if name in DECORD_DIFFERS:
        assert apart.max() > 50 and (apart > 0).mean() > 0.3  # chroma edges: tens of levels, on most values
    else:
        assert apart.max() == 0


def test_pyavs_plain_conversion_is_what_was_wrong(real_media_root) -> None:
    """PyAV's `to_ndarray("rgb24")` reads a BT.709 clip as BT.601 and ignores the display matrix."""
    import av

    with av.open(str(real_media_root / "rot90.mp4")) as container:
        plain = next(container.decode(video=0)).to_ndarray(format="rgb24")
    ours = read_frames(real_media_root / "rot90.mp4", [0])[0]
    assert plain.shape == (64, 96, 3) and ours.shape == (96, 64, 3)  # turned a quarter clockwise for display
    turned = np.rot90(plain, -1).astype(int)
    assert np.abs(turned - ours).max() > 20 and (turned != ours).mean() > 0.5  # the BT.601 matrix: tens of levels off
    assert (probe_video(real_media_root / "rot90.mp4").height, probe_video(real_media_root / "rot90.mp4").width) == (96, 64)


def test_images_keep_the_references_quirks(real_media_root) -> None:
    """fetch_image composites only RGBA on white; LA and a transparent palette lose their alpha, and EXIF
    orientation is not applied (the stored 90x60 pixels are what the model sees)."""
    from PIL import Image

    rgba, la = read_image(real_media_root / "rgba.png"), read_image(real_media_root / "la.png")
    assert np.asarray(rgba)[0, 0].tolist() == [255, 255, 255]  # alpha 0 at the first pixel: white
    with Image.open(real_media_root / "la.png") as raw:
        assert np.asarray(la)[0, 0].tolist() == [raw.getpixel((0, 0))[0]] * 3  # alpha dropped, not composited
    assert read_image(real_media_root / "exif_rotated.jpg").size == (90, 60)


def test_the_torch_resize_option_is_the_processors_own(real_media_root) -> None:
    """`ImageSpec.resize="torch"`: the HF image processor's resize of the converted image, bitwise."""
    proc = _processors("qwen2.5-vl").image_processor
    spec = ImageSpec(resize="torch")
    low, high = image_pixel_limits(spec, 28)
    ref = proc(images=[read_image(real_media_root / "rgba.png")], size={"shortest_edge": low, "longest_edge": high},
               return_tensors="pt")["pixel_values"]
    ours = Normaliser.of(proc).apply(prepare_image(real_media_root / "rgba.png", spec, Geometry.of(proc)).patches)
    assert torch.equal(ours, ref)


def test_the_cache_key_holds_every_pixel_setting(real_media_root, monkeypatch) -> None:
    """Entries made by an older pipeline (another `PIXELS_VERSION`) or other settings are misses; the
    prompt's clock is no pixel setting."""
    import evr1.data.loader as loader_module

    procs = _processors("qwen3-vl")
    video, image = MediaRef(kind="video", path="bt709.mp4"), MediaRef(kind="image", path="rgba.png")

    def key(ref: MediaRef, **specs) -> bytes:
        loader = MediaLoader(specs.get("video", VideoSpec()), specs.get("image", ImageSpec()), CacheSpec(), procs,
                             real_media_root)
        return loader.key(ref)

    assert key(image, image=ImageSpec(resize="torch")) != key(image)
    assert key(image, image=ImageSpec(max_pixels=16_384 * 32 * 32)) != key(image)  # the default, set: another key
    assert key(video, video=VideoSpec(decoder="torchcodec")) != key(video)
    assert key(video, video=VideoSpec(clock="clip")) == key(video)
    before = key(video), key(image)
    monkeypatch.setattr(loader_module, "PIXELS_VERSION", loader_module.PIXELS_VERSION - 1)
    assert key(video) != before[0] and key(image) != before[1]
