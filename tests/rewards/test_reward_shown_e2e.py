"""End to end: a real image resized by a tiny model's processor, the prompter's record of what was shown,
and the spatial reward reading the family's answer convention exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evr1.data.loader import MediaLoader
from evr1.data.prompting import RecordPrompter
from evr1.data.records import Record
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.rewards import spatial_grounding
from evr1.runner.loop.reward_phase import reward_input
from evr1.specs import CacheSpec, ImageSpec, PromptSpec, RewardSpec, VideoSpec

# A 300x200 image within [8, 64] x 28² px is shown at 252x168 (multiples of 28: Qwen2.5-VL) or 256x160
# (multiples of 32: Qwen3-VL). The box x 25-75 %, y 25-75 % of it, as each family answers it:
ANSWERS = {
    "qwen2.5-vl": ((252, 168), "[63, 42, 189, 126]"),  # pixels of the resized image
    "qwen3-vl": ((256, 160), "[250, 250, 750, 750]"),  # the 0-1000 grid
}
REFERENCES = [
    ([0.25, 0.25, 0.75, 0.75], {}),  # normalised
    ([75, 50, 225, 150], {}),  # pixels of the original (its size from the file)
    ([75, 50, 225, 150], {"width": 300, "height": 200}),  # ... and from the record
]


@pytest.mark.parametrize("fam", list(ANSWERS))
@pytest.mark.parametrize(("reference", "meta"), REFERENCES)
def test_a_family_answer_on_a_resized_image_scores_one(fam, reference, meta, model_cache, tmp_path: Path) -> None:
    Image.fromarray(np.zeros((200, 300, 3), np.uint8)).save(tmp_path / "i.png")
    processor = load_processor(tiny_spec(fam, model_cache))
    image = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)
    prompter = RecordPrompter(processor, MediaLoader(VideoSpec(), image, CacheSpec(), processor, tmp_path), PromptSpec())
    record = Record(id="img-1", problem="Where is it?", problem_type="spatial_grounding", answer=reference, meta=meta,
                    media=[{"kind": "image", "path": "i.png"}])
    prompter(record)
    size, answer = ANSWERS[fam]
    inp = reward_input(record, f"<answer>{answer}</answer>", "img-1#0", prompter.shown)
    assert inp.shown_size == size and inp.source_size == (300, 200)
    assert spatial_grounding.score(inp, RewardSpec()) == pytest.approx(1.0)
