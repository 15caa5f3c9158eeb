"""Tempered teacher-forced log-probs: `log_softmax(logits / T)`, the distribution responses are sampled from."""

from __future__ import annotations

import pytest
import torch

from evr1.models import load_model
from evr1.models.forward import response_logprobs, temper, token_types
from evr1.models.testing import video_prompts

LOGITS = torch.tensor([[2.0, 1.0, 0.0, -1.0]])


@pytest.mark.parametrize(
    ("temperature", "expected"),
    [
        (0.5, [4.0, 2.0, 0.0, -2.0]),
        (2.0, [1.0, 0.5, 0.0, -0.5]),
        (1.0, [2.0, 1.0, 0.0, -1.0]),
        (0.0, [2.0, 1.0, 0.0, -1.0]),
    ],
    ids=["T0.5", "T2", "T1", "greedy-scores-at-T1"],
)
def test_temper_divides_by_the_temperature(temperature: float, expected: list[float]) -> None:
    out = temper(LOGITS, temperature)
    assert out.dtype == torch.float32 and out[0].tolist() == pytest.approx(expected)


def test_temper_rejects_a_negative_temperature() -> None:
    with pytest.raises(ValueError, match="temperature must be >= 0, got -0.5"):
        temper(LOGITS, -0.5)


def _full_forward_logprobs(model, prompt, response: list[int], temperature: float) -> torch.Tensor:
    """By hand: one untruncated forward over prompt + response, the model's own positions."""
    ids = torch.cat([prompt.input_ids, torch.tensor(response)])
    with torch.no_grad():
        model.model.rope_deltas = None
        full = model(input_ids=ids[None], mm_token_type_ids=token_types(ids, model.config)[None], **prompt.mm).logits
    scaled = full[0, len(prompt) - 1 : -1].double() / temperature
    return scaled.log_softmax(-1).gather(-1, torch.tensor(response)[:, None])[:, 0].float()


@pytest.fixture(scope="module")
def peaked(spec):
    """The tiny model with a peaked policy (logits scaled up), so that the temperature changes log-probs visibly."""
    model = load_model(spec)
    with torch.no_grad():
        model.lm_head.weight.mul_(30.0)
    return model


@pytest.mark.parametrize("temperature", [0.5, 1.0, 1.7])
def test_response_logprobs_are_the_tempered_log_softmax(fam: str, processor, peaked, temperature: float) -> None:
    prompts = video_prompts(processor, fam, ["short", "a much longer question here"])
    responses = [[40, 41, 42, 43], [50, 51]]
    logprobs, mask = response_logprobs(peaked, prompts, responses, pad_id=0, temperature=temperature)
    for row, (prompt, response) in enumerate(zip(prompts, responses)):
        expected = _full_forward_logprobs(peaked, prompt, response, temperature)
        assert torch.allclose(logprobs[row, : len(response)], expected, atol=1e-4)
    raw, _ = response_logprobs(peaked, prompts, responses, pad_id=0)
    if temperature != 1.0:
        assert (logprobs - raw)[mask].abs().max() > 0.1  # the temperature really mattered
    assert logprobs[1, 2:].eq(0).all()
