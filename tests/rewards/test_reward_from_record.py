"""`RewardInput.from_record` takes a `Record` or a JSON dict (as docs/rewards.md shows)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evr1.data.records import Record
from evr1.problem_types import ProblemType
from evr1.rewards import RewardInput, RewardRouter

RAW = {"id": "q1", "problem": "Which?", "problem_type": "mcq", "answer": "B", "options": ["cat", "dog"],
       "media": [{"kind": "video", "path": "a.mp4", "start": 2, "end": 7}]}  # fmt: skip


def test_a_dict_gives_the_same_input_as_its_record() -> None:
    from_dict = RewardInput.from_record(RAW, "<answer>B</answer>", sample_id="q1#0")
    assert from_dict == RewardInput.from_record(Record.model_validate(RAW), "<answer>B</answer>", sample_id="q1#0")
    assert (from_dict.problem_type, from_dict.options, from_dict.duration, from_dict.group_id) == (
        ProblemType.MULTIPLE_CHOICE, ("cat", "dog"), 5.0, "q1")
    assert RewardRouter().score([from_dict])[0].components["accuracy"] == 1.0


def test_a_bad_dict_names_the_field() -> None:
    with pytest.raises(ValidationError, match="answer\n  Field required"):
        RewardInput.from_record({k: v for k, v in RAW.items() if k != "answer"}, "B")
