"""`reference_errors`: a record's reference is flagged exactly when its routed reward cannot read it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.data.records import Record
from evr1.rewards.contract import RewardInput
from evr1.rewards.reference_check import reference_errors
from evr1.rewards.router import RewardRouter


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Slow first imports (ROUGE's) done before any sample: no sample here may overrun the 10 s reward timeout."""
    RewardRouter().warm_up()


def _record(ptype: str, answer: object, **extra: object) -> Record:
    return Record.model_validate({"id": "r", "problem": "?", "problem_type": ptype, "answer": answer, **extra})


CASES = [  # (problem_type, answer, extra fields, expected substring of the problem or None when readable)
    ("temporal_grounding", {"time": [2, 4]}, {}, None),
    ("temporal_grounding", "soon", {}, "'soon' holds no [start, end] interval"),
    ("temporal_grounding", {"time": [20, 30]}, {"meta": {"duration": 10}}, "does not overlap the clip [0, 10] s"),
    ("spatial_grounding", {"boxes": [1, 2, 30, 40]}, {}, None),
    ("spatial_grounding", [1, 2, 3], {}, "[1, 2, 3] holds no [x1, y1, x2, y2] box"),
    ("multiple_choice", "B", {"options": ["cat", "dog"]}, None),
    ("multiple_choice", "E", {"options": ["cat", "dog"]}, "'E' is not one of 2 option letters"),
    ("multiple_choice", "C", {}, None),  # no options: letters A-Z are read (the prompt shows none)
    ("numerical", "3.5", {}, None),
    ("numerical", "lots", {}, "'lots' is not one number"),
    ("regression", "many", {}, "regression answer 'many' is not one number"),
    ("boolean", "yes", {}, None),
    ("boolean", "perhaps", {}, "'perhaps' is neither yes nor no"),
    ("preference", "A", {}, None),
    ("preference", "maybe", {}, "'maybe' is not a label"),
    ("code", {"language": "python", "tests": ["assert f() == 1"]}, {}, None),  # shape only: nothing runs
    ("code", {"language": "python"}, {}, "neither 'tests' nor 'cases'"),
    ("code", {"language": "rust", "tests": ["x"]}, {}, "'rust' is not supported"),
    ("math", "\\frac{1}{2}", {}, None),
    ("ocr", "STOP", {}, None),
    ("open_ended", "a red ball", {}, None),
    ("open_ended", None, {}, "empty reference answer (record 'r')"),
    ("math", "  ", {}, "empty reference answer"),
]


def test_each_reference_is_checked_by_its_reward() -> None:
    records = [_record(ptype, answer, **extra) for ptype, answer, extra, _ in CASES]
    errors = reference_errors(records)
    for (ptype, answer, _, expected), error in zip(CASES, errors):
        if expected is None:
            assert error is None, (ptype, answer, error)
        else:
            assert error is not None and expected in error and "(record 'r')" in error, (ptype, answer, error)


def test_the_message_names_the_reward() -> None:
    [error] = reference_errors([_record("numerical", "lots")])
    assert error is not None and error.startswith("reward 'numerical' cannot read this reference: ValueError:")


ANSWERS = st.one_of(
    st.text(max_size=12), st.integers(-5, 50), st.lists(st.integers(0, 40), max_size=5),
    st.fixed_dictionaries({"time": st.lists(st.integers(0, 40), max_size=3)}),
    st.fixed_dictionaries({"boxes": st.lists(st.integers(0, 40), max_size=5)}),
)  # fmt: skip
TYPES = st.sampled_from(["multiple_choice", "numerical", "regression", "temporal_grounding", "spatial_grounding",
                         "boolean", "preference", "open_ended", "ocr", "tracking", "spatial_temporal_grounding"])  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(TYPES, ANSWERS, st.one_of(st.none(), st.lists(st.text("abc", min_size=1, max_size=3), min_size=2, max_size=4)))
def test_flags_exactly_what_training_would_fail_on(ptype: str, answer: object, options: list[str] | None) -> None:
    record = _record(ptype, answer, options=options)
    [error] = reference_errors([record])
    if answer == "" or (isinstance(answer, str) and not answer.strip()):
        assert error is not None and "empty reference" in error
        return
    [scored] = RewardRouter().score([RewardInput.from_record(record, "<answer>B</answer>")])
    assert (error is None) == (scored.error is None), (error, scored.error)


def test_no_records_no_work() -> None:
    assert reference_errors([]) == []


@pytest.mark.parametrize("answer", ["E", "F"])
def test_letters_past_the_options(answer: str) -> None:
    [error] = reference_errors([_record("mcq", answer, options=["x", "y", "z", "w"])])
    assert error is not None and "is not one of 4 option letters" in error
