"""Boxes read exactly in the units the model answers in: model units -> fractions of the shown image ->
the reference's frame (normalised, or pixels of the original). Hand-computed sizes and IoUs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from reward_helpers import make

from evr1.data.records import Record
from evr1.rewards import RewardInput, spatial_grounding, spatio_temporal
from evr1.rewards.contract import Shown, model_box_units
from evr1.specs import RewardSpec

# An original 1000x500 image shown to the model at 200x100; the box is x 25-75 %, y 25-75 % of it.
SHOWN, SOURCE = (200, 100), (1000, 500)
NORMALISED, ORIGINAL = [0.25, 0.25, 0.75, 0.75], [250, 125, 750, 375]

EXACT = [
    # (model units, spec units, answer, reference, meta, expected IoU)
    ("pixels", "auto", [50, 25, 150, 75], NORMALISED, {}, 1.0),  # 50/200, 25/100, ...
    ("pixels", "auto", [50, 25, 150, 75], ORIGINAL, {}, 1.0),  # x 5, the source size
    ("pixels", "auto", [50, 25, 100, 75], NORMALISED, {}, 0.5),  # x 25-50 %: half the reference
    ("relative_1000", "auto", [250, 250, 750, 750], NORMALISED, {}, 1.0),
    ("relative_1000", "auto", [250, 250, 750, 750], ORIGINAL, {}, 1.0),
    ("relative_1000", "model", [250, 250, 750, 750], ORIGINAL, {}, 1.0),
    # the reference's own size (meta) wins over the source size: a 2000x1000 annotation frame
    ("relative_1000", "auto", [250, 250, 750, 750], [500, 250, 1500, 750], {"width": 2000, "height": 1000}, 1.0),
    ("relative_1000", "auto", [250, 250, 750, 750], [500, 250, 1500, 750], {"image_size": [2000, 1000]}, 1.0),
    # the spec's units (what a dataset's prompt asked for) win over the model's
    ("pixels", "normalized", NORMALISED, ORIGINAL, {}, 1.0),
    ("relative_1000", "pixels", [50, 25, 150, 75], ORIGINAL, {}, 1.0),
    (None, "relative_1000", [250, 250, 750, 750], ORIGINAL, {}, 1.0),
    (None, "pixels", [50, 25, 150, 75], NORMALISED, {}, 1.0),
    ("pixels", "source_pixels", ORIGINAL, NORMALISED, {}, 1.0),  # a prompt asking for the original image's pixels
    ("relative_1000", "source_pixels", ORIGINAL, ORIGINAL, {}, 1.0),
    # "auto": an answer all <= 1 is fractions (a prompt asked for them), whatever the model's convention ...
    ("pixels", "auto", NORMALISED, NORMALISED, {}, 1.0),
    ("relative_1000", "auto", NORMALISED, ORIGINAL, {}, 1.0),
    # ... but units the spec names are taken as given: 0.25 px of a 200 px image is no box near the reference
    ("pixels", "pixels", NORMALISED, NORMALISED, {}, 0.0),
]


def _input(response: str, reference: object, units: str | None, meta: dict | None = None, **kwargs: object) -> RewardInput:
    return make(f"<answer>{response}</answer>", reference, "spatial_grounding", meta=meta or {}, shown_size=SHOWN,
                source_size=SOURCE, box_units=units, sample_id="img-3#0", **kwargs)


@pytest.mark.parametrize(("units", "spec_units", "answer", "reference", "meta", "expected"), EXACT)
def test_exact_conversion_table(units, spec_units, answer, reference, meta, expected) -> None:
    inp = _input(json.dumps(answer), reference, units, meta)
    assert spatial_grounding.score(inp, RewardSpec(box_units=spec_units)) == pytest.approx(expected)


def test_the_families_answer_conventions() -> None:
    families = ("qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5")
    assert [model_box_units(f) for f in families] == ["relative_1000", "pixels", "relative_1000", "relative_1000"]
    with pytest.raises(ValueError, match="'llava'"):
        model_box_units("llava")


def test_bare_inputs_keep_the_magnitude_guess(spec: RewardSpec) -> None:
    """Without units the old guess stands: a pixel reference and a 0-1000 answer are taken as the same frame."""
    bare = make("<answer>[250, 125, 750, 375]</answer>", ORIGINAL, "spatial_grounding")
    assert spatial_grounding.score(bare, spec) == 1.0
    # the same numbers said to be Qwen3-VL's 0-1000 grid are x 25-75 %, y 12.5-37.5 % of the image:
    # [250, 62.5, 750, 187.5] in source pixels; IoU with [250, 125, 750, 375] = 500*62.5 / (500*250 + 500*125 - 500*62.5)
    exact = _input("[250, 125, 750, 375]", ORIGINAL, "relative_1000")
    assert spatial_grounding.score(exact, spec) == pytest.approx(62.5 / 312.5)
    # a bare normalised reference and a pixel answer with a meta size: divided by it (as before)
    guessed = make("<answer>[250, 125, 750, 375]</answer>", NORMALISED, "spatial_grounding", meta={"width": 1000, "height": 500})
    assert spatial_grounding.score(guessed, spec) == 1.0


def test_what_cannot_be_known_is_an_error_naming_the_record() -> None:
    bare = make("<answer>[1, 2, 3, 4]</answer>", ORIGINAL, "spatial_grounding", sample_id="img-9#1")
    with pytest.raises(ValueError, match=r"'img-9#1'.*box_units='model'.*RewardInput.box_units"):
        spatial_grounding.score(bare, RewardSpec(box_units="model"))
    normalised = make("<answer>[1, 2, 3, 4]</answer>", NORMALISED, "spatial_grounding", sample_id="img-9#1")
    with pytest.raises(ValueError, match=r"'img-9#1'.*pixels of the shown image.*shown_size"):
        spatial_grounding.score(normalised, RewardSpec(box_units="pixels"))
    no_source = make("<answer>[1, 2, 3, 4]</answer>", ORIGINAL, "spatial_grounding", sample_id="img-9#2", box_units="relative_1000")
    with pytest.raises(ValueError, match=r"'img-9#2'.*pixels of the original image, whose size is unknown"):
        spatial_grounding.score(no_source, RewardSpec())
    unanswered = make("<answer>no box</answer>", ORIGINAL, "spatial_grounding", sample_id="img-9#3", box_units="relative_1000")
    assert spatial_grounding.score(unanswered, RewardSpec()) == 0.0  # nothing to convert: no size needed


def test_units_are_validated() -> None:
    with pytest.raises(ValidationError, match="box_units"):
        RewardSpec(box_units="inches")
    with pytest.raises(ValueError, match="box_units must be one of pixels, relative_1000, normalized, source_pixels"):
        make("x", ORIGINAL, "spatial_grounding", box_units="inches")


def test_from_record_takes_what_was_shown() -> None:
    record = Record(id="img-3", problem="Where?", problem_type="spatial_grounding", answer=ORIGINAL)
    shown = Shown(SHOWN, SOURCE, box_units="pixels")
    inp = RewardInput.from_record(record, "<answer>[50, 25, 150, 75]</answer>", shown=shown)
    assert (inp.shown_size, inp.source_size, inp.box_units, inp.frame_timestamps) == (SHOWN, SOURCE, "pixels", None)
    assert spatial_grounding.score(inp, RewardSpec()) == 1.0
    bare = RewardInput.from_record(record, "<answer>[50, 25, 150, 75]</answer>")
    assert (bare.shown_size, bare.source_size, bare.box_units) == (None, None, None)


def test_tracking_reads_pixel_boxes_by_frame_on_the_clip_clock(spec: RewardSpec) -> None:
    """Frames 0 and 1 of what was shown are at 0 s and 0.5 s of the clip; the reference is normalised."""
    reference = {"boxes": {"0": [0.25, 0.25, 0.75, 0.75], "0.5": [0, 0, 0.5, 0.5]}}
    answer = [{"frame": 0, "bbox_2d": [50, 25, 150, 75]}, {"frame": 1, "bbox_2d": [0, 0, 100, 50]}]
    inp = make(f"<answer>{json.dumps(answer)}</answer>", reference, "tracking", shown_size=SHOWN, source_size=SOURCE,
               box_units="pixels", frame_timestamps=(0.0, 0.5), fps=2.0)
    assert spatio_temporal.score_tracking(inp, spec) == 1.0
    guessed = make(f"<answer>{json.dumps(answer)}</answer>", reference, "tracking", frame_timestamps=(0.0, 0.5), fps=2.0)
    # no units: read as 0-1000: [0.05, 0.025, 0.15, 0.075] vs the first box (no overlap) and [0, 0, 0.1, 0.05] vs
    # [0, 0, 0.5, 0.5]: 0.005 / 0.25 = 0.02; mean 0.01
    assert spatio_temporal.score_tracking(guessed, spec) == pytest.approx(0.01)


def test_spatial_temporal_grounding_converts_like_spatial(spec: RewardSpec) -> None:
    reference = {"time": [0, 1], "boxes": {"0": ORIGINAL, "1": ORIGINAL}}
    answer = {"time": [0, 1], "boxes": {"0": [250, 250, 750, 750], "1": [250, 250, 750, 750]}}
    inp = make(f"<answer>{json.dumps(answer)}</answer>", reference, "stvg", shown_size=SHOWN, source_size=SOURCE,
               box_units="relative_1000", fps=1.0, duration=2.0)
    out = spatio_temporal.score_spatial_temporal(inp, spec)
    assert (out.components["tiou"], out.components["viou"], out.score) == (1.0, 1.0, 1.0)


def _in_units(box: list[float], units: str, shown: tuple[int, int]) -> list[float]:
    sx, sy = {"normalized": (1, 1), "relative_1000": (1000, 1000), "pixels": shown}[units]
    return [box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy]


side = st.integers(28, 4000)
fraction = st.floats(0.0, 0.45, allow_nan=False)
width = st.floats(0.1, 0.55, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(shown=st.tuples(side, side), source=st.tuples(side, side), x=fraction, y=fraction, w=width, h=width,
       units=st.sampled_from(["pixels", "relative_1000", "normalized"]), pixel_reference=st.booleans())
def test_any_answer_in_its_own_units_matches_the_same_box(shown, source, x, y, w, h, units, pixel_reference) -> None:
    box = [x, y, x + w, y + h]  # fractions of the image
    reference = [box[0] * source[0], box[1] * source[1], box[2] * source[0], box[3] * source[1]] if pixel_reference else box
    inp = make(f"<answer>{json.dumps(_in_units(box, units, shown))}</answer>", reference, "spatial_grounding",
               shown_size=shown, source_size=source, box_units=units)
    assert spatial_grounding.score(inp, RewardSpec()) == pytest.approx(1.0, abs=1e-9)
