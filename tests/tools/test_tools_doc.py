"""The plugin example of docs/tools.md registers and answers a call the way a rollout makes it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evr1.data.loader import MediaLoader, family_processors
from evr1.data.records import MediaRef, Record
from evr1.data.testclips import write_clip
from evr1.registry import TOOLS
from evr1.specs import CacheSpec, ImageSpec, ToolsSpec, VideoSpec
from evr1.tools.calls import run_calls
from evr1.tools.media import ToolMedia

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"
NAME = "tools_doc_test/duration"


@pytest.fixture
def registered():
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    exec(compile(block.replace('"me/duration"', f'"{NAME}"'), str(DOC), "exec"), {"__name__": "tools_doc"})  # noqa: S102
    yield TOOLS[NAME]
    TOOLS.unregister(NAME)


def test_the_example_answers_a_call(registered, tmp_path) -> None:
    write_clip(tmp_path / "clip.mp4", 96, 64, 10, 30)  # 3 s
    record = Record(id="r", problem="q", problem_type="multiple_choice", answer="A",
                    media=[MediaRef(kind="video", path="clip.mp4", start=1.0)])
    video, image, cache = VideoSpec(min_pixels=4 * 28 * 28), ImageSpec(), CacheSpec(mode="bypass")
    procs = family_processors("qwen2.5-vl")
    shown = MediaLoader(video, image, cache, procs, tmp_path).load(record)
    context = ToolMedia.build(ToolsSpec(), video, image, cache, procs, tmp_path).context(record, shown)
    text = f'<tool_call>{{"name": "{NAME}", "arguments": {{}}}}</tool_call>'
    (reply,) = run_calls(text, {NAME: registered}, context)
    # the clip starts at frame 10 and holds frames 10..29: 2 s on the clip clock of a Qwen2.5-VL prompt
    assert reply.error is None and reply.text == "The video runs from 0 s to 2 s."
