"""Token choice (temperature, top-k, top-p, greedy, banned ids) and `SamplingParams`."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.engines import SamplingParams
from evr1.engines.sampling import filter_logits, next_tokens
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
    [{"n": 0}, {"temperature": -1.0}, {"top_p": 0.0}, {"top_p": 1.5}, {"top_k": 0}, {"top_k": -2}, {"max_tokens": 0}],
)
def test_invalid_sampling_params(kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SamplingParams(**kwargs)


def test_from_rollout_spec() -> None:
    spec = RolloutSpec(n=6, temperature=0.9, top_p=0.95, top_k=50, max_response_tokens=33)
    params = SamplingParams.from_spec(spec, seed=4)
    assert (params.n, params.temperature, params.top_p, params.top_k, params.max_tokens, params.seed) == (
        6, 0.9, 0.95, 50, 33, 4,
    )
    assert not params.greedy
    evaluation = SamplingParams.from_spec(spec, greedy=True)
    assert evaluation.greedy and evaluation.n == 1 and evaluation.max_tokens == 33


def test_softmax_reference_values() -> None:
    """The hand-computed probabilities the table above relies on."""
    z = sum(math.exp(v) for v in (2, 1, 0, -1))
    assert [round(math.exp(v) / z, 4) for v in (2, 1, 0, -1)] == [0.6439, 0.2369, 0.0871, 0.0321]
