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


def test_a_prompt_over_max_tokens_is_a_failure_of_its_record(processor, tmp_path: Path) -> None:
    loader = MediaLoader(VideoSpec(), ImageSpec(), CacheSpec(), processor, tmp_path)
    unlimited = RecordPrompter(processor, loader, PromptSpec())
    short = Record(id="s", problem="Is it?", problem_type="boolean", answer=True)
    long = Record(id="l", problem="word " * 200, problem_type="boolean", answer=True)
    length = len(unlimited(long))
    assert length > 200  # every "word " is at least one token
    limit = len(unlimited(short))  # the short prompt fits exactly
    prompter = RecordPrompter(processor, loader, PromptSpec(), max_tokens=limit)
    assert not isinstance(prompter.attempt(short), MediaFailure)
    failure = MediaFailure("l", "", "prompt", "prompt_too_long", f"the prompt has {length} tokens, over rollout.max_prompt_tokens={limit}")
    assert prompter.attempt(long) == failure
    with pytest.raises(MediaLoadError, match=rf"^record 'l': the prompt has {length} tokens, over rollout.max_prompt_tokens={limit}$"):
        prompter(long)
