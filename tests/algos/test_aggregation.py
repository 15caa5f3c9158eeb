"""Aggregation modes by hand, and the same gradient whatever the micro-batch / worker split."""

from __future__ import annotations

import functools

import pytest
import torch

from evr1.algos.aggregation import Normaliser, aggregate
from evr1.specs import AlgoSpec

from .helpers import call_loss

MODES = ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"]
LOSSES = ["ppo_clip", "gspo", "gspo_token", "cispo", "reinforce"]


@pytest.mark.parametrize(
    ("mode", "world_size", "expected"),
    [
        ("token_mean", 1, 10 / 4),
        ("seq_mean_token_mean", 1, (2 + 4) / 2),
        ("seq_mean_token_sum", 1, 10 / 2),
        ("constant", 1, 10 / (4 * 2)),
        ("token_mean", 2, 2 * 10 / 4),
    ],
)
def test_modes_by_hand(mode, world_size, expected):
    losses = torch.tensor([[1.0, 2.0, 3.0], [4.0, 99.0, 99.0], [7.0, 7.0, 7.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]])  # row 2 is empty: not a sequence
    norm = Normaliser.of(mask, world_size=world_size)
    assert (norm.tokens, norm.sequences) == (4.0, 2.0)
    assert aggregate(losses, mask, mode=mode, normaliser=norm, constant=4.0).item() == pytest.approx(expected)


def test_empty_batch_gives_zero_and_normalisers_add():
    empty = torch.zeros(2, 3, dtype=torch.bool)
    norm = Normaliser.of(empty)
    for mode in MODES:
        assert aggregate(torch.ones(2, 3), empty, mode=mode, normaliser=norm, constant=1.0).item() == 0.0
    total = Normaliser.of(torch.ones(2, 3)) + Normaliser.of(torch.tensor([[1, 0, 0]]))
    assert (total.tokens, total.sequences) == (7.0, 3.0)
    with pytest.raises(ValueError, match="world sizes"):
        Normaliser(1, 1, world_size=2) + Normaliser(1, 1)
    with pytest.raises(ValueError, match="constant"):
        aggregate(torch.ones(1, 1), torch.ones(1, 1), mode="constant", normaliser=norm)


def _batch(seed: int = 0):
    torch.manual_seed(seed)
    b, t = 8, 6
    lengths = torch.tensor([6, 1, 3, 0, 5, 2, 6, 4])
    mask = torch.arange(t)[None, :] < lengths[:, None]
    old = -1.0 - torch.rand(b, t, dtype=torch.float64)
    logits = old + 0.001 * torch.randn(b, t, dtype=torch.float64)
    adv = torch.randn(b, t, dtype=torch.float64)
    offline = torch.tensor([False, False, True, False, False, True, False, False])
    entropy = torch.rand(b, t, dtype=torch.float64)
    return logits, old, adv, mask, offline, entropy


def _grad(name, spec, parts, normaliser, logits, old, adv, mask, offline, entropy):
    """Gradient of the summed micro-batch losses w.r.t. the (shared) log-prob parameters."""
    param = logits.clone().requires_grad_()
    total = 0.0
    for rows in parts:
        r = torch.tensor(rows)
        loss, _ = call_loss(
            name, param[r], old[r], adv[r], mask[r], spec=spec, normaliser=normaliser,
            offline=offline[r], entropy=entropy[r],
        )  # fmt: skip
        total = total + loss
    (grad,) = torch.autograd.grad(total, param)
    return grad


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", LOSSES)
def test_gradient_is_independent_of_micro_batching(mode, name):
    data = _batch()
    mask = data[3]
    extra = {"clip_low": 3e-4, "clip_high": 4e-4} if name.startswith("gspo") else {}
    spec = AlgoSpec(policy_loss=name, loss_agg=mode, loss_agg_constant=6.0 if mode == "constant" else None, entropy_coef=0.01, **extra)
    grad = functools.partial(_grad, name, spec)
    whole = grad([list(range(8))], Normaliser.of(mask), *data)
    splits = [[[0, 1, 2], [3, 4, 5, 6, 7]], [[i] for i in range(8)], [[7, 0], [2, 5, 3], [1, 4, 6]]]
    for parts in splits:
        norm = sum((Normaliser.of(mask[torch.tensor(p)]) for p in parts[1:]), Normaliser.of(mask[torch.tensor(parts[0])]))
        torch.testing.assert_close(grad(parts, norm, *data), whole)
    # two data-parallel workers, each with two micro-batches; the wrapper averages their gradients
    workers = [[[0, 1], [2, 3]], [[4, 5, 6], [7]]]
    norm = Normaliser.of(mask, world_size=2)
    averaged = sum(grad(parts, norm, *data) for parts in workers) / 2
    torch.testing.assert_close(averaged, whole)
    assert whole.abs().sum() > 0
