"""Prompt samplers: reproducible, resumable, exact modality proportions."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evr1.errors import ConfigError
from evr1.registry import SAMPLERS

MODS = ["video"] * 6 + ["image"] * 3 + ["text"] * 1


@pytest.mark.parametrize("name", ["uniform", "modality"])
def test_same_seed_same_batches_and_other_seed_differs(name: str) -> None:
    a, b, c = (SAMPLERS.get(name)(MODS, seed=s) for s in (0, 0, 1))
    first = [a.sample(4) for _ in range(5)]
    assert first == [b.sample(4) for _ in range(5)]
    assert first != [c.sample(4) for _ in range(5)]


@pytest.mark.parametrize("name", ["uniform", "modality"])
def test_resume_continues_exactly(name: str) -> None:
    full = SAMPLERS.get(name)(MODS, seed=3)
    expected = [full.sample(3) for _ in range(9)]
    part = SAMPLERS.get(name)(MODS, seed=3)
    head = [part.sample(3) for _ in range(4)]
    resumed = SAMPLERS.get(name)(MODS, seed=3)
    resumed.load_state_dict(part.state_dict())
    assert head + [resumed.sample(3) for _ in range(5)] == expected


def test_uniform_epochs_cover_every_record_once() -> None:
    s = SAMPLERS.get("uniform")(MODS, seed=0)
    drawn = s.sample(10) + s.sample(10)
    assert sorted(drawn[:10]) == list(range(10)) and sorted(drawn[10:]) == list(range(10))


@pytest.mark.parametrize(
    ("ratios", "batch", "steps", "expected"),
    [
        # 3:1 video:image with batches of 2 -> per batch 1.5 videos: 2,1,2,1,...
        ({"video": 0.75, "image": 0.25}, 2, 4, {"video": 6, "image": 2}),
        ({"video": 1, "image": 1}, 4, 3, {"video": 6, "image": 6}),
        ({"image": 1.0}, 3, 2, {"image": 6}),
        (None, 10, 2, {"video": 12, "image": 6, "text": 2}),  # natural proportions 6:3:1
    ],
)
def test_modality_counts_are_exact(ratios, batch: int, steps: int, expected: dict[str, int]) -> None:
    s = SAMPLERS.get("modality")(MODS, seed=0, ratios=ratios)
    drawn = [i for _ in range(steps) for i in s.sample(batch)]
    assert Counter(MODS[i] for i in drawn) == expected


@settings(max_examples=300, deadline=None)
@example({"video": 4.0, "image": 0.25, "text": 0.25}, 3, 3)  # once drew 4 records for a batch of 3
@given(
    st.dictionaries(st.sampled_from(["video", "image", "text"]), st.floats(0.05, 5), min_size=1),
    st.integers(1, 9),
    st.integers(1, 12),
)
def test_modality_shares_never_drift_more_than_one(ratios, batch: int, steps: int) -> None:
    s = SAMPLERS.get("modality")(MODS, seed=0, ratios=ratios)
    total = sum(ratios.values())
    counts: Counter[str] = Counter()
    for step in range(1, steps + 1):
        batch_ids = s.sample(batch)
        assert len(batch_ids) == batch
        counts.update(MODS[i] for i in batch_ids)
        for m, r in ratios.items():
            assert abs(counts[m] - step * batch * r / total) <= 1.0 + 1e-9


def test_records_with_both_media_count_as_video() -> None:
    s = SAMPLERS.get("modality")(["video+image", "image"], seed=0, ratios={"video": 1.0})
    assert set(s.sample(5)) == {0}


@pytest.mark.parametrize(
    ("name", "mods", "ratios", "message"),
    [
        ("modality", ["video"], {"image": 1.0}, "asks for image but the data has no such records"),
        ("modality", ["video"], {"video": 0.0}, "must have a positive sum"),
        ("modality", ["audio"], None, "unknown modalities ['audio']"),
        ("uniform", ["video"], {"video": 1.0}, "takes no modality ratios"),
        ("uniform", [], None, "empty dataset"),
    ],
)
def test_errors(name: str, mods, ratios, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        SAMPLERS.get(name)(mods, seed=0, ratios=ratios)
    assert message in str(info.value)
