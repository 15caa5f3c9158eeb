"""Hostile text never crashes a batch: every scorer returns a value the router takes (in [0, 1], or not
applicable; a format component in [0, 1]) and the score is the weighted mean of accuracy and format, within a
time bound, for random and adversarial responses, including inputs that make backtracking regular expressions
explode (the bound is on this process's CPU time, which a loaded machine does not stretch as it does the wall
clock; scorers that backtrack run in this process). The one allowed failure is math-verify running past
its process-level timeout, which must be reported as a timeout of that sample."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evr1.problem_types import ProblemType
from evr1.rewards import RewardInput, RewardRouter
from evr1.specs import RewardSpec

SVG = "<svg width='10'><rect x='1'/></svg>"
REFERENCES: dict[ProblemType, dict] = {
    ProblemType.MULTIPLE_CHOICE: {"answer": "B", "options": ["dog", "cat", "bird", "fish"]},
    ProblemType.NUMERICAL: {"answer": "12"},
    ProblemType.REGRESSION: {"answer": 10},
    ProblemType.TEMPORAL_GROUNDING: {"answer": {"time": [1, 5]}, "duration": 10.0},
    ProblemType.SPATIAL_GROUNDING: {"answer": {"boxes": [0, 0, 10, 10]}},
    ProblemType.SPATIAL_TEMPORAL_GROUNDING: {"answer": {"time": [1, 3], "boxes": {"1": [0, 0, 2, 2]}}, "fps": 1.0},
    ProblemType.TRACKING: {"answer": {"boxes": {"1": [0, 0, 2, 2], "2": [0, 0, 2, 2]}}, "frame_timestamps": [1.0, 2.0]},
    ProblemType.OPEN_ENDED: {"answer": "a cat on a mat"},
    ProblemType.MATH: {"answer": "1/2"},
    ProblemType.OCR: {"answer": "hello world"},
    ProblemType.BOOLEAN: {"answer": "yes"},
    ProblemType.CODE: {"answer": SVG},
    ProblemType.PREFERENCE: {"answer": "A"},
}
FRAGMENTS = [
    "<answer>", "</answer>", "<think>", "</think>", "< answer >", "\\boxed{", "{", "}", "[", "]", "(", ")",
    "A", "B", " or ", "yes", "no", "1,000", "3/4", "%", "e5", "10^", "×", " ", "\n", ":", "00:03", "1:02:03",
    '{"bbox_2d": [1, 2, 3, 4]}', '"', ",", "-", "−", "١٢٣", "零", "```python\n", "```", "<svg>", "<rect/>",
    "The final answer is ", "Answer: ", "twenty", "million", "s", "\x00", "\ud7ff", "🙂", "NaN", "inf", "1e999",
]  # fmt: skip
responses = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=30).map("".join),
)

# The wall-clock timeout is only a safety net here (a loaded machine stretches it); the CPU bound is the check.
ROUTER = RewardRouter(RewardSpec(timeout_s=60.0, math_timeout_s=1.0))
TIME_BOUND_S = 5.0


def _inputs(response: str) -> list[RewardInput]:
    return [RewardInput(response=response, problem_type=t, sample_id=f"{t.value}", **ref) for t, ref in REFERENCES.items()]


def _check(response: str) -> None:
    inputs = _inputs(response)
    start = time.process_time()
    outputs = ROUTER.score(inputs)
    elapsed = time.process_time() - start
    assert elapsed < TIME_BOUND_S, f"{elapsed:.2f} CPU s for {response[:80]!r}"
    for inp, out in zip(inputs, outputs):
        if inp.problem_type is ProblemType.MATH and out.timed_out:
            assert "sample math" in out.error
        else:
            assert out.error is None, out.error
        # A scorer's value outside [0, 1] is an error of the router (`out.error` above), but the format component
        # of a scorer's own RewardOutput is taken as it is, and the score is clamped to [0, 1]: so check the format,
        # and that the score is the weighted mean itself, which a clamp would not leave.
        assert 0.0 <= out.components["format"] <= 1.0
        if out.error is None and out.applicable:
            assert out.score == pytest.approx(0.9 * out.components["accuracy"] + 0.1 * out.components["format"])
        assert out.applicable or inp.problem_type is ProblemType.CODE


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses)
def test_every_scorer_survives_random_responses(response: str) -> None:
    _check(response)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FRAGMENTS), responses)
def test_every_scorer_survives_tagged_random_answers(fragment: str, inner: str) -> None:
    _check(f"<think>{inner}</think><answer>{fragment}{inner}</answer>")


TRIGGERS = [
    "<", "<answer", "</", "answer", "answer is", "1", "1,", "1.", "2^", "1.2 x 10^", "one", "one and",
    "(", "(1,2)", "[1", "[1,", "1.0s", "1.0", "00:", "\\boxed{", "```", "{", "A", "A or", "yes", "1/",
    "\\frac{1}{", "response", "option", "<svg", "<think>",
]  # fmt: skip
HOSTILE = (
    [t + " " * 20_000 + "x" for t in TRIGGERS]
    + [(t + " ") * 4_000 for t in TRIGGERS]
    + [t * 4_000 for t in TRIGGERS]
    + ["1" * 20_000 + "x", "1," * 10_000, "9" * 5_000 + "e" + "9" * 5_000, "-" * 20_000 + "1"]
)


@pytest.mark.parametrize("response", HOSTILE, ids=[f"h{i}" for i in range(len(HOSTILE))])
def test_catastrophic_backtracking_inputs(response: str) -> None:
    _check(response)
    _check(f"<answer>{response}</answer>")
