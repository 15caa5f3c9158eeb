"""Token choice (temperature, top-k, top-p, min-p, repetition penalty, greedy, banned ids), stop strings and
`SamplingParams`; the penalty and min-p against transformers' own logits processors."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.sampling import cut_at_stop, filter_logits, next_tokens, penalise
from evr1.specs import RolloutSpec

INF = float("-inf")
LOGITS = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
# softmax(LOGITS) = [0.6439, 0.2369, 0.0871, 0.0321]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (SamplingParams(), [2.0, 1.0, 0.0, -1.0]),
        (SamplingParams(temperature=2.0), [1.0, 0.5, 0.0, -0.5]),
        (SamplingParams(top_k=2), [2.0, 1.0, INF, INF]),
        (SamplingParams(top_k=10), [2.0, 1.0, 0.0, -1.0]),
        (SamplingParams(top_p=0.5), [2.0, INF, INF, INF]),  # the top token alone holds 0.64
        (SamplingParams(top_p=0.7), [2.0, 1.0, INF, INF]),  # 0.64 < 0.7, then 0.88
        (SamplingParams(top_p=0.95), [2.0, 1.0, 0.0, INF]),  # 0.88 < 0.95, then 0.968
        # at temperature 0.5 the probabilities are [0.865, 0.117, 0.016, 0.002]; top-k drops the last
        (SamplingParams(top_k=3, top_p=0.9, temperature=0.5), [4.0, 2.0, INF, INF]),
        (SamplingParams(top_k=3, top_p=0.8, temperature=0.5), [4.0, INF, INF, INF]),
        (SamplingParams(min_p=0.3), [2.0, 1.0, INF, INF]),  # 0.3 x 0.6439 = 0.193: 0.2369 stays, 0.0871 goes
        (SamplingParams(min_p=0.4), [2.0, INF, INF, INF]),  # 0.258 > 0.2369
        (SamplingParams(min_p=0.1, temperature=2.0), [1.0, 0.5, 0.0, -0.5]),  # T=2: [0.42, 0.25, 0.16, 0.09], all >= 0.042
        (SamplingParams(min_p=0.3, top_p=0.5), [2.0, INF, INF, INF]),  # min-p first, then the nucleus of what is left
    ],
)
def test_filter_logits(params: SamplingParams, expected: list[float]) -> None:
    assert filter_logits(LOGITS, params)[0].tolist() == pytest.approx(expected)


def test_sampling_follows_the_tempered_distribution() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = LOGITS.expand(40_000, -1)
    drawn = next_tokens(logits, SamplingParams(temperature=2.0), generator)
    freq = torch.bincount(drawn, minlength=4).float() / len(drawn)
    expected = torch.softmax(LOGITS[0] / 2.0, -1)
    assert torch.allclose(freq, expected, atol=0.01)


def test_top_p_sampling_stays_in_the_nucleus() -> None:
    drawn = next_tokens(LOGITS.expand(2000, -1), SamplingParams(top_p=0.7), torch.Generator().manual_seed(1))
    assert set(drawn.tolist()) == {0, 1}


def test_greedy_and_banned_tokens() -> None:
    assert next_tokens(LOGITS, SamplingParams(greedy=True), None).tolist() == [0]
    banned = torch.tensor([0, 1])
    assert next_tokens(LOGITS, SamplingParams(greedy=True), None, banned).tolist() == [2]
    drawn = next_tokens(LOGITS.expand(500, -1), SamplingParams(), torch.Generator().manual_seed(2), banned)
    assert set(drawn.tolist()) <= {2, 3}


def test_temperature_zero_means_greedy_with_one_response() -> None:
    params = SamplingParams(temperature=0.0, n=8)
    assert params.greedy and params.n == 1


@pytest.mark.parametrize(
    "kwargs",
    [{"n": 0}, {"temperature": -1.0}, {"top_p": 0.0}, {"top_p": 1.5}, {"top_k": 0}, {"top_k": -2}, {"max_tokens": 0},
     {"repetition_penalty": 0.0}, {"min_p": -0.1}, {"min_p": 1.5}, {"stop": ("",)}],
)
def test_invalid_sampling_params(kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SamplingParams(**kwargs)


def test_from_rollout_spec() -> None:
    spec = RolloutSpec(n=6, temperature=0.9, top_p=0.95, top_k=50, max_response_tokens=33, min_p=0.05,
                       repetition_penalty=1.1, stop=("</answer>",))
    params = SamplingParams.from_spec(spec, seed=4)
    assert (params.n, params.temperature, params.top_p, params.top_k, params.max_tokens, params.seed) == (
        6, 0.9, 0.95, 50, 33, 4,
    )
    assert (params.min_p, params.repetition_penalty, params.stop) == (0.05, 1.1, ("</answer>",))
    assert not params.greedy
    evaluation = SamplingParams.from_spec(spec, greedy=True)
    assert evaluation.greedy and evaluation.n == 1 and evaluation.max_tokens == 33


def test_softmax_reference_values() -> None:
    """The hand-computed probabilities the table above relies on."""
    z = sum(math.exp(v) for v in (2, 1, 0, -1))
    assert [round(math.exp(v) / z, 4) for v in (2, 1, 0, -1)] == [0.6439, 0.2369, 0.0871, 0.0321]


def test_repetition_penalty_and_min_p_equal_transformers_processors() -> None:
    """The outside reference: HF's `RepetitionPenaltyLogitsProcessor` and `MinPLogitsWarper` on random logits."""
    from transformers.generation.logits_process import MinPLogitsWarper, RepetitionPenaltyLogitsProcessor

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 50, generator=generator) * 3
    history = torch.randint(0, 50, (3, 12), generator=generator)  # prompt + response so far, repeats included
    seen = torch.zeros(3, 50, dtype=torch.bool).scatter(1, history, True)
    for penalty in (0.8, 1.0, 1.3, 2.0):
        expected = RepetitionPenaltyLogitsProcessor(penalty)(history, logits.clone())
        assert torch.equal(penalise(logits, seen, penalty), expected)
    for min_p in (0.05, 0.2, 0.9):
        kept = filter_logits(logits, SamplingParams(min_p=min_p)).isfinite()
        assert torch.equal(kept, MinPLogitsWarper(min_p)(history, logits.clone()).isfinite())


def test_a_penalty_steers_greedy_choice_away_from_seen_tokens() -> None:
    seen = torch.tensor([[True, False, False, False]])
    assert penalise(LOGITS, seen, 3.0)[0].tolist() == pytest.approx([2.0 / 3.0, 1.0, 0.0, -1.0])
    assert next_tokens(penalise(LOGITS, seen, 3.0), SamplingParams(greedy=True), None).tolist() == [1]
    negative = torch.tensor([[False, False, False, True]])
    assert penalise(LOGITS, negative, 3.0).tolist() == [[2.0, 1.0, 0.0, -3.0]]


@pytest.mark.parametrize(
    ("text", "stops", "expected"),
    [
        ("<answer>B</answer> and more", ("</answer>",), "<answer>B</answer>"),
        ("no stop here", ("</answer>",), "no stop here"),
        ("a STOP b END c", ("END", "STOP"), "a STOP"),  # the one that ends first
        ("xyz", (), "xyz"),
        ("abcd", ("bcd", "bc"), "abc"),  # "bc" ends before "bcd" does
    ],
)
def test_cut_at_stop(text: str, stops: tuple[str, ...], expected: str) -> None:
    assert cut_at_stop(text, stops) == expected
