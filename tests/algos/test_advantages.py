"""Advantage estimators: hand-computed values, explicit group ids, degenerate groups, errors."""

from __future__ import annotations

import pytest
import torch

from evr1.registry import ADVANTAGES
from evr1.specs import AlgoSpec, OffPolicySpec

S3 = 0.5773503  # sqrt(1/3)
R2 = 0.7071068  # sqrt(1/2)


def run(name: str, scores, group_ids, mask=None, *, spec: AlgoSpec | None = None, **kw) -> torch.Tensor:
    scores_t = scores if isinstance(scores, dict) else torch.tensor(scores, dtype=torch.float64)
    if isinstance(scores_t, dict):
        scores_t = {k: torch.tensor(v, dtype=torch.float64) for k, v in scores_t.items()}
        batch = len(next(iter(scores.values())))
    else:
        batch = scores_t.shape[0]
    mask = torch.ones(batch, 2) if mask is None else mask
    return ADVANTAGES.get(name)(scores_t, group_ids, mask, spec=spec or AlgoSpec(advantage=name), **kw)


def close(actual: torch.Tensor, expected) -> bool:
    return torch.allclose(actual.double(), torch.tensor(expected, dtype=torch.float64), atol=1e-5, rtol=0)


def rows(adv: torch.Tensor) -> list[float]:
    return adv[:, 0].tolist()


@pytest.mark.parametrize(
    ("name", "spec", "scores", "ids", "expected"),
    [
        ("grpo", AlgoSpec(), [1, 0, 0, 1], [0, 0, 0, 0], [0.5 / S3, -0.5 / S3, -0.5 / S3, 0.5 / S3]),
        ("grpo", AlgoSpec(scale_std=False), [1, 0, 0, 1], [0, 0, 0, 0], [0.5, -0.5, -0.5, 0.5]),
        # interleaved explicit ids: groups 7 -> rows 0, 2 and 3 -> rows 1, 3
        ("grpo", AlgoSpec(), [1, 2, 3, 6], [7, 3, 7, 3], [-R2, -R2, R2, R2]),
        ("grpo", AlgoSpec(), [1, 5, 5, 2], [0, 1, 1, 2], [0, 0, 0, 0]),  # size 1, all equal, size 1
        ("rloo", AlgoSpec(advantage="rloo"), [1, 0, 0, 0], [0, 0, 0, 0], [1, -1 / 3, -1 / 3, -1 / 3]),
        ("rloo", AlgoSpec(advantage="rloo"), [3, 1, 4, 4], [0, 0, 1, 1], [2, -2, 0, 0]),
        ("passk", AlgoSpec(advantage="passk", passk_k=2), [1, 0, 0, 0], [0] * 4, [1, -1 / 3, -1 / 3, -1 / 3]),
        ("passk", AlgoSpec(advantage="passk", passk_k=2, scale_std=False), [3, 1, 2], [0] * 3, [1 / 3, -1 / 6, -1 / 6]),
        ("passk", AlgoSpec(advantage="passk", passk_k=2), [3, 1, 2], [0] * 3, [R2, -R2 / 2, -R2 / 2]),
        ("passk", AlgoSpec(advantage="passk", passk_k=9), [1, 0, 0, 1], [0] * 4, [0, 0, 0, 0]),  # k >= n
    ],
)
def test_group_estimators_by_hand(name, spec, scores, ids, expected):
    assert rows(run(name, scores, torch.tensor(ids), spec=spec)) == pytest.approx(expected, abs=1e-5)


def test_passk_binary_matches_analytic_formula():
    # n=6, 2 correct, k=3: b = 1 - C(4,3)/C(6,3) = 0.8, sd = 0.4; wrong rows: 1 - 0.8 - C(3,2)/C(5,2) = -0.1
    adv = rows(run("passk", [1, 0, 0, 1, 0, 0], [0] * 6, spec=AlgoSpec(advantage="passk", passk_k=3)))
    assert adv == pytest.approx([0.5, -0.25, -0.25, 0.5, -0.25, -0.25], abs=1e-5)


def test_passk_with_k1_is_population_normalised_grpo():
    scores = [0.3, 0.9, 0.1, 0.5]
    adv = rows(run("passk", scores, [0] * 4, spec=AlgoSpec(advantage="passk", passk_k=1)))
    t = torch.tensor(scores, dtype=torch.float64)
    assert adv == pytest.approx(((t - t.mean()) / t.std(unbiased=False)).tolist(), abs=1e-5)


def test_string_group_ids_and_token_rewards():
    token_rewards = torch.tensor([[0.5, 0.5, 9.0], [0.0, 0.0, 9.0]])  # 9.0 sits on masked tokens
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    adv = ADVANTAGES.get("grpo")(token_rewards, ["uid-a", "uid-a"], mask, spec=AlgoSpec(scale_std=False))
    assert close(adv, [[0.5, 0.5, 0.0], [-0.5, -0.5, 0.0]]), adv


