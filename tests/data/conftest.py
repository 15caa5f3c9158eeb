"""Media fixtures: generated clips of several sizes, rates, lengths and codecs, images, and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from media_cases import BAD, BAD_IMAGES, CLIPS, IMAGES, REAL_CLIPS

from evr1.data.testclips import clip_frame, set_rotation, write_clip


def _write_bad_files(root: Path) -> None:
    import av

    (root / "empty.mp4").write_bytes(b"")
    (root / "corrupt.mp4").write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    good = (root / "small.mp4").read_bytes()
    (root / "truncated.mp4").write_bytes(good[: len(good) // 2])  # the index (moov) is at the end: cut off
    (root / "bad_codec.mp4").write_bytes(good.replace(b"avc1", b"zzzz"))  # a codec tag no decoder knows
    write_clip(root / "one_frame.mp4", 64, 48, 10, 1)
    with av.open(str(root / "audio_only.mp4"), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate = 16000
        for packet in [*stream.encode(frame), *stream.encode()]:
            out.mux(packet)
    (root / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 50)


@pytest.fixture(scope="session")
def media_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with every clip, image and bad file above."""
    from PIL import Image

    root = tmp_path_factory.mktemp("media")
    for seed, (name, (w, h, fps, frames, codec)) in enumerate(CLIPS.items()):
        write_clip(root / name, w, h, fps, frames, codec=codec, seed=seed)
    for seed, (name, (w, h, mode)) in enumerate(IMAGES.items()):
        image = Image.fromarray(clip_frame(seed * 3, w, h, seed))
        if mode == "RGBA":
            alpha = Image.fromarray(np.linspace(0, 255, w * h).reshape(h, w).astype(np.uint8))
            image = image.convert("RGBA")
            image.putalpha(alpha)
        image.save(root / name)
    _write_bad_files(root)
    return root


def _write_real_images(root: Path) -> None:
    from PIL import Image

    rgb = Image.fromarray(clip_frame(5, 90, 60, 3))
    ramp = Image.fromarray(np.linspace(0, 255, 90 * 60).reshape(60, 90).astype(np.uint8))
    rgba = rgb.convert("RGBA")
    rgba.putalpha(ramp)
    rgba.save(root / "rgba.png")
    la = rgb.convert("L").convert("LA")
    la.putalpha(ramp)
    la.save(root / "la.png")
    palette = rgb.quantize(16)
    palette.info["transparency"] = 3
    palette.save(root / "palette.png", transparency=3)
    rgb.convert("CMYK").save(root / "cmyk.jpg")
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: turn 90 degrees clockwise to display
    rgb.save(root / "exif_rotated.jpg", exif=exif)
    Image.fromarray((np.asarray(ramp, np.uint16) * 257).astype(np.uint16)).save(root / "deep.png")  # 16-bit grey
    Image.fromarray(clip_frame(1, 10, 600)).save(root / "thin.png")
    Image.fromarray(clip_frame(2, 1200, 9)).save(root / "flat.png")


@pytest.fixture(scope="session")
def real_media_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with every clip of `REAL_CLIPS` and image of `REAL_IMAGES`."""
    root = tmp_path_factory.mktemp("real_media")
    for seed, (name, (w, h, options, rotation)) in enumerate(REAL_CLIPS.items()):
        write_clip(root / name, w, h, 10, 8, seed=seed, **options)
        if rotation:
            set_rotation(root / name, rotation)
    _write_real_images(root)
    return root


def _record(rid: str, *media: dict) -> dict:
    return {"id": rid, "problem": "What happens?", "problem_type": "multiple_choice", "answer": "A",
            "options": ["A. x", "B. y"], "media": list(media)}


def _video(path: str, start: float | None = None, end: float | None = None) -> dict:
    return {"kind": "video", "path": path, **({"start": start} if start is not None else {}), **({"end": end} if end is not None else {})}


def _image(path: str) -> dict:
    return {"kind": "image", "path": path}


@pytest.fixture(scope="session")
def good_rows() -> list[dict]:
    """Records over every good clip and image (one clip twice: shared entries are built once)."""
    rows = [_record(f"v-{name}", _video(name)) for name in CLIPS]
    rows += [_record(f"i-{name}", _image(name)) for name in IMAGES]
    rows.append(_record("clip", _video("long.mp4", 1.0, 4.5), _image("photo.png")))
    rows.append(_record("again", _video("small.mp4")))
    rows.append(_record("text-only"))
    return rows


@pytest.fixture(scope="session")
def bad_rows() -> list[dict]:
    """One record per bad file; its id is `bad-<file>`."""
    return [_record(f"bad-{n}", _video(n)) for n in BAD] + [_record(f"bad-{n}", _image(n)) for n in BAD_IMAGES]


@pytest.fixture(scope="session")
def write_jsonl():
    def write(path: Path, rows: list[dict]) -> Path:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    return write


@pytest.fixture
def reference_reader(monkeypatch: pytest.MonkeyPatch):
    """qwen-vl-utils' `vision_process` with its torchcodec reader (the one it prefers when installed)."""
    from qwen_vl_utils import vision_process

    monkeypatch.setattr(vision_process, "get_video_reader_backend", lambda: "torchcodec")
    return vision_process
