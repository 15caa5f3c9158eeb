"""The named registries of evr1. Each discovers plugins in the entry-point group `evr1.<name>`.

Built-in components register themselves in the modules listed here, which are imported on the
first lookup (never at `import evr1`).
"""

from evr1.registry.base import (
    Description,
    DuplicateNameError,
    RegistrationError,
    Registry,
    UnknownNameError,
    is_instance_of,
    requires_params,
)

REWARDS: Registry = Registry("rewards", builtin_modules=["evr1.rewards.builtin"])
ADVANTAGES: Registry = Registry("advantages", builtin_modules=["evr1.algos.advantages"])
POLICY_LOSSES: Registry = Registry("policy_losses", builtin_modules=["evr1.algos.losses"])
MIXERS: Registry = Registry("mixers", builtin_modules=["evr1.data.mixers"])
SAMPLERS: Registry = Registry("samplers", builtin_modules=["evr1.data.samplers"])
ENGINES: Registry = Registry("engines", builtin_modules=["evr1.engines.builtin"])
MODELS: Registry = Registry("models", builtin_modules=["evr1.models.builtin"])
BENCHMARKS: Registry = Registry("benchmarks", builtin_modules=["evr1.eval.benchmarks"])
EXPERIMENTS: Registry = Registry("experiments")

REGISTRIES: dict[str, Registry] = {
    r.name: r
    for r in (REWARDS, ADVANTAGES, POLICY_LOSSES, MIXERS, SAMPLERS, ENGINES, MODELS, BENCHMARKS, EXPERIMENTS)
}

__all__ = [
    "ADVANTAGES",
    "BENCHMARKS",
    "ENGINES",
    "EXPERIMENTS",
    "MIXERS",
    "MODELS",
    "POLICY_LOSSES",
    "REGISTRIES",
    "REWARDS",
    "SAMPLERS",
    "Description",
    "DuplicateNameError",
    "RegistrationError",
    "Registry",
    "UnknownNameError",
    "is_instance_of",
    "requires_params",
]
