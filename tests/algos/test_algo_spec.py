"""AlgoSpec validation: sensible settings pass, inert or nonsensical combinations are errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evr1.specs import AlgoSpec, KLSpec, OffPolicySpec, OverlongSpec


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"advantage": "grpo", "policy_loss": "ppo_clip", "clip_low": 0.2, "clip_high": 0.28},  # the quickstart
        {"scale_std": False, "loss_agg": "constant", "loss_agg_constant": 1024},  # Dr. GRPO
        {"advantage": "passk", "passk_k": 4},
        {"advantage": "gdpo", "key_weights": {"format": 0.5}},
        {"advantage": "reinforce_pp", "gamma": 0.99},
        {"policy_loss": "gspo", "clip_low": 3e-4, "clip_high": 4e-4, "loss_agg": "seq_mean_token_mean"},
        {"policy_loss": "cispo", "clip_low": 1.0, "clip_high": 4.0},
        {"dual_clip": 3.0, "kl": KLSpec(enabled=True, coef=0.01, target=0.05)},
        {"offline": OffPolicySpec(unknown_behaviour="unit_weight", loss_weight=0.5), "overlong": OverlongSpec(buffer=64)},
    ],
)
def test_valid_settings(kwargs):
    spec = AlgoSpec(**kwargs)
    assert {k: getattr(spec, k) for k in kwargs} == kwargs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"loss_agg": "constant"}, "needs loss_agg_constant"),
        ({"loss_agg_constant": 512.0}, "needs loss_agg_constant"),
        ({"dual_clip": 1.0}, "dual_clip must be > 1"),
        ({"clip_low": 1.0}, "clip_low must be < 1"),
        ({"policy_loss": "cispo", "clip_low": 1.5}, "no lower bound"),
        ({"advantage": "rloo", "scale_std": False}, "scale_std=False only applies"),
        ({"gamma": 0.9}, "gamma only applies to reinforce_pp"),
        ({"advantage": "passk"}, "needs passk_k"),
        ({"passk_k": 4}, "needs passk_k"),
        ({"key_weights": {"accuracy": 2.0}}, "only applies to gdpo"),
        ({"advantage": "remax", "offline": {"in_baseline": False}}, "only applies to group baselines"),
        ({"advantage": "nope"}, "unknown advantages name 'nope'"),
        ({"policy_loss": "ppo_clp"}, "Did you mean .ppo_clip."),
        ({"offline": {"unknown_behaviour": "unit_weight", "shaping_gamma": 0.5}}, "shaping_gamma is only used"),
        ({"kl": {"enabled": True}}, "coef 0"),
        ({"overlong": {"buffer": 0}}, "greater than 0"),
        ({"dynamic_sampling": {"low": 1.0, "high": 0.0}}, "must be smaller"),
    ],
)
def test_inert_or_nonsense_settings_are_errors(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        AlgoSpec(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"policy_loss": "gspo"}, {"policy_loss": "gspo_token", "clip_low": 0.2, "clip_high": 4e-4}]
)
def test_gspo_with_the_usual_clip_ranges_is_warned_about_not_refused(kwargs):
    with pytest.warns(UserWarning, match="GSPO paper uses clip_low/clip_high 3e-4/4e-4"):
        spec = AlgoSpec(**kwargs)
    assert (spec.clip_low, spec.clip_high) == (kwargs.get("clip_low", 0.2), kwargs.get("clip_high", 0.28))


def test_dual_clip_defaults_to_3_and_none_turns_it_off():
    assert AlgoSpec().dual_clip == 3.0
    assert AlgoSpec(dual_clip=None).dual_clip is None
    assert AlgoSpec(policy_loss="cispo", clip_low=1.0).dual_clip == 3.0  # not read by cispo: no error


def test_specs_are_frozen_and_strict():
    spec = AlgoSpec()
    with pytest.raises(ValidationError):
        spec.clip_low = 0.3  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs"):
        AlgoSpec(clip_ratio=0.2)
