"""Advantage estimators: hand-computed values, explicit group ids, degenerate groups, errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

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


OUT = AlgoSpec(offline=OffPolicySpec(in_baseline=False))
FTFT = torch.tensor([False, False, False, True])
SD_01 = math.sqrt(0.7075 / 3)  # [0, 0, 0.1, 1]: mean 0.275, squares 2 * 0.275^2 + 0.175^2 + 0.725^2 = 0.7075
SD_001 = math.sqrt(0.745075 / 3)  # [0, 0, 0.01, 1]: mean 0.2525, squares 2 * 0.2525^2 + 0.2425^2 + 0.7475^2


@pytest.mark.parametrize(
    ("spec", "scores", "offline", "expected"),
    [
        # a flat online group [0, 0, 0] and an offline 1: online mean 0; whole-group std of [0, 0, 0, 1] is 1/2
        (OUT, [0, 0, 0, 1], FTFT, [0, 0, 0, 2.0]),
        # nearly flat online groups: centred on the online mean (1/30, 1/300), scaled by the whole group's std;
        # dividing by the online std gave the offline row 16.7 and 172.6
        (OUT, [0, 0, 0.1, 1], FTFT, [-1 / 30 / SD_01, -1 / 30 / SD_01, (0.1 - 1 / 30) / SD_01, (1 - 1 / 30) / SD_01]),
        (OUT, [0, 0, 0.01, 1], FTFT, [-1 / 300 / SD_001, -1 / 300 / SD_001, (0.01 - 1 / 300) / SD_001, (1 - 1 / 300) / SD_001]),
        # in_baseline=True (the default) is plain GRPO: centred on the whole group's mean 0.2525
        (AlgoSpec(), [0, 0, 0.01, 1], FTFT, [-0.2525 / SD_001, -0.2525 / SD_001, -0.2425 / SD_001, 0.7475 / SD_001]),
        # Dr. GRPO (no std): offline rows centred on the online mean alone
        (AlgoSpec(scale_std=False, offline=OffPolicySpec(in_baseline=False)), [0, 0, 0.1, 1], FTFT, [-1 / 30, -1 / 30, 1 / 15, 29 / 30]),
        # two offline rows: online [1, 0] mean 1/2; whole [1, 0, 1, 1] mean 3/4, squares 3/16 + 9/16 -> std 1/2
        (OUT, [1, 0, 1, 1], torch.tensor([False, False, True, True]), [1.0, -1.0, 1.0, 1.0]),
    ],
)
def test_offline_rows_against_a_nearly_flat_online_group(spec, scores, offline, expected):
    assert rows(run("grpo", scores, [0] * 4, spec=spec, offline=offline)) == pytest.approx(expected, abs=1e-5)


def bound(n: int, m: int, in_baseline: bool) -> float:
    """The largest |advantage| of a grpo row in a group of n rows, m of them in the baseline (see normalised_in_groups)."""
    return (n - 1) / math.sqrt(n) if in_baseline else math.sqrt((n - 1) * (m + 1) / m)


@st.composite
def mixed_groups(draw):
    """Groups of 1-8 rows with at least one online row; scores often (nearly) equal."""
    scores, offline, ids = [], [], []
    for g in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 8))
        base = draw(st.floats(-5, 5))
        steps = st.sampled_from([0.0, 1e-9, 1e-4, 0.01, 1.0, -1.0, 100.0])
        scores += [base + draw(steps) for _ in range(n)]
        flags = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        flags[draw(st.integers(0, n - 1))] = False  # one online row at least
        offline += flags
        ids += [g] * n
    return torch.tensor(scores, dtype=torch.float64), torch.tensor(ids), torch.tensor(offline)


@settings(max_examples=200, deadline=None)
@given(batch=mixed_groups(), in_baseline=st.booleans())
def test_grpo_advantages_stay_within_the_group_bound(batch, in_baseline):
    scores, ids, offline = batch
    spec = AlgoSpec(offline=OffPolicySpec(in_baseline=in_baseline))
    adv = ADVANTAGES.get("grpo")(scores, ids, torch.ones(len(scores), 1), spec=spec, offline=offline)[:, 0]
    for g in ids.unique():
        members = ids == g
        n, m = int(members.sum()), int((members & ~offline).sum())
        assert adv[members].abs().max() <= bound(n, m, in_baseline) + 1e-9, (scores[members], offline[members], adv[members])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_the_bound_is_reached_by_one_right_offline_row_in_a_flat_group(n):
    offline = torch.tensor([False] * (n - 1) + [True])
    got = rows(run("grpo", [0.0] * (n - 1) + [1.0], [0] * n, spec=OUT, offline=offline))
    assert got[-1] == pytest.approx(bound(n, n - 1, False), abs=1e-5) and got[:-1] == [0.0] * (n - 1)


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


@pytest.mark.parametrize(
    ("scores", "ids", "mask", "offline", "expected"),
    [
        # centred [0.5, -0.5 | 0, 0]; 8 tokens of mean 0, unbiased std sqrt(1/7)
        ([1, 0, 1, 1], [0, 0, 1, 1], [[1, 1]] * 4, None, [0.5 * 7**0.5, -0.5 * 7**0.5, 0, 0]),
        # lengths 3, 1, 3, 3: token mean 0.1, unbiased std sqrt(0.9 / 9); a flat group is not 0
        ([1, 0, 1, 1], [0, 0, 1, 1], [[1, 1, 1], [1, 0, 0], [1, 1, 1], [1, 1, 1]], None,
         [0.4 / 0.1**0.5, -0.6 / 0.1**0.5, -0.1 / 0.1**0.5, -0.1 / 0.1**0.5]),
        # in_baseline=False: mean of the online rows 0.5 -> [0.5, -0.5, -0.5]; mean -1/6, std sqrt(1/3)
        ([1, 0, 0], [0, 0, 0], [[1]] * 3, [False, False, True], [(2 / 3) / S3, (-1 / 3) / S3, (-1 / 3) / S3]),
    ],
)  # fmt: skip
def test_reinforce_pp_baseline_centres_in_groups_then_whitens_the_batch(scores, ids, mask, offline, expected):
    spec = AlgoSpec(advantage="reinforce_pp_baseline", offline=OffPolicySpec(in_baseline=offline is None))
    mask = torch.tensor(mask)
    kw = {} if offline is None else {"offline": torch.tensor(offline)}
    adv = run("reinforce_pp_baseline", scores, ids, mask, spec=spec, **kw)
    assert rows(adv) == pytest.approx(expected, abs=1e-5)
    assert (adv[~mask.bool()] == 0).all()


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
    names = {"grpo", "rloo", "reinforce_pp", "reinforce_pp_baseline", "remax", "gdpo", "passk"}
    assert names <= set(ADVANTAGES.names())
