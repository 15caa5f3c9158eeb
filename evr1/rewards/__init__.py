"""Task-aware rewards: one scorer per problem type, the format reward, and the router.

    from evr1.rewards import RewardRouter, RewardInput
    router = RewardRouter(RewardSpec())
    outputs = router.score([RewardInput.from_record(record, response)])
    router.metrics(inputs, outputs)  # {"reward/multiple_choice/accuracy": ..., ...}

Pure Python: nothing here imports torch or Ray. Scorers load their libraries (rouge-score,
jiwer, math-verify) on first use.
"""

from evr1.rewards.contract import RewardInput, RewardOutput, per_sample, with_spec_check, with_status, with_warm_up
from evr1.rewards.extract import Extraction, extract_answer
from evr1.rewards.router import RewardRouter, RewardScoringError

__all__ = [
    "Extraction",
    "RewardInput",
    "RewardOutput",
    "RewardRouter",
    "RewardScoringError",
    "extract_answer",
    "per_sample",
    "with_spec_check",
    "with_status",
    "with_warm_up",
]
