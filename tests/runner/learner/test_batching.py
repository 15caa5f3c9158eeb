"""Token-budget micro-batches, group-preserving mini-batches, and padded per-token rows."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.models.prompts import Prompt
from evr1.runner.learner.batching import (
    Sample,
    micro_batches,
    mini_batches,
    padded_cost,
    prefix_cost,
    prefix_micro_batches,
    share_prompts,
    stack_rows,
)


def sample(prompt: int, response: int, group: int = 0) -> Sample:
    return Sample(
        Prompt(torch.zeros(prompt, dtype=torch.long)),
        torch.zeros(response, dtype=torch.long),
        torch.zeros(response),
        group_id=group,
    )


@pytest.mark.parametrize(
    ("lengths", "budget", "expected"),
    [
        ([(10, 5)], 100, [[0]]),
        ([(10, 5), (10, 5), (10, 5)], 45, [[0, 1, 2]]),  # 3 x 15 = 45 fits exactly
        ([(10, 5), (10, 5), (10, 5)], 44, [[0, 1], [2]]),
        ([(10, 2), (30, 10), (12, 3)], 60, [[1], [2, 0]]),  # longest first; 2 x 15 = 30
        ([(50, 50)], 10, [[0]]),  # over the budget: alone
        ([(5, 1), (50, 50), (5, 2)], 20, [[1], [2, 0]]),
        ([(10, 1), (1, 10)], 40, [[0, 1]]),  # padded width 10 + 10 = 20 per row
        ([(10, 1), (1, 10)], 39, [[0], [1]]),
    ],
)
def test_micro_batch_table(lengths, budget, expected) -> None:
    assert micro_batches([sample(p, r) for p, r in lengths], budget) == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 30)), min_size=0, max_size=25),
    st.integers(1, 300),
)
def test_micro_batches_partition_within_budget(lengths, budget) -> None:
    samples = [sample(p, r) for p, r in lengths]
    batches = micro_batches(samples, budget)
    assert sorted(i for b in batches for i in b) == list(range(len(samples)))
    for batch in batches:
        assert batch and (len(batch) == 1 or padded_cost([samples[i] for i in batch]) <= budget)


def group(prompt: int, responses: Sequence[int], group_id: int, fill: int = 0) -> list[Sample]:
    """Rows of one group sharing one prompt of `prompt` tokens (the same object)."""
    shared = Prompt(torch.full((prompt,), fill, dtype=torch.long))
    return [Sample(shared, torch.zeros(r, dtype=torch.long), torch.zeros(r), group_id=group_id) for r in responses]


@pytest.mark.parametrize(
    ("groups", "budget", "expected"),
    [
        ([(100, (5, 5, 5))], 115, [[0, 1, 2]]),  # the prompt once: 100 + 3 x 5
        ([(100, (5, 5, 5))], 114, [[0, 1], [2]]),  # split by responses, the prompt in each part
        ([(100, (3, 9, 5, 7))], 118, [[1, 3], [2, 0]]),  # longest responses first: 100 + 2 x 9, 100 + 2 x 5
        ([(100, (50,)), (100, (1,))], 10, [[0], [1]]),  # over the budget: alone, never truncated
        ([(10, (2, 2)), (40, (4,)), (10, (3,))], 70, [[2], [0, 1, 3]]),  # longest prompt first; 2 x 10 + 3 x 3
        # a 10-token prompt is not padded to 40 (2 x 40 > 1.25 x 50), however large the budget
        ([(10, (2, 2)), (40, (4,)), (10, (3,))], 1000, [[2], [0, 1, 3]]),
        ([(40, (4,)), (36, (2, 2)), (16, (3,))], 1000, [[0, 1, 2], [3]]),  # 2 x 40 <= 1.25 x 76; 3 x 40 > 1.25 x 92
        ([(40, (4,)), (36, (2, 2))], 87, [[0], [1, 2]]),  # merged, 2 x 40 + 3 x 4 = 92 would exceed the budget
    ],
)
def test_prefix_micro_batch_table(groups, budget, expected) -> None:
    samples = [s for g, (p, rs) in enumerate(groups) for s in group(p, rs, g)]
    assert prefix_micro_batches(samples, budget) == expected


def test_prefix_cost_counts_each_distinct_prompt_once() -> None:
    rows = group(100, (5, 8, 2), 0) + group(40, (3,), 1)
    assert prefix_cost(rows) == 2 * 100 + 4 * 8
    assert padded_cost(rows) == 4 * (100 + 8)
    assert prefix_cost([]) == 0


def test_share_prompts_by_group_and_content() -> None:
    a, b = group(3, (1, 1), 0), group(3, (1,), 1)  # equal prompts, different groups: not shared
    twin = Sample(Prompt(torch.zeros(3, dtype=torch.long)), torch.zeros(1, dtype=torch.long), torch.zeros(1))
    other = group(3, (1,), 0, fill=7)[0]  # group 0, a different prompt: a fallback
    video = {"pixel_values_videos": torch.ones(4, 2), "video_grid_thw": torch.tensor([[1, 2, 2]])}
    with_media = Sample(Prompt(torch.zeros(3, dtype=torch.long), video), torch.zeros(1, dtype=torch.long),
                        torch.zeros(1))
    rows = [*a, *b, twin, other, with_media]
    distinct, owner, fallbacks = share_prompts([r.prompt for r in rows], [r.group_id for r in rows])
    assert owner == [0, 0, 1, 0, 2, 3]  # an equal copy shares; other tokens, or media, do not
    assert len(distinct) == 4 and distinct[0] is a[0].prompt and fallbacks == 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 60), st.lists(st.integers(0, 20), min_size=1, max_size=6)), max_size=8),
    st.integers(1, 300),
)
def test_prefix_micro_batches_partition_within_budget(groups, budget) -> None:
    samples = [s for g, (p, rs) in enumerate(groups) for s in group(p, rs, g)]
    batches = prefix_micro_batches(samples, budget)
    assert sorted(i for b in batches for i in b) == list(range(len(samples)))
    for batch in batches:
        assert batch and (len(batch) == 1 or prefix_cost([samples[i] for i in batch]) <= budget)


def test_mini_batches_follow_group_ids_on_any_shard() -> None:
    samples = [sample(3, 2, group=g) for g in (0, 0, 1, 1, 2, 2, 5)]
    assert mini_batches(samples, 1) == [list(range(7))]
    assert mini_batches(samples, 2) == [[0, 1, 4, 5], [2, 3, 6]]
    assert mini_batches(samples, 3) == [[0, 1], [2, 3], [4, 5, 6]]
    assert mini_batches(samples[4:], 3) == [[], [], [0, 1, 2]]  # a worker's shard: same groups, same parts
    with pytest.raises(ValueError):
        mini_batches(samples, 0)
    with pytest.raises(ValueError):
        micro_batches(samples, 0)
    with pytest.raises(ValueError):
        prefix_micro_batches(samples, 0)


def test_stack_rows_pads_and_marks_missing_rows_unknown() -> None:
    rows = stack_rows([torch.tensor([1.0, 2.0]), None, torch.tensor([3.0])], 3)
    assert rows[0].tolist() == [1.0, 2.0, 0.0] and rows[2].tolist() == [3.0, 0.0, 0.0]
    assert all(math.isnan(v) for v in rows[1].tolist())
    assert stack_rows([None, None], 4) is None
    assert padded_cost([]) == 0 and padded_cost([sample(10, 1), sample(1, 10)]) == 40
