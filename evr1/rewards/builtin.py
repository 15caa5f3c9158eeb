"""Registers evr1's built-in rewards: one per canonical problem type (under the type's name),
plus `open_ended_judge`, `open_ended_verdict_judge`, `preference_judge` and `format`. Imported lazily by `REWARDS`.
"""

from __future__ import annotations

from evr1.registry import REWARDS
from evr1.rewards import (
    boolean,
    code_reward,
    judge_rewards,
    math_reward,
    multiple_choice,
    numerical,
    ocr,
    open_ended,
    preference,
    spatial_grounding,
    spatio_temporal,
    temporal_grounding,
)
from evr1.rewards.contract import per_sample, with_spec_check, with_status, with_warm_up
from evr1.rewards.format_reward import format_score

REWARDS.register("multiple_choice", per_sample(multiple_choice.score))
REWARDS.register("numerical", per_sample(numerical.score))
REWARDS.register("regression", per_sample(numerical.score_regression))
REWARDS.register("temporal_grounding", per_sample(temporal_grounding.score))
REWARDS.register("spatial_grounding", per_sample(spatial_grounding.score))
REWARDS.register("spatial_temporal_grounding", per_sample(spatio_temporal.score_spatial_temporal))
REWARDS.register("tracking", per_sample(spatio_temporal.score_tracking))
REWARDS.register("open_ended", with_warm_up(per_sample(open_ended.score), open_ended.warm_up))
REWARDS.register("math", math_reward.score)
REWARDS.register("ocr", per_sample(ocr.score))
REWARDS.register("boolean", per_sample(boolean.score))
REWARDS.register("code", with_status(code_reward.score, code_reward.status))
REWARDS.register("preference", per_sample(preference.score))
REWARDS.register("open_ended_judge", with_spec_check(judge_rewards.open_ended_judge, judge_rewards.check_spec))
REWARDS.register("open_ended_verdict_judge",
                 with_spec_check(judge_rewards.open_ended_verdict_judge, judge_rewards.check_spec))
REWARDS.register("preference_judge", with_spec_check(judge_rewards.preference_judge, judge_rewards.check_spec))
REWARDS.register("format", per_sample(format_score))
