"""Named rollout-correction presets (registry `rollout_corrections`): verl's decoupled-mode presets by name.

Each entry is a function returning a `RolloutCorrectionSpec`; an experiment names one with
`algo.rollout_correction="token_tis"` (or `@rollout_corrections:token_tis`), or builds the spec
itself. The thresholds are verl's defaults (`RolloutCorrectionConfig` presets in
`verl/trainer/config/algorithm.py` at b178a3cd; `geo_rs_veto` at v0.7.0, f9c855f7). Which to use
when: docs/off_policy.md. Importing this module does not import torch.
"""

from __future__ import annotations

from evr1.registry import ROLLOUT_CORRECTIONS
from evr1.specs.rollout_correction import RejectionRule, RolloutCorrectionSpec

_GEO = RejectionRule(statistic="seq_mean_k1", lower=0.999, upper=1.001)
_K3 = RejectionRule(statistic="seq_mean_k3", upper=0.01)


@ROLLOUT_CORRECTIONS.register("token_tis")
def token_tis() -> RolloutCorrectionSpec:
    """Token-TIS: each token weighted by min(pi_prox/mu, 2)."""
    return RolloutCorrectionSpec(is_level="token")


@ROLLOUT_CORRECTIONS.register("seq_tis")
def seq_tis() -> RolloutCorrectionSpec:
    """Seq-TIS: every token of a row weighted by min(prod_t pi_prox/mu, 2)."""
    return RolloutCorrectionSpec(is_level="sequence")


@ROLLOUT_CORRECTIONS.register("seq_mis")
def seq_mis() -> RolloutCorrectionSpec:
    """Seq-MIS: Seq-TIS, and rows whose product ratio mu/pi_prox leaves [0.5, 2] rejected (seq_sum_k1)."""
    return RolloutCorrectionSpec(is_level="sequence", rejection=(RejectionRule(statistic="seq_sum_k1", lower=0.5, upper=2.0),))


@ROLLOUT_CORRECTIONS.register("geo_rs")
def geo_rs() -> RolloutCorrectionSpec:
    """Geo-RS: rows whose geometric-mean ratio leaves [0.999, 1.001] rejected (seq_mean_k1), no weight."""
    return RolloutCorrectionSpec(rejection=(_GEO,))


@ROLLOUT_CORRECTIONS.register("geo_rs_token_tis")
def geo_rs_token_tis() -> RolloutCorrectionSpec:
    """Geo-RS + Token-TIS."""
    return RolloutCorrectionSpec(is_level="token", rejection=(_GEO,))


@ROLLOUT_CORRECTIONS.register("geo_rs_seq_tis")
def geo_rs_seq_tis() -> RolloutCorrectionSpec:
    """Geo-RS + Seq-TIS."""
    return RolloutCorrectionSpec(is_level="sequence", rejection=(_GEO,))


@ROLLOUT_CORRECTIONS.register("k3_rs")
def k3_rs() -> RolloutCorrectionSpec:
    """K3-RS: rows whose mean per-token k3 exceeds 0.01 rejected (seq_mean_k3), no weight."""
    return RolloutCorrectionSpec(rejection=(_K3,))


@ROLLOUT_CORRECTIONS.register("k3_rs_token_tis")
def k3_rs_token_tis() -> RolloutCorrectionSpec:
    """K3-RS + Token-TIS."""
    return RolloutCorrectionSpec(is_level="token", rejection=(_K3,))


@ROLLOUT_CORRECTIONS.register("k3_rs_seq_tis")
def k3_rs_seq_tis() -> RolloutCorrectionSpec:
    """K3-RS + Seq-TIS."""
    return RolloutCorrectionSpec(is_level="sequence", rejection=(_K3,))


@ROLLOUT_CORRECTIONS.register("geo_rs_veto")
def geo_rs_veto() -> RolloutCorrectionSpec:
    """verl 0.7.0's Geo-RS: geometric-mean ratio pi_prox/mu in [1/1.001, 1.001], veto of rows with a token below 1e-4."""
    return RolloutCorrectionSpec(rejection=(RejectionRule(statistic="geometric", upper=1.001),), veto_below=1e-4)
