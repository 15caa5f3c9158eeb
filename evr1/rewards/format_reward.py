"""The format reward: is the answer in an `<answer>` tag, and does its content suit the type?

- full (default): 1 when the response has a complete `<answer>…</answer>` outside any thinking,
  nothing but whitespace after the last `</answer>`, and content that parses for the problem type
  (a letter among the options, one number, an interval, boxes, a track, yes/no, a label, code
  that compiles, non-empty text); else 0.
- partial: 0.5 for the tag plus 0.5 for suitable content (wherever the answer was found).
- none: not checked; the format component is 1 and the score is the accuracy alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from evr1.problem_types import ProblemType
from evr1.rewards import (
    boolean,
    code_reward,
    math_reward,
    multiple_choice,
    numerical,
    ocr,
    open_ended,
    preference,
    spatial_grounding,
    spatio_temporal,
    temporal_grounding,
)
from evr1.rewards.extract import extract_answer

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

Suits = Callable[[str, "RewardInput"], bool]
SUITS: dict[ProblemType, Suits] = {
    ProblemType.MULTIPLE_CHOICE: multiple_choice.suits,
    ProblemType.NUMERICAL: numerical.suits,
    ProblemType.REGRESSION: numerical.suits,
    ProblemType.TEMPORAL_GROUNDING: temporal_grounding.suits,
    ProblemType.SPATIAL_GROUNDING: spatial_grounding.suits,
    ProblemType.SPATIAL_TEMPORAL_GROUNDING: spatio_temporal.suits,
    ProblemType.TRACKING: spatio_temporal.suits,
    ProblemType.OPEN_ENDED: open_ended.suits,
    ProblemType.MATH: math_reward.suits,
    ProblemType.OCR: ocr.suits,
    ProblemType.BOOLEAN: boolean.suits,
    ProblemType.CODE: code_reward.suits,
    ProblemType.PREFERENCE: preference.suits,
}
_ENDS_WITH_ANSWER = re.compile(r"<\s*/\s*answer\s*>\s*\Z", re.IGNORECASE)


def content_suits(text: str | None, inp: RewardInput) -> bool:
    """Whether answer text parses for the input's problem type."""
    if not text:
        return False
    try:
        return bool(SUITS[inp.problem_type](text, inp))
    except Exception:  # noqa: BLE001 - hostile content is simply unsuitable
        return False


def format_score(inp: RewardInput, spec: RewardSpec) -> float:
    """Format: the <answer> tag and content that suits the problem type (full / partial / none)."""
    if spec.format == "none":
        return 1.0
    found = extract_answer(inp.response, spec.strictness == "strict")
    suits = content_suits(found.text, inp)
    if spec.format == "partial":
        return 0.5 * found.tagged + 0.5 * suits
    ends = _ENDS_WITH_ANSWER.search(inp.response[-200:]) is not None
    return 1.0 if found.tagged and suits and ends else 0.0
