"""Frozen, typed leaf specs. Validation happens when an experiment is built.

Every setting lives in exactly one spec. A spec shared by several parts (the `VideoSpec` used by
the cache, the rollout and the eval adapter) is one object in the experiment graph, passed to all.
The specs are split by area (`base`, `model`, `media`, `data`, `rollout`, `mixing`, `rewards`, `rollout_correction`, `algo`, `trainer`,
`evaluation`, `tools`); import them from here.
"""

from evr1.specs.algo import AlgoSpec, DynamicSamplingSpec, KLSpec, OffPolicySpec, OverlongSpec
from evr1.specs.base import PositiveFloat, PositiveInt, Probability, RegistryName, Spec
from evr1.specs.data import DataSpec, PromptSpec, SynthSpec
from evr1.specs.evaluation import EvalSpec
from evr1.specs.media import CacheSpec, ImageSpec, VideoSpec
from evr1.specs.mixing import MixerSpec
from evr1.specs.model import LANGUAGE_PROJECTIONS, LINEAR_ATTENTION_PROJECTIONS, LoraSpec, ModelSpec
from evr1.specs.rewards import CodeSandboxSpec, JudgeSpec, RewardSpec
from evr1.specs.rollout import RolloutSpec
from evr1.specs.rollout_correction import RejectionRule, RolloutCorrectionSpec
from evr1.specs.tools import ToolsSpec
from evr1.specs.trainer import OptimSpec, ResourcesSpec, TrainerSpec

__all__ = [
    "LANGUAGE_PROJECTIONS",
    "LINEAR_ATTENTION_PROJECTIONS",
    "AlgoSpec",
    "CacheSpec",
    "CodeSandboxSpec",
    "DataSpec",
    "DynamicSamplingSpec",
    "EvalSpec",
    "ImageSpec",
    "JudgeSpec",
    "KLSpec",
    "LoraSpec",
    "MixerSpec",
    "ModelSpec",
    "OffPolicySpec",
    "OptimSpec",
    "OverlongSpec",
    "PositiveFloat",
    "PositiveInt",
    "Probability",
    "PromptSpec",
    "RegistryName",
    "RejectionRule",
    "ResourcesSpec",
    "RewardSpec",
    "RolloutCorrectionSpec",
    "RolloutSpec",
    "Spec",
    "SynthSpec",
    "ToolsSpec",
    "TrainerSpec",
    "VideoSpec",
]
