"""Evaluation scores answers against what the model was shown: clip-clock frame times and the boxes
of the model's own units (Qwen2.5-VL: pixels of its resized frames)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from evr1.data.loader import MediaLoader
from evr1.data.records import Record
from evr1.data.testclips import write_clip
from evr1.eval.responders import EngineResponder, Prepared
from evr1.eval.samples import RunOptions, run_samples, score_responses
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.registry import BENCHMARKS
from evr1.rewards import RewardRouter
from evr1.specs import CacheSpec, ImageSpec, RewardSpec, VideoSpec

# A 6 s, 4 fps, 64x48 video clipped to [2, 5] s: frames 8..20, four taken (8, 12, 16, 20) at 0, 1, 2, 3 s of the
# clip, shown at 56x56 (multiples of 28 within 56² px). The person is at x 25-75 %, y 25-75 % throughout:
# [16, 12, 48, 36] in the file's pixels, [14, 14, 42, 42] in the shown frames.
VIDEO = VideoSpec(fps=None, nframes=4, min_pixels=28 * 28, max_pixels=56 * 56)
RECORD = Record(id="st-clip", problem="When and where is the person?", problem_type="spatial_temporal_grounding",
                answer={"time": [0, 3], "boxes": {"0": [16, 12, 48, 36], "1": [16, 12, 48, 36]}},
                media=[{"kind": "video", "path": "v.mp4", "start": 2.0, "end": 5.0}])
BY_FRAME = {"time": [0, 3], "boxes": [{"frame": 0, "bbox_2d": [14, 14, 42, 42]}, {"frame": 1, "bbox_2d": [14, 14, 42, 42]}]}
ANSWER = f"<answer>{json.dumps(BY_FRAME)}</answer>"


class PromptedScript:
    """Prompts (and what they show) as the engine responder builds them; answers from a table."""

    def __init__(self, prompts: EngineResponder, responses: Mapping[str, str]) -> None:
        self.prompts, self.responses = prompts, responses

    def prepare(self, record: Record) -> Prepared:
        return self.prompts.prepare(record)

    def respond(self, batch: Sequence[Prepared]) -> list[str]:
        return [self.responses[p.record.id] for p in batch]

    def describe(self) -> dict[str, Any]:
        return {"responder": "prompted-script"}


@pytest.fixture
def prompts(model_cache, tmp_path: Path) -> EngineResponder:
    write_clip(tmp_path / "v.mp4", 64, 48, 4, 24)
    processor = load_processor(tiny_spec("qwen2.5-vl", model_cache))
    loader = MediaLoader(VIDEO, ImageSpec(), CacheSpec(), processor, tmp_path)
    return EngineResponder(None, processor, loader, None)  # prepare() never reaches the engine


def test_prepared_samples_carry_what_was_shown(prompts: EngineResponder) -> None:
    shown = prompts.prepare(RECORD).shown
    assert shown.frame_timestamps == (0.0, 1.0, 2.0, 3.0) and shown.fps == pytest.approx(4 / 13 * 4)
    assert (shown.size, shown.source_size, shown.box_units) == ((56, 56), (64, 48), "pixels")


def test_answers_are_scored_on_the_clip_clock_in_the_models_units(prompts: EngineResponder, tmp_path: Path) -> None:
    router = RewardRouter(RewardSpec(format="none"))
    rows = run_samples(BENCHMARKS.get("stvg"), [RECORD], PromptedScript(prompts, {RECORD.id: ANSWER}), tmp_path / "s.jsonl",
                       "sid", router, RunOptions(batch_size=1, media_workers=1, prefetch=1))
    assert rows[RECORD.id]["error"] is None
    assert rows[RECORD.id]["components"] == {"accuracy": 1.0, "tiou": 1.0, "viou": 1.0}
    # without what was shown, frame indices have no times: no box of the answer is placed, vIoU 0
    [(accuracy, components, _)] = score_responses([RECORD], [ANSWER], router)
    assert components["viou"] == 0.0 and accuracy == 0.5
