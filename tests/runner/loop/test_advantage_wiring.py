"""How the trainer wires the algorithms: `compute_advantages`, GPU shares and group sharding.

Expected values are computed by hand in the comments (EPS = 1e-6 in the std shifts them by ~1e-6).
"""

from __future__ import annotations

import math

import pytest
import torch

from evr1.algos.kl import KLController
from evr1.algos.masked import masked_whiten
from evr1.engines.vllm_adapter import gpu_requests
from evr1.rewards.contract import RewardOutput
from evr1.runner.loop.advantage_phase import compute_advantages, gdpo_weights
from evr1.runner.ray.actors import TrainItem
from evr1.runner.ray.workers import reference_share, shard_groups
from evr1.specs import AlgoSpec, ResourcesSpec, RewardSpec, RolloutSpec

R = 1 / math.sqrt(2)  # a [1, 0] group, (x - mean) / std: +-0.5 / 0.7071


def item(group: int, tokens: int = 1, *, offline: bool = False, behaviour=None, ref=None) -> TrainItem:
    logprobs = torch.tensor(behaviour if behaviour is not None else [-1.0] * tokens)
    ref_lp = torch.tensor(ref) if ref is not None else None
    return TrainItem(None, torch.arange(tokens), logprobs, None, offline, group, ref_lp)


def out(accuracy: float, fmt: float = 1.0, score: float | None = None, **extra: float) -> RewardOutput:
    return RewardOutput(accuracy if score is None else score, {"accuracy": accuracy, "format": fmt, **extra})


def row_values(advantages: list[torch.Tensor]) -> list[float]:
    """One value per row (every case below gives each row one advantage on all its tokens)."""
    for adv in advantages:
        assert torch.allclose(adv, adv[0].expand_as(adv))
    return [float(a[0]) for a in advantages]


DROPPED = [item(g, 4) for g in (1, 1, 2, 2, 3, 3)], [out(1.0)] * 6  # three [1, 1] groups, dropped by DAPO

