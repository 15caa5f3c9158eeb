"""Offline rows in mixed groups: advantages against online baselines, per-token behaviour, separate diagnostics."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.algos.offpolicy import TokenKinds
from evr1.data.mixers import OfflineResponse, tokenise
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.registry import ADVANTAGES
from evr1.specs import AlgoSpec, OffPolicySpec

from .helpers import call_loss, lp, t

S3 = 3**0.5  # 1 / sqrt(1/3)
R2 = 0.5**0.5
NAN = float("nan")


def spec(name: str, in_baseline: bool, **kw) -> AlgoSpec:
    return AlgoSpec(advantage=name, offline=OffPolicySpec(in_baseline=in_baseline), **kw)


def advantages(algo: AlgoSpec, scores, offline, ids=None) -> list[float]:
    values = torch.tensor(scores, dtype=torch.float64)
    given = {"acc": values} if algo.advantage == "gdpo" else values
    ids = [0] * len(scores) if ids is None else ids
    adv = ADVANTAGES.get(algo.advantage)(given, ids, torch.ones(len(scores), 2), spec=algo, offline=torch.tensor(offline))
    return adv[:, 0].tolist()


FTFT = [False, False, False, True]


@pytest.mark.parametrize(
    ("algo", "scores", "offline", "ids", "expected"),
    [
        # the reviewer's example: policy all wrong, curated answer right. Online mean 0, online std 0:
        # grpo falls back to the whole group's std: mean 1/4, squares 3/16 + 9/16 = 3/4, /3 -> std 1/2
        (spec("grpo", False), [0, 0, 0, 1], FTFT, None, [0, 0, 0, 2.0]),
        (spec("grpo", False, scale_std=False), [0, 0, 0, 1], FTFT, None, [0, 0, 0, 1.0]),
        (spec("rloo", False), [0, 0, 0, 1], FTFT, None, [0, 0, 0, 1.0]),
        # pass@2, online pool [0, 0, 0] flat: gain max(1, 0) - 0 = 1; fallback sd of the max of a random
        # 2-subset of [1, 0, 0, 0]: P(max = 1) = 1 - C(3,2)/C(4,2) = 1/2 -> sd 1/2
        (spec("passk", False, passk_k=2), [0, 0, 0, 1], FTFT, None, [0, 0, 0, 2.0]),
        (spec("passk", False, passk_k=2, scale_std=False), [0, 0, 0, 1], FTFT, None, [0, 0, 0, 1.0]),
        # gdpo: per-key [0, 0, 0, 2], whitened over rows: mean 1/2, unbiased std 1
        (spec("gdpo", False), [0, 0, 0, 1], FTFT, None, [-0.5, -0.5, -0.5, 1.5]),
        # the same with the offline row in the statistics (unchanged behaviour): mean 1/4, std 1/2
        (spec("grpo", True), [0, 0, 0, 1], FTFT, None, [-0.5, -0.5, -0.5, 1.5]),
        (spec("grpo", True, scale_std=False), [0, 0, 0, 1], FTFT, None, [-0.25, -0.25, -0.25, 0.75]),
        (spec("rloo", True), [0, 0, 0, 1], FTFT, None, [-1 / 3, -1 / 3, -1 / 3, 1.0]),
        # b = 1/2, sd 1/2: right (1 - 1/2)/(1/2); wrong (1 - 1/2 - C(2,1)/C(3,1))/(1/2)
        (spec("passk", True, passk_k=2), [0, 0, 0, 1], FTFT, None, [-1 / 3, -1 / 3, -1 / 3, 1.0]),
        # policy always right, curated answer wrong: whole-group std of [1, 1, 0] is sqrt(1/3)
        (spec("grpo", False), [1, 1, 0], [False, False, True], None, [0, 0, -S3]),
        (spec("rloo", False), [1, 1, 0], [False, False, True], None, [0, 0, -1.0]),
        # pass@2: max(0, 1) - 1 = 0, a wrong extra answer cannot lower best-of-2 of an always-right policy
        (spec("passk", False, passk_k=2), [1, 1, 0], [False, False, True], None, [0, 0, 0]),
        # one online row: its own advantage is 0 (rloo: no other online row); offline rows are scored
        # against it: grpo whole-group std of [0, 1, 1] = sqrt(1/3)
        (spec("grpo", False), [0, 1, 1], [False, True, True], None, [0, S3, S3]),
        (spec("rloo", False), [0, 1, 1], [False, True, True], None, [0, 1.0, 1.0]),
        # pass@2 with one online row: k' = 1, gain 1 - 0; every 2-subset of [0, 1, 1] has max 1 -> sd 0 -> scale 1
        (spec("passk", False, passk_k=2), [0, 1, 1], [False, True, True], None, [0, 1.0, 1.0]),
        # a non-flat online pool [1, 0, 0], pass@2: b = 1 - C(2,2)/C(3,2) = 2/3; the scale is the whole group's
        # [1, 0, 0, 0] subset-max sd: P(max = 1) = 1 - C(3,2)/C(4,2) = 1/2 -> 1/2;
        # online right: (1 - 2/3)/sd; online wrong: (1/2 - 2/3)/sd; offline wrong: (1/3 - 2/3)/sd
        (spec("passk", False, passk_k=2), [1, 0, 0, 0], FTFT, None, [2 / 3, -1 / 3, -1 / 3, -2 / 3]),
        # a near-flat online pool [0, 0, 0.01] beside a right offline row (was 210.7 with the pool's own sd):
        # b = (2/3)(0.01); a 0 row: E[max(0, one of [.01, 0])] - b = .005 - b; the .01 row: .01 - b; offline: 1 - b;
        # whole group [1, .01, 0, 0] at k=2: P(max 1) = 1/2, P(max .01) = 1/3 -> sd = sqrt(.5000333 - .50333^2)
        (spec("passk", False, passk_k=2), [0, 0, 0.01, 1], FTFT, None,
         [g / (0.5 + 0.0001 / 3 - (0.5 + 0.01 / 3) ** 2) ** 0.5 for g in (0.005 - 0.02 / 3, 0.005 - 0.02 / 3, 0.01 - 0.02 / 3, 1 - 0.02 / 3)]),
        # group 5: one online 1 -> offline 0 gets -1 / std([1, 0]) = -1/sqrt(1/2); group 9: no online row -> 0
        (spec("grpo", False), [1, 0, 1, 0], [False, True, True, True], [5, 5, 9, 9], [0, -1 / R2, 0, 0]),
        (spec("rloo", False), [1, 0, 1, 0], [False, True, True, True], [5, 5, 9, 9], [0, -1.0, 0, 0]),
        # pass@2, group 5: k' = 1, gain 0 - 1; the only 2-subset of [1, 0] has max 1 -> sd 0 -> scale 1
        (spec("passk", False, passk_k=2), [1, 0, 1, 0], [False, True, True, True], [5, 5, 9, 9], [0, -1.0, 0, 0]),
    ],
)
def test_offline_rows_against_online_baselines(algo, scores, offline, ids, expected):
    assert advantages(algo, scores, offline, ids) == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("name", ["grpo", "rloo", "passk"])
def test_online_rows_of_a_flat_online_group_get_exactly_zero(name):
    algo = spec(name, False, passk_k=2) if name == "passk" else spec(name, False)
    got = advantages(algo, [0.3, 0.3, 0.3, 1.0, 0.3], [False, False, False, True, True])
    assert got[:3] == [0.0, 0.0, 0.0] and got[4] == 0.0 and got[3] > 0


def test_token_kinds_decide_per_token():
    mask = torch.tensor([[True, True, True, True], [True, True, True, False], [True, True, True, True]])
    behaviour = torch.tensor([[-0.1, -0.2, -0.3, NAN], [-0.1, -0.2, -0.3, NAN], [NAN, NAN, -0.3, -0.4]])
    kinds = TokenKinds.of(torch.tensor([True, True, False]), behaviour, mask)
    # row 0: only the appended stop token is unknown; row 1: NaN on padding only; row 2: online
    assert kinds.unknown.tolist() == [[False, False, False, True], [False] * 4, [False] * 4]
    no_behaviour = TokenKinds.of(torch.tensor([True, False, False]), None, mask)
    assert no_behaviour.unknown.tolist() == [[True] * 4, [False] * 4, [False] * 4]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    return load_processor(tiny_spec("qwen2.5-vl", tmp_path_factory.mktemp("models"))).tokenizer


def test_curated_logprobs_without_the_stop_token_stay_known(tokenizer):
    stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
    n = len(tokenizer("<answer>B</answer>", add_special_tokens=False)["input_ids"])
    given = tuple(-0.1 * (i + 1) for i in range(n))
    trajectory = tokenise(OfflineResponse("<answer>B</answer>", given, "record 'r'"), 0, tokenizer, stop, max_tokens=32)
    mask = torch.ones(1, n + 1, dtype=torch.bool)
    kinds = TokenKinds.of(torch.tensor([True]), trajectory.logprobs[None], mask)
    assert kinds.unknown.tolist() == [[False] * n + [True]]


def test_known_tokens_use_pi_over_mu_and_the_stop_token_the_fallback():
    x = lp([[0.5, 0.5]])
    behaviour = t([[math.log(0.4), NAN]])
    loss, m = call_loss("ppo_clip", x, x.detach(), t([[1.0, 1.0]]), offline=torch.tensor([True]), behaviour_logprobs=behaviour)
    # token 0: ratio 0.5/0.4 = 1.25 (inside [0.8, 1.28]) -> -1.25; token 1: shaping -0.5/0.6; token mean
    assert loss.item() == pytest.approx((-1.25 - 0.5 / 0.6) / 2)
    # d/dlogp: -r = -1.25; shaping -gamma p / (p + gamma)^2 = -0.1 * 0.5 / 0.36; each / 2 tokens
    (grad,) = torch.autograd.grad(loss, x)
    assert grad[0].tolist() == pytest.approx([-1.25 / 2, -0.05 / 0.36 / 2])
    # the ratio diagnostics see the known token only: k3 = 1.25 - 1 - ln 1.25
    assert m["offline/ratio_mean"].item() == pytest.approx(1.25)
    assert m["offline/ratio_min"].item() == pytest.approx(1.25)
    assert m["offline/approx_kl"].item() == pytest.approx(0.25 - math.log(1.25))


def test_gspo_sequence_ratio_over_known_tokens():
    x = lp([[0.5, 0.5, 0.5]])
    behaviour = t([[math.log(0.5 / 1.002), math.log(0.5 / 1.002), NAN]])
    algo = AlgoSpec(policy_loss="gspo", clip_low=3e-4, clip_high=4e-3)
    loss, _ = call_loss("gspo", x, x.detach(), t([[1.0] * 3]), spec=algo, offline=torch.tensor([True]), behaviour_logprobs=behaviour)
    # s = exp(mean(ln 1.002, ln 1.002)) = 1.002 (the unknown token does not dilute it to 1.002^(2/3));
    # known tokens -1.002 each, stop token shaping -0.5/0.6; token mean over 3
    assert loss.item() == pytest.approx((-2 * 1.002 - 0.5 / 0.6) / 3, rel=1e-9)


def test_drift_diagnostics_are_online_only():
    x = lp([[0.5], [0.5]])
    old = lp([[0.4], [0.5]]).detach()  # online row 0: ratio 1.25
    behaviour = t([[NAN], [math.log(0.25)]])  # offline row 1: pi/mu = 2, clipped at 1.28
    loss, m = call_loss("ppo_clip", x, old, t([[1.0], [1.0]]), offline=torch.tensor([False, True]), behaviour_logprobs=behaviour)
    assert loss.item() == pytest.approx((-1.25 - 1.28) / 2)
    online = {"clip_frac_high": 0.0, "clip_frac_low": 0.0, "ratio_mean": 1.25, "ratio_max": 1.25, "approx_kl": 0.25 - math.log(1.25)}
    offline = {"clip_frac_high": 1.0, "clip_frac_low": 0.0, "ratio_mean": 2.0, "ratio_min": 2.0, "approx_kl": 1 - math.log(2)}
    assert {k: m[k].item() for k in online} == pytest.approx(online)
    assert {k: m[f"offline/{k}"].item() for k in offline} == pytest.approx(offline)


@pytest.mark.parametrize("offline", [None, torch.tensor([False, False])])
def test_no_offline_keys_without_offline_rows(offline):
    x = lp([[0.5], [0.5]])
    _, m = call_loss("ppo_clip", x, lp([[0.4], [0.5]]).detach(), t([[1.0], [1.0]]), offline=offline)
    assert not [k for k in m if k.startswith("offline/")]
    assert m["ratio_mean"].item() == pytest.approx((1.25 + 1.0) / 2)
