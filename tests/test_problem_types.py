"""Problem-type aliases resolve in one place; unknown types name the allowed ones."""

from __future__ import annotations

import pytest

from evr1.problem_types import ProblemType, UnknownProblemTypeError


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("multiple choice", ProblemType.MULTIPLE_CHOICE),
        ("Multiple-Choice", ProblemType.MULTIPLE_CHOICE),
        ("numerical", ProblemType.NUMERICAL),
        ("OCR", ProblemType.OCR),
        ("free-form", ProblemType.OPEN_ENDED),
        ("spatial-temporal grounding", ProblemType.SPATIAL_TEMPORAL_GROUNDING),
        ("  temporal_grounding ", ProblemType.TEMPORAL_GROUNDING),
        ("yes/no", ProblemType.BOOLEAN),
        ("mathematics", ProblemType.MATH),
        (ProblemType.CODE, ProblemType.CODE),
    ],
)
def test_aliases(given: str, expected: ProblemType) -> None:
    assert ProblemType.parse(given) is expected


def test_every_canonical_value_parses_to_itself() -> None:
    assert all(ProblemType.parse(t.value) is t for t in ProblemType)


def test_unknown_type_message() -> None:
    with pytest.raises(UnknownProblemTypeError) as info:
        ProblemType.parse("multiple_chioce")
    message = str(info.value)
    assert message.startswith("unknown problem_type 'multiple_chioce'. Did you mean 'multiple_choice'? Allowed: multiple_choice,")
    assert "preference" in message