def test_advantage_is_zero_on_masked_tokens():
    mask = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
    adv = run("grpo", [1, 0], [0, 0], mask)
    assert adv[mask == 0].abs().sum() == 0 and adv[0, 0] > 0 and adv[1, 0] < 0


def test_offline_rows_out_of_the_baseline():
    offline = torch.tensor([False, False, False, True])
    spec_out = AlgoSpec(offline=OffPolicySpec(in_baseline=False))
    # online [1, 0, 0]: mean 1/3, unbiased std sqrt(1/3); the offline 1 is scored against them
    got = rows(run("grpo", [1, 0, 0, 1], [0] * 4, spec=spec_out, offline=offline))
    assert got == pytest.approx([(2 / 3) / S3, -(1 / 3) / S3, -(1 / 3) / S3, (2 / 3) / S3], abs=1e-5)
    inside = rows(run("grpo", [1, 0, 0, 1], [0] * 4, offline=offline))
    assert inside == pytest.approx([0.5 / S3, -0.5 / S3, -0.5 / S3, 0.5 / S3], abs=1e-5)
    rloo_spec = AlgoSpec(advantage="rloo", offline=OffPolicySpec(in_baseline=False))
    assert rows(run("rloo", [1, 0, 0, 1], [0] * 4, spec=rloo_spec, offline=offline)) == pytest.approx([1, -0.5, -0.5, 2 / 3])


def test_reinforce_pp_returns_and_whitening():
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    # gamma 1: returns [1, 1, 1] and [0, 0]; mean 0.6, unbiased std sqrt(0.3)
    adv = run("reinforce_pp", [1, 0], [0, 1], mask)
    sd = 0.3**0.5
    assert close(adv, [[0.4 / sd] * 3, [-0.6 / sd, -0.6 / sd, 0]]), adv
    # gamma 0.5: returns [0.25, 0.5, 1] and [0, 0]; mean 0.35, unbiased std sqrt(0.175)
    adv = run("reinforce_pp", [1, 0], [0, 1], mask, spec=AlgoSpec(advantage="reinforce_pp", gamma=0.5))
    sd = 0.175**0.5
    expected = [[-0.1 / sd, 0.15 / sd, 0.65 / sd], [-0.35 / sd, -0.35 / sd, 0]]
    assert close(adv, expected), adv


def test_remax_subtracts_the_greedy_score():
    adv = run("remax", [1.0, 0.5], [0, 0], baselines=torch.tensor([0.5, 0.5]))
    assert rows(adv) == pytest.approx([0.5, 0.0])
    with pytest.raises(ValueError, match="baselines"):
        run("remax", [1.0, 0.5], [0, 0])


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        # acc per group -> [+r2, -r2, +r2, -r2]; fmt: group 0 all equal -> 0, group 1 -> [-r2, +r2]
        # sum [r2, -r2, 0, 0], whitened over rows: unbiased std sqrt(1/3)
        ({}, [R2 / S3, -R2 / S3, 0, 0]),
        # sum [r2, -r2, -r2, r2], whitened: unbiased std sqrt(2/3)
        ({"fmt": 2.0}, [0.8660254, -0.8660254, -0.8660254, 0.8660254]),
    ],
)
def test_gdpo_normalises_each_key_then_whitens(weights, expected):
    scores = {"acc": [1, 0, 1, 0], "fmt": [1, 1, 0, 1]}
    adv = run("gdpo", scores, [0, 0, 1, 1], spec=AlgoSpec(advantage="gdpo", key_weights=weights))
    assert rows(adv) == pytest.approx(expected, abs=1e-5)


def test_input_errors_name_the_problem():
    with pytest.raises(TypeError, match="gdpo"):
        run("grpo", {"acc": [1, 0]}, [0, 0])
    with pytest.raises(TypeError, match="dict"):
        run("gdpo", [1, 0], [0, 0])
    with pytest.raises(ValueError, match="not among the scores"):
        run("gdpo", {"acc": [1, 0]}, [0, 0], spec=AlgoSpec(advantage="gdpo", key_weights={"fmt": 1.0}))
    with pytest.raises(ValueError, match=r"rows \[1\]"):
        run("grpo", [1, float("nan")], [0, 0])
    with pytest.raises(ValueError, match="1-D integer"):
        run("grpo", [1, 0], torch.tensor([0.0, 1.0]))


def test_all_estimators_are_registered():
    assert {"grpo", "rloo", "reinforce_pp", "remax", "gdpo", "passk"} <= set(ADVANTAGES.names())
