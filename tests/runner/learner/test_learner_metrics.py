"""Learner metrics combined over micro-batches and workers: loss shares, token-weighted means, extremes."""

from __future__ import annotations

import pytest
import torch

from evr1.runner.learner.learner_stats import StepStats, Weights

from .learner_fixtures import learner_for, lprocessor_fixture, lspec_fixture, make_samples  # noqa: F401

TIMING = {"update_s", "tokens_per_s"}


def _t(value: float) -> torch.Tensor:
    return torch.tensor(value)


def test_step_stats_by_hand() -> None:
    # two FSDP workers (loss shares carry the factor W = 2); worker 1's second micro-batch is offline-only
    w0, w1 = StepStats(), StepStats()
    w0.add(_t(0.6), {"pg_loss": _t(0.4), "entropy": _t(2.0), "ratio_mean": _t(1.1), "ratio_max": _t(1.3)},
           Weights(tokens=4, online=4, offline_known=0), world_size=2)
    w1.add(_t(0.2), {"pg_loss": _t(0.2), "entropy": _t(1.0), "ratio_mean": _t(0.9), "ratio_max": _t(1.0)},
           Weights(tokens=2, online=2, offline_known=0), world_size=2)
    w1.add(_t(-0.4), {"pg_loss": _t(-0.4), "entropy": _t(4.0), "ratio_mean": _t(1.0), "ratio_max": _t(1.0),
                      "offline/ratio_mean": _t(3.0)},
           Weights(tokens=6, online=0, offline_known=3), world_size=2)  # no online token: its ratio 1 is a placeholder
    merged = StepStats.merge([w0, w1]).summary()
    assert merged["loss"] == pytest.approx((0.6 + 0.2 - 0.4) / 2)
    assert merged["pg_loss"] == pytest.approx((0.4 + 0.2 - 0.4) / 2)
    assert merged["entropy"] == pytest.approx((2.0 * 4 + 1.0 * 2 + 4.0 * 6) / 12)
    assert merged["ratio_mean"] == pytest.approx((1.1 * 4 + 0.9 * 2) / 6)
    assert merged["ratio_max"] == pytest.approx(1.3)
    assert merged["offline/ratio_mean"] == pytest.approx(3.0)


def test_extremes_leave_out_micro_batches_without_their_tokens() -> None:
    stats = StepStats()
    stats.add(_t(0.0), {"ratio_min": _t(1.2), "ratio_max": _t(1.5)}, Weights(3, 3, 0))
    stats.add(_t(0.0), {"ratio_min": _t(1.0), "ratio_max": _t(1.0)}, Weights(2, 0, 2))  # offline-only
    assert stats.summary()["ratio_min"] == pytest.approx(1.2)


def test_metrics_do_not_depend_on_the_micro_batch_split(lspec, lprocessor) -> None:
    """Online drift metrics are means over online tokens however rows are packed (epoch 2: ratios != 1)."""
    samples = make_samples(lprocessor, "vivtvi", seed=3, offline=(1, 4))
    whole = learner_for(lspec, micro_batch_tokens=100_000, epochs=2)
    split = learner_for(lspec, micro_batch_tokens=120, epochs=2)
    m_whole, m_split = whole.update(samples), split.update(samples)
    assert m_whole["approx_kl"] > 0 and m_whole["ratio_max"] > 1.0  # the second epoch saw moved weights
    assert m_split.keys() == m_whole.keys()
    for key in m_whole.keys() - TIMING:
        assert m_split[key] == pytest.approx(m_whole[key], rel=1e-3, abs=1e-6), key
