"""Policy loss + backward on 256 x 2048 tokens: evr1's `ppo_clip` objective vs a naive reference.

The naive reference is the textbook PPO-clip token mean in four lines (no metrics, no off-policy
rows, no padding guards). The ratio shows what evr1's extras cost. Run: `make bench`.
"""

from __future__ import annotations

import time

import pytest
import torch

from evr1.algos.aggregation import Normaliser
from evr1.registry import POLICY_LOSSES
from evr1.specs import AlgoSpec

B, T = 256, 2048
ROUNDS = 10


def naive_ppo(logprobs, old, adv, mask, low=0.8, high=1.28):
    ratio = torch.exp(logprobs - old)
    loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, low, high))
    return (loss * mask).sum() / mask.sum()


@pytest.fixture(scope="module")
def batch():
    torch.manual_seed(0)
    old = -torch.rand(B, T)
    lengths = torch.randint(T // 4, T + 1, (B,))
    mask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    adv = torch.randn(B, 1).expand(B, T).contiguous()
    offline = torch.zeros(B, dtype=torch.bool)
    offline[::8] = True
    return old, adv, mask, offline


def _best_time(fn, rounds: int = ROUNDS) -> float:
    """Fastest of `rounds` calls (the least disturbed by other work on a shared machine)."""
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.parametrize("name", ["ppo_clip", "gspo_token"])
def test_loss_and_backward(benchmark, batch, capsys, name):
    old, adv, mask, offline = batch
    extra = {"clip_low": 3e-4, "clip_high": 4e-4} if name.startswith("gspo") else {}
    spec = AlgoSpec(policy_loss=name, **extra)
    loss_fn = POLICY_LOSSES.get(name)
    normaliser = Normaliser.of(mask)
    params = (old + 0.05 * torch.randn(B, T)).requires_grad_()

    def ours():
        params.grad = None
        loss, _ = loss_fn(params, old, adv, mask, spec=spec, normaliser=normaliser, offline=offline)
        loss.backward()

    def naive():
        params.grad = None
        naive_ppo(params, old, adv, mask).backward()

    benchmark.pedantic(ours, rounds=ROUNDS, warmup_rounds=1)
    reference = _best_time(naive)
    ratio = benchmark.stats.stats.min / reference
    benchmark.extra_info.update(naive_min_s=reference, ratio_vs_naive=ratio)
    with capsys.disabled():
        print(f"\n{name} loss+backward {B}x{T} (best of {ROUNDS}): evr1 {benchmark.stats.stats.min * 1e3:.1f} ms, "
              f"naive ppo {reference * 1e3:.1f} ms, ratio {ratio:.2f}x")  # fmt: skip
