"""The driver's mismatch report: learner metrics renamed per engine, one warning naming the cause."""

from __future__ import annotations

import warnings

import pytest

from evr1.experiment import apply_overrides, build_experiment
from evr1.experiment_files import resolve
from evr1.runner.loop.mismatch_report import EngineMismatchWarning, MismatchReport


def quickstart(*items: str):
    cfg = resolve("quickstart")[0]()
    apply_overrides(cfg, items)
    return build_experiment(cfg)


def learner_metrics(k3: float) -> dict[str, float]:
    return {
        "learner/pg_loss": 0.5,
        "learner/mismatch/k3": k3,
        "learner/mismatch/k1": 0.001,
        "learner/mismatch/abs_diff_mean": 0.2,
        "learner/mismatch/ratio_outside_frac": 0.05,
        "learner/mismatch/math/k3": k3,
        "learner/rollout_corr/is_mean": 1.01,
    }


def test_metrics_are_named_per_engine_and_a_far_mismatch_warns_once_naming_the_dtypes():
    report = MismatchReport(quickstart("model.dtype='bfloat16'", "algo.rollout_correction='token_tis'"))
    metrics = learner_metrics(0.05)
    with pytest.warns(EngineMismatchWarning, match="engine runs in bfloat16 and the learner in float32 weights"):
        report.report(metrics)
    assert metrics == {
        "learner/pg_loss": 0.5,
        "mismatch/hf/k3": 0.05,
        "mismatch/hf/k1": 0.001,
        "mismatch/hf/abs_diff_mean": 0.2,
        "mismatch/hf/ratio_outside_frac": 0.05,
        "mismatch/hf/math/k3": 0.05,
        "rollout_corr/is_mean": 1.01,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report.report(learner_metrics(0.5))  # once per run


def test_a_small_mismatch_or_warn_k3_none_stays_quiet():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MismatchReport(quickstart()).report(learner_metrics(0.001))
        quiet = quickstart("algo.rollout_correction.warn_k3=None")
        MismatchReport(quiet).report(learner_metrics(5.0))
    assert [str(w.message) for w in caught] == []


def test_report_md_line_averages_the_steps_that_measured_the_mismatch():
    from evr1.runner.loop.run_report import mismatch_lines

    rows = [
        {"step": 0},
        {"step": 1, "mismatch/hf/k3": 0.002, "mismatch/hf/abs_diff_mean": 0.01, "mismatch/hf/abs_diff_max": 0.3,
         "mismatch/hf/math/k3": 0.5},
        {"step": 2, "mismatch/hf/k3": 0.004, "mismatch/hf/abs_diff_mean": 0.03, "mismatch/hf/abs_diff_max": 0.1},
    ]  # fmt: skip
    assert mismatch_lines(rows) == [
        "Engine-learner mismatch (hf, 2 steps): mean per-token k3 0.003, mean |log p difference| 0.02, largest 0.3."
    ]
    assert mismatch_lines([{"step": 1}]) == []
