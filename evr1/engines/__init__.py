"""Rollout engines (registry `engines`): `hf` here; a vLLM engine where installed."""

from evr1.engines.base import FinishReason, RolloutEngine, RolloutResult, SamplingParams

__all__ = ["FinishReason", "RolloutEngine", "RolloutResult", "SamplingParams"]
