"""Rollout correction: mismatch metrics, TIS weights, rejection rules, veto and presets, by hand-worked numbers."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.algos.rollout_correction import MismatchStats, correct, engine_tokens, mismatch_warning
from evr1.registry import ROLLOUT_CORRECTIONS
from evr1.specs import AlgoSpec, RejectionRule, RolloutCorrectionSpec

from .helpers import call_loss

NAN = float("nan")


def logs(rows) -> torch.Tensor:
    return torch.tensor([[NAN if math.isnan(p) else math.log(p) for p in row] for row in rows], dtype=torch.float64)


def test_engine_tokens_are_online_valid_tokens_with_known_engine_logprob():
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    mu = torch.tensor([[-1.0, NAN, NAN], [-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    offline = torch.tensor([False, True, False])
    assert engine_tokens(mask, mu, offline).tolist() == [[True, False, False], [False, False, False], [True, False, False]]
    assert not engine_tokens(mask, None, offline).any()


def test_mismatch_metrics_by_hand():
    # row 0 online: tokens with pi_prox/mu = 1 and 4; row 0's third token NaN (unknown); row 1 offline (excluded)
    old = logs([[0.5, 0.8, 0.3], [0.5, 0.5, 0.5]])
    mu = logs([[0.5, 0.2, NAN], [0.1, 0.1, 0.1]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    tokens = engine_tokens(mask, mu, torch.tensor([False, True]))
    m = MismatchStats.of(old, mu, tokens).metrics()
    log4 = math.log(4)
    expected = {
        "abs_diff_mean": log4 / 2,
        "abs_diff_max": log4,
        "k1": -log4 / 2,
        "k3": (4 - 1 - log4) / 2,
        "seq_log_ratio_mean": log4,
        "seq_log_ratio_abs_max": log4,
        "ratio_outside_frac": 0.5,
        "training_ppl": 1 / math.sqrt(0.4),
        "rollout_ppl": 1 / math.sqrt(0.1),
        "log_ppl_diff": -log4 / 2,
        "log_ppl_abs_diff": log4 / 2,
        "ppl_ratio": 0.5,
        "chi2_token": (1 + 16) / 2 - 1,
        "chi2_seq": 16 - 1,
    }
    assert m == pytest.approx(expected, rel=1e-9)


def test_mismatch_stats_of_shards_add_up_to_the_whole_batch():
    old = logs([[0.5, 0.8], [0.3, 0.6], [0.9, 0.1]])
    mu = logs([[0.4, 0.8], [0.6, 0.2], [0.9, 0.3]])
    tokens = torch.ones(3, 2, dtype=torch.bool)
    whole = MismatchStats.of(old, mu, tokens)
    parts = MismatchStats.of(old[:1], mu[:1], tokens[:1]) + MismatchStats.of(old[1:], mu[1:], tokens[1:])
    assert parts.metrics() == pytest.approx(whole.metrics(), rel=1e-12)
    assert MismatchStats.from_parts(whole.summed(), whole.maxima()) == whole
    assert MismatchStats().metrics() == {}


# The batch of the correction tables: three online rows, ratios pi_prox/mu per token
# row 0: 2, 0.5   row 1: 1.1, 1.1   row 2: 10 (one token, then padding)
OLD = logs([[2.0, 0.5], [1.1, 1.1], [10.0, 1.0]]) + math.log(0.05)
MU = logs([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]) + math.log(0.05)
TOKENS = torch.tensor([[True, True], [True, True], [True, False]])
T, F = True, False


def keep_of(spec: RolloutCorrectionSpec) -> list[bool]:
    return correct(OLD, MU, TOKENS, spec).keep[TOKENS].tolist()


def rule(statistic: str, upper: float, lower: float | None = None) -> RolloutCorrectionSpec:
    return RolloutCorrectionSpec(rejection=(RejectionRule(statistic=statistic, upper=upper, lower=lower),))


@pytest.mark.parametrize(
    ("statistic", "upper", "lower", "keep"),
    [
        # k1 = -lr, kept while mu/pi_prox (per token) lies in [1/1.5, 1.5]: 0.5, 2 and 0.1 are out
        ("token_k1", 1.5, None, [F, F, T, T, F]),
        ("token_k2", 0.1, None, [F, F, T, T, F]),  # k2: 0.240, 0.240 | 0.0045, 0.0045 | 2.65
        ("token_k3", 0.25, None, [F, T, T, T, F]),  # k3: 0.307, 0.193 | 0.0047, 0.0047 | 6.70
        ("seq_sum_k1", 2.0, 0.5, [T, T, T, T, F]),  # product mu/pi_prox: 1 | 1/1.21 | 0.1
        ("seq_sum_k1", 1.1, None, [T, T, F, F, F]),  # [1/1.1, 1.1]: 1/1.21 is out
        ("seq_sum_k2", 0.4, None, [F, F, T, T, F]),  # sums 0.480 | 0.0091 | 2.65
        ("seq_sum_k3", 0.6, None, [T, T, T, T, F]),  # sums 0.5 | 0.0094 | 6.70
        ("seq_mean_k1", 1.001, 0.999, [T, T, F, F, F]),  # geometric mean mu/pi_prox: 1 | 1/1.1 | 0.1
        ("seq_mean_k2", 0.2, None, [F, F, T, T, F]),  # means 0.240 | 0.0045 | 2.65
        ("seq_mean_k3", 0.3, None, [T, T, T, T, F]),  # means 0.25 | 0.0047 | 6.70
        ("seq_max_k2", 0.2, None, [F, F, T, T, F]),  # maxima 0.240 | 0.0045 | 2.65
        ("seq_max_k3", 0.3, None, [F, F, T, T, F]),  # maxima 0.307 | 0.0047 | 6.70 (the mean kept row 0)
        ("geometric", 1.05, None, [T, T, F, F, F]),  # geometric mean pi_prox/mu: 1 | 1.1 | 10
    ],
)
def test_each_rejection_rule_by_hand(statistic, upper, lower, keep):
    assert keep_of(rule(statistic, upper, lower)) == keep


def test_rules_chain_and_report_fractions():
    spec = RolloutCorrectionSpec(
        rejection=(RejectionRule(statistic="token_k3", upper=0.25), RejectionRule(statistic="seq_sum_k1", lower=0.5, upper=2.0))
    )
    result = correct(OLD, MU, TOKENS, spec)
    assert result.keep[TOKENS].tolist() == [F, T, T, T, F]
    assert result.weights is None
    assert result.metrics == pytest.approx(
        {
            "rs_token_k3_rejected_frac": 2 / 5,
            "rs_seq_sum_k1_rejected_frac": 1 / 5,
            "rejected_token_frac": 2 / 5,
            "rejected_row_frac": 2 / 3,
        }
    )


def test_veto_drops_every_token_of_a_row_holding_a_catastrophic_token():
    result = correct(OLD, MU, TOKENS, RolloutCorrectionSpec(veto_below=0.6))  # row 0 holds a token at 0.5
    assert result.keep.tolist() == [[F, F], [T, T], [T, T]]
    assert result.metrics["veto_row_frac"] == pytest.approx(1 / 3)
    assert correct(OLD, MU, TOKENS, RolloutCorrectionSpec(veto_below=0.4)).keep.all()


def test_token_and_sequence_tis_by_hand():
    token = correct(OLD, MU, TOKENS, RolloutCorrectionSpec(is_level="token"))
    assert token.weights[TOKENS].tolist() == pytest.approx([2.0, 0.5, 1.1, 1.1, 2.0])
    assert token.weights[2, 1] == 1.0  # padding
    assert token.metrics == pytest.approx({"is_mean": 6.7 / 5, "is_max": 10.0, "is_truncated_frac": 1 / 5})
    seq = correct(OLD, MU, TOKENS, RolloutCorrectionSpec(is_level="sequence", is_cap=1.5))
    assert seq.weights[TOKENS].tolist() == pytest.approx([1.0, 1.0, 1.21, 1.21, 1.5])  # products 1 | 1.21 | 10
    assert seq.keep.all()


def test_batch_normalisation_divides_by_the_mean_over_tokens_or_rows():
    token = correct(OLD, MU, TOKENS, RolloutCorrectionSpec(is_level="token", is_batch_normalize=True))
    assert token.metrics["is_batch_norm_factor"] == pytest.approx(6.7 / 5)
    assert token.weights[TOKENS].tolist() == pytest.approx([w / (6.7 / 5) for w in (2.0, 0.5, 1.1, 1.1, 2.0)])
    seq = correct(OLD, MU, TOKENS, RolloutCorrectionSpec(is_level="sequence", is_batch_normalize=True))
    mean = (1.0 + 1.21 + 2.0) / 3  # over rows, not tokens
    assert seq.metrics["is_batch_norm_factor"] == pytest.approx(mean)
    assert seq.weights[TOKENS].tolist() == pytest.approx([w / mean for w in (1.0, 1.0, 1.21, 1.21, 2.0)])


def test_batch_normalisation_uses_the_mean_over_all_workers():
    spec = RolloutCorrectionSpec(is_level="token", is_batch_normalize=True)
    other_worker = [3.3, 5.0]  # another worker's weights sum to 3.3 over 5 tokens
    result = correct(OLD, MU, TOKENS, spec, reduce_sum=lambda local: [a + b for a, b in zip(local, other_worker)])
    assert result.metrics["is_batch_norm_factor"] == pytest.approx((6.7 + 3.3) / 10)
    assert result.weights[0, 0] == pytest.approx(2.0)


TOKEN_W, SEQ_W = [2.0, 0.5, 1.1, 1.1, 2.0], [1.0, 1.0, 1.21, 1.21, 2.0]
ALL = [T] * 5


@pytest.mark.parametrize(
    ("preset", "weights", "keep"),
    [
        ("token_tis", TOKEN_W, ALL),
        ("seq_tis", SEQ_W, ALL),
        ("seq_mis", SEQ_W, [T, T, T, T, F]),  # product mu/pi_prox in [0.5, 2]: row 2's 0.1 is out
        ("geo_rs", None, [T, T, F, F, F]),  # geometric mean in [0.999, 1.001]: only row 0's 1
        ("geo_rs_token_tis", TOKEN_W, [T, T, F, F, F]),
        ("geo_rs_seq_tis", SEQ_W, [T, T, F, F, F]),
        ("k3_rs", None, [F, F, T, T, F]),  # mean k3 <= 0.01: only row 1's 0.0047
        ("k3_rs_token_tis", TOKEN_W, [F, F, T, T, F]),
        ("k3_rs_seq_tis", SEQ_W, [F, F, T, T, F]),
        ("geo_rs_veto", None, [T, T, F, F, F]),  # geometric pi_prox/mu in [1/1.001, 1.001]; no token below 1e-4
    ],
)
def test_every_preset_by_hand(preset, weights, keep):
    spec = AlgoSpec(rollout_correction=preset).rollout_correction
    result = correct(OLD, MU, TOKENS, spec)
    assert (None if result.weights is None else result.weights[TOKENS].tolist()) == (
        None if weights is None else pytest.approx(weights)
    )
    assert result.keep[TOKENS].tolist() == keep


def test_presets_are_listed_with_verl_thresholds():
    assert set(ROLLOUT_CORRECTIONS.names()) == {
        "token_tis", "seq_tis", "seq_mis", "geo_rs", "geo_rs_token_tis", "geo_rs_seq_tis",
        "k3_rs", "k3_rs_token_tis", "k3_rs_seq_tis", "geo_rs_veto",
    }  # fmt: skip
    assert ROLLOUT_CORRECTIONS.get("geo_rs_veto")().veto_below == 1e-4
    assert ROLLOUT_CORRECTIONS.get("k3_rs")().rejection[0] == RejectionRule(statistic="seq_mean_k3", upper=0.01)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"is_cap": 3.0}, "only apply with is_level"),
        ({"is_batch_normalize": True}, "only apply with is_level"),
        ({"rejection": ({"statistic": "token_k3", "upper": 1}, {"statistic": "token_k3", "upper": 2})}, "appear once"),
    ],
)
def test_inert_or_ambiguous_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RolloutCorrectionSpec(**kwargs)


def test_rule_bounds_are_checked():
    with pytest.raises(ValueError, match="lower only applies"):
        RejectionRule(statistic="seq_mean_k3", upper=0.1, lower=0.01)
    with pytest.raises(ValueError, match="at most upper"):
        RejectionRule(statistic="token_k1", upper=1.5, lower=2.0)
    with pytest.raises(ValueError, match="unknown rollout_corrections name"):
        AlgoSpec(rollout_correction="token_tiss")


def test_warning_names_the_likely_cause():
    loud = {"k3": 0.05, "abs_diff_mean": 0.3, "ratio_outside_frac": 0.1, "k1": 0.01}
    assert mismatch_warning(loud, warn_k3=0.01, engine="hf", engine_dtype="bfloat16", learner_dtype="float32") is not None
    dtype = mismatch_warning(loud, warn_k3=0.01, engine="hf", engine_dtype="bfloat16", learner_dtype="float32")
    assert "bfloat16" in dtype and "float32" in dtype
    same = mismatch_warning(loud, warn_k3=0.01, engine="hf", engine_dtype="float32", learner_dtype="float32")
    assert "attention implementation" in same
    shifted = mismatch_warning({**loud, "k1": -0.29}, warn_k3=0.01, engine="hf", engine_dtype="float32", learner_dtype="float32")
    assert "temperature" in shifted
    assert mismatch_warning(loud, warn_k3=0.1, engine="hf", engine_dtype="bfloat16", learner_dtype="float32") is None
    assert mismatch_warning(loud, warn_k3=None, engine="hf", engine_dtype="bfloat16", learner_dtype="float32") is None


logprob_rows = st.lists(
    st.lists(st.floats(min_value=-8.0, max_value=-0.01), min_size=1, max_size=6), min_size=1, max_size=4
).map(lambda rows: [row + [-1.0] * (6 - len(row)) for row in rows])


@settings(max_examples=60, deadline=None)
@given(logprob_rows, st.sampled_from(sorted(["token_tis", "seq_tis", "seq_mis", "geo_rs", "k3_rs", "geo_rs_veto"])))
def test_engine_equal_to_learner_gives_weights_one_and_rejects_nothing(rows, preset):
    old = torch.tensor(rows, dtype=torch.float64)
    tokens = torch.ones_like(old, dtype=torch.bool)
    result = correct(old, old.clone(), tokens, AlgoSpec(rollout_correction=preset).rollout_correction)
    assert result.weights is None or bool((result.weights == 1.0).all())
    assert bool(result.keep.all())
    m = MismatchStats.of(old, old.clone(), tokens).metrics()
    assert m["abs_diff_max"] == m["k1"] == m["k3"] == m["chi2_token"] == m["chi2_seq"] == m["ratio_outside_frac"] == 0.0


@settings(max_examples=40, deadline=None)
@given(logprob_rows, st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=6, max_size=6))
def test_mismatch_metrics_and_rejection_grow_with_injected_mismatch(rows, direction):
    old = torch.tensor(rows, dtype=torch.float64)
    tokens = torch.ones_like(old, dtype=torch.bool)
    shift = torch.tensor(direction, dtype=torch.float64).expand_as(old)
    k3_rule = RolloutCorrectionSpec(rejection=(RejectionRule(statistic="token_k3", upper=0.05),), is_level="token", is_cap=5.0)
    previous = None
    for scale in (0.0, 0.25, 0.5, 1.0, 2.0):
        mu = old - scale * shift
        m = MismatchStats.of(old, mu, tokens).metrics()
        result = correct(old, mu, tokens, k3_rule)
        now = (m["abs_diff_mean"], m["k3"], m["ratio_outside_frac"], result.metrics["rejected_token_frac"])
        distance = (result.weights.log().abs() - 1e-12).clamp_min(0)
        if previous is not None:
            assert all(b >= a - 1e-12 for a, b in zip(previous[0], now))
            assert bool((distance >= previous[1] - 1e-9).all())  # each weight moves away from 1 (up to its cap)
        previous = (now, distance)


def test_loss_takes_the_weights_on_online_rows_instead_of_the_decoupled_weight():
    # row 0 fresh online, row 1 stale online (pi_prox/mu = 1.5), row 2 offline (mu = pi: ratio 1)
    old = torch.log(torch.full((3, 2), 0.4, dtype=torch.float64))
    logprobs = old.clone().requires_grad_(True)  # r = pi/pi_prox = 1 everywhere
    mu = torch.stack([old[0], old[1] - math.log(1.5), old[2]])
    adv = torch.ones(3, 2, dtype=torch.float64)
    offline, staleness = torch.tensor([False, False, True]), torch.tensor([0, 1, 0])
    weights = torch.tensor([[2.0, 0.5], [1.1, 1.1], [3.0, 3.0]], dtype=torch.float64)
    kw = {"offline": offline, "behaviour_logprobs": mu, "staleness": staleness}
    without, _ = call_loss("reinforce", logprobs, old, adv, **kw)
    assert float(without.detach()) == pytest.approx(-(1 + 1 + 1.5 + 1.5 + 1 + 1) / 6)  # the decoupled weight on row 1
    loss, _ = call_loss("reinforce", logprobs, old, adv, rollout_weights=weights, **kw)
    assert float(loss.detach()) == pytest.approx(-(2 + 0.5 + 1.1 + 1.1 + 1 + 1) / 6)  # offline row keeps weight 1
    (grad,) = torch.autograd.grad(loss, logprobs)
    assert grad.flatten().tolist() == pytest.approx([-2 / 6, -0.5 / 6, -1.1 / 6, -1.1 / 6, -1 / 6, -1 / 6])
