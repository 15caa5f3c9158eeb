"""Chunked exact entropy against the textbook formula."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.algos.entropy import entropy_from_logits


def naive(logits: torch.Tensor) -> torch.Tensor:
    p = torch.softmax(logits.float(), -1)
    return -(p * torch.log(p)).sum(-1)


def test_known_values():
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, -1e4, -1e4, -1e4], [math.log(3), 0.0, -1e4, -1e4]])
    expected = [math.log(4), 0.0, -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))]
    assert entropy_from_logits(logits).tolist() == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_chunks_match_naive_values_and_gradients(chunk):
    torch.manual_seed(0)
    logits = (3 * torch.randn(2, 9, 50)).requires_grad_()
    ours = entropy_from_logits(logits, chunk_size=chunk)
    assert ours.shape == (2, 9)
    (g_ours,) = torch.autograd.grad(ours.sum(), logits)
    (g_naive,) = torch.autograd.grad(naive(logits).sum(), logits)
    torch.testing.assert_close(ours, naive(logits))
    torch.testing.assert_close(g_ours, g_naive)


def test_half_precision_input_is_computed_in_float32():
    logits = torch.randn(4, 32).to(torch.bfloat16)
    out = entropy_from_logits(logits, chunk_size=3)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, naive(logits))
    with pytest.raises(ValueError, match="chunk_size"):
        entropy_from_logits(logits, chunk_size=0)
