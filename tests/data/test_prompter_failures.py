"""A record whose media cannot be loaded: `RecordPrompter` names the record and the file, or returns the failure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evr1.data.loader import MediaLoader
from evr1.data.prompting import MediaFailure, MediaLoadError, RecordPrompter
from evr1.data.records import Record
from evr1.specs import CacheSpec, ImageSpec, PromptSpec, VideoSpec


def test_unloadable_media_name_the_record_and_file(processor, tmp_path: Path) -> None:
    Image.fromarray(np.zeros((56, 56, 3), np.uint8)).save(tmp_path / "ok.png")
    (tmp_path / "bad.mp4").write_bytes(b"not a video")
    image = ImageSpec(min_pixels=28 * 28, max_pixels=56 * 56)
    prompter = RecordPrompter(processor, MediaLoader(VideoSpec(), image, CacheSpec(), processor, tmp_path), PromptSpec())
    bad = Record(id="b", problem="?", problem_type="numerical", answer=1,
                 media=[{"kind": "image", "path": "ok.png"}, {"kind": "video", "path": "bad.mp4"}])
    gone = Record(id="g", problem="?", problem_type="numerical", answer=1, media=[{"kind": "image", "path": "gone.png"}])
    with pytest.raises(MediaLoadError, match=r"record 'b': video 'bad.mp4' cannot be loaded: cannot open as a video"):
        prompter(bad)
    assert prompter.attempt(gone) == MediaFailure("g", "gone.png", "image", "missing", "file not found")
    ok = Record(id="o", problem="?", problem_type="numerical", answer=1, media=[{"kind": "image", "path": "ok.png"}])
    assert not isinstance(prompter.attempt(ok), MediaFailure)
    assert prompter.forget()["media/loaded"] == 1  # only 'o': a record that failed counts none of its media