CASES = {
    # kept group [1, 0] of 4-token rows alone: returns 1,1,1,1,0,0,0,0; mean .5, std sqrt(2/7) -> +-0.5/0.5345
    "reinforce_pp whitens over the kept rows only": (
        AlgoSpec(advantage="reinforce_pp", dynamic_sampling={}), {},
        [item(0, 4), item(0, 4), *DROPPED[0]], [out(1.0), out(0.0), *DROPPED[1]],
        [0.9354, -0.9354, 0, 0, 0, 0, 0, 0],
    ),
    "grpo without a filter": (AlgoSpec(), {}, [item(0), item(0)], [out(1.0), out(0.0)], [R, -R]),
    # remax: score - greedy score; the dropped group's baselines are ignored
    "remax subtracts the kept rows' baselines": (
        AlgoSpec(advantage="remax", dynamic_sampling={}), {"baselines": [0.25, 0.25, 0.0, 0.0]},
        [item(0), item(0), item(1), item(1)], [out(1.0), out(0.0), out(1.0), out(1.0)],
        [0.75, -0.25, 0, 0],
    ),
    # gdpo, reward weights .9/.1: acc g0 [1,0] -> +-R, g1 [0,0] -> 0; fmt g0 [1,1] -> 0, g1 [1,0] -> +-R;
    # total R*[.9,-.9,.1,-.1], whitened over rows: std sqrt((2*.81 + 2*.01)/3) = 0.73937 -> [1.21725, .13525];
    # the diagnostic `word` key does not count
    "gdpo weighs accuracy and format like the reward spec": (
        AlgoSpec(advantage="gdpo"), {"reward": RewardSpec(accuracy_weight=0.9, format_weight=0.1)},
        [item(0), item(0), item(1), item(1)],
        [out(1, 1, word=0.3), out(0, 1, word=0.9), out(0, 1, word=0.5), out(0, 0, word=0.1)],
        [1.21725, -1.21725, 0.13525, -0.13525],
    ),
    # format "none": accuracy alone, R*[.9,-.9,0,0], std sqrt(1.62/3) = 0.73485 -> 1.22474
    "gdpo without the format reward": (
        AlgoSpec(advantage="gdpo"), {"reward": RewardSpec(format="none")},
        [item(0), item(0), item(1), item(1)], [out(1, 1), out(0, 1), out(0, 1), out(0, 0)],
        [1.22474, -1.22474, 0, 0],
    ),
    # `word` named: g0 [.3,.9] -> -+R, g1 [.5,.1] -> +-R; total R*[-.1,.1,1.1,-1.1], std sqrt(2.44/3) = 0.90185
    "gdpo adds a diagnostic key named in key_weights": (
        AlgoSpec(advantage="gdpo", key_weights={"word": 1.0}), {"reward": RewardSpec(accuracy_weight=0.9, format_weight=0.1)},
        [item(0), item(0), item(1), item(1)],
        [out(1, 1, word=0.3), out(0, 1, word=0.9), out(0, 1, word=0.5), out(0, 0, word=0.1)],
        [-0.11088, 0.11088, 1.21972, -1.21972],
    ),
    # k1 KL, coef .1: online row d = -1 - -1.5 = .5 per token, 2 tokens -> 1 - .1 = .9; the offline row's
    # curated log-probs are another policy's: no penalty, 1.0. grpo on [.9, 1.0]: -+0.05/0.07071
    "the KL reward penalty skips offline rows": (
        AlgoSpec(kl={"enabled": True, "coef": 0.1, "as_reward_penalty": True, "estimator": "k1"}), {"kl": True},
        [item(0, 2, behaviour=[-1.0, -1.0], ref=[-1.5, -1.5]),
         item(0, 2, offline=True, behaviour=[-0.2, -0.2], ref=[-1.0, -1.0])],
        [out(1.0), out(1.0)],
        [-R, R],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_compute_advantages(name: str) -> None:
    spec, kwargs, items, outputs, expected = CASES[name]
    if kwargs.pop("kl", False):
        kwargs["kl"] = KLController(spec.kl)
    advantages, _, keep = compute_advantages(spec, items, outputs, **kwargs)
    assert [len(a) for a in advantages] == [len(i.response_ids) for i in items]
    assert row_values(advantages) == pytest.approx(expected, abs=1e-4)
    assert keep == [not spec.dynamic_sampling or i < 2 for i in range(len(items))]  # the filtered cases keep group 0


def test_filter_metrics_and_kl_mean_cover_the_kept_and_online_rows() -> None:
    spec, _, items, outputs, _ = CASES["reinforce_pp whitens over the kept rows only"]
    _, metrics, keep = compute_advantages(spec, items, outputs)
    assert keep == [True, True] + [False] * 6
    assert metrics["filter/kept_frac"] == 0.25
    assert metrics["advantage/mean"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["advantage/abs_mean"] == pytest.approx(0.9354, abs=1e-4)  # not diluted by the dropped rows' zeros
    spec, _, items, outputs, _ = CASES["the KL reward penalty skips offline rows"]
    _, metrics, _ = compute_advantages(spec, items, outputs, KLController(spec.kl))
    assert metrics["kl/mean"] == pytest.approx(0.5)  # online tokens only (with the offline row: 0.65)


def test_overlong_shaping_applies_before_the_estimator() -> None:
    # limit 4, buffer 2: a 4-token response gets -1, a 2-token one 0; grpo on [1 - 1, 1]: -+R
    spec = AlgoSpec(overlong={"buffer": 2})
    advantages, metrics, _ = compute_advantages(spec, [item(0, 4), item(0, 2)], [out(1.0), out(1.0)], max_length=4)
    assert row_values(advantages) == pytest.approx([-R, R], abs=1e-4)
    assert metrics["shaping/overlong_penalty"] == -0.5


def test_nothing_kept_gives_zero_advantages() -> None:
    spec = AlgoSpec(advantage="reinforce_pp", dynamic_sampling={})
    advantages, metrics, keep = compute_advantages(spec, *DROPPED)
    assert keep == [False] * 6 and row_values(advantages) == [0.0] * 6
    assert metrics["advantage/abs_mean"] == 0.0


def test_gdpo_needs_the_reward_spec() -> None:
    with pytest.raises(ValueError, match="reward=RewardSpec"):
        compute_advantages(AlgoSpec(advantage="gdpo"), [item(0), item(0)], [out(1.0), out(0.0)])


def test_gdpo_normalises_each_extra_reward_as_its_own_key() -> None:
    reward = RewardSpec(extra={"open_ended": 0.3}, format="none")
    assert gdpo_weights(AlgoSpec(advantage="gdpo"), reward) == {"accuracy": 0.9, "open_ended": 0.3}
    spec = AlgoSpec(advantage="gdpo", key_weights={"open_ended": 1.0})
    assert gdpo_weights(spec, reward) == {"accuracy": 0.9, "open_ended": 1.0}  # key_weights win
    # accuracy [1, 0] -> [+R, -R]; open_ended [0, 1] -> [-R, +R] weighted 0.3; sum [0.7R, -0.7R] whitened: [+R, -R]
    advantages, _, _ = compute_advantages(AlgoSpec(advantage="gdpo"), [item(0), item(0)],
                                          [out(1.0, open_ended=0.0), out(0.0, open_ended=1.0)], reward=reward)  # fmt: skip
    assert row_values(advantages) == pytest.approx([R, -R], abs=1e-5)


@pytest.mark.parametrize(
    "extra, message",
    [({"overlong": {"buffer": 2}}, "overlong shaping"),
     ({"kl": {"enabled": True, "coef": 0.1, "as_reward_penalty": True}}, "KL reward penalty")],
)
def test_gdpo_rejects_shaping_it_would_ignore(extra: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AlgoSpec(advantage="gdpo", **extra)


def test_masked_whiten_treats_float32_rounding_as_equal_values() -> None:
    values = torch.full((12345,), 1 / 3, dtype=torch.float32)  # sum/count rounds: std ~1e-7 * 1/3, not 0
    mask = torch.ones_like(values, dtype=torch.bool)
    assert torch.equal(masked_whiten(values, mask), torch.zeros_like(values))
    # a real spread is still whitened: [1, 0] -> +-0.5 / 0.7071
    two = masked_whiten(torch.tensor([1.0, 0.0]), torch.tensor([True, True]))
    assert two.tolist() == pytest.approx([R, -R], abs=1e-5)
    # a spread of 1e-4 relative on large values is kept (tolerance ~7.6e-6 relative)
    big = masked_whiten(torch.tensor([1000.0, 1000.1]), torch.tensor([True, True]))
    assert big.tolist() == pytest.approx([-R, R], abs=1e-3)


def test_shards_hold_part_of_every_mini_batch() -> None:
    items = [item(g) for g in range(8)]
    shards = shard_groups(items, workers=2, mini_batches=2)
    assert [[i.group_id for i in s] for s in shards] == [[0, 1, 4, 5], [2, 3, 6, 7]]  # both parities on each worker
    assert [[i.group_id for i in s] for s in shard_groups(items, 2, 1)] == [[0, 2, 4, 6], [1, 3, 5, 7]]


@pytest.mark.parametrize(
    "gpus, colocate, kl, learners, reference",
    [
        (0, True, True, (0.0,), 0.0),  # CPU run: unchanged
        (1, True, False, (0.5,), 0.0),  # no KL, no reference
        (1, True, True, (0.25,), 0.25),  # beside learner 0 and the engine: 0.25 + 0.25 + 0.5
        (2, False, True, (0.5,), 0.5),  # learner 1 GPU + engine 1 GPU: none left over
        (3, True, True, (0.5,), 1.0),  # a GPU left over
    ],
)
def test_reference_gpu_share(gpus: int, colocate: bool, kl: bool, learners: tuple, reference: float) -> None:
    requests = gpu_requests(ResourcesSpec(num_gpus=gpus), RolloutSpec(colocate=colocate))
    assert reference_share(gpus, requests, kl) == (learners, reference)
