"""The named registries of evr1. Each discovers plugins in the entry-point group `evr1.<name>`.

Built-in components register themselves in the modules listed here, which are imported on the
first lookup (never at `import evr1`). Each registry whose entries evr1 calls checks, when an
entry is registered, that it accepts the calls evr1 makes, its methods included, and has the
attributes evr1 reads (`CONVENTIONS`, documented in docs/plugins.md): a wrong signature fails at
registration, naming the problem, not at step 1.
"""

from evr1.registry.base import (
    Call,
    Convention,
    Description,
    DuplicateNameError,
    RegistrationError,
    Registry,
    UnknownNameError,
    call_problems,
    called_as,
    is_instance_of,
    requires_params,
)

# How evr1 calls each registry's entries (the call sites: evr1/rewards/execution.py,
# evr1/runner/loop/advantage_phase.py, evr1/runner/learner/learner.py, evr1/runner/loop/train.py,
# evr1/runner/ray/actors.py, evr1/eval/responders.py, evr1/eval/lmms/model.py, evr1/models/loading.py).
CONVENTIONS: dict[str, Convention] = {
    "rewards": Convention(text="fn(inputs, spec) -> list (or @per_sample fn(input, spec))", positional=("inputs", "spec")),
    "advantages": Convention(
        text="fn(scores, group_ids, response_mask, *, spec, offline=None) -> Tensor[B, T]",
        positional=("scores", "group_ids", "response_mask"),
        keywords=("spec", "offline"),
    ),
    "policy_losses": Convention(
        text="fn(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser, offline=None,"
        " behaviour_logprobs=None, ref_logprobs=None, entropy=None, kl_coef=None, staleness=None, rollout_weights=None)"
        " -> (loss, metrics)",
        positional=("logprobs", "old_logprobs", "advantages", "response_mask"),
        keywords=("spec", "normaliser", "offline", "entropy", "kl_coef"),
        sometimes=("behaviour_logprobs", "ref_logprobs", "staleness", "rollout_weights"),
    ),
    "mixers": Convention(
        text="class Mixer(spec, n, *, records, tokenizer, stop_token_id, max_tokens) with online_count(record, step),"
        " mix(records, online, *, step, online_scores) and an attribute uses_online_scores",
        positional=("spec", "n"),
        keywords=("records", "tokenizer", "stop_token_id", "max_tokens"),
        methods={"online_count": Call(("record", "step")), "mix": Call(("records", "online"), ("step", "online_scores"))},
        attributes=("uses_online_scores",),
    ),
    "samplers": Convention(
        text="class Sampler(modalities, *, seed, ratios) with sample(count), state_dict(), load_state_dict(state)",
        positional=("modalities",),
        keywords=("seed", "ratios"),
        methods={"sample": Call(("count",)), "state_dict": Call(), "load_state_dict": Call(("state",))},
    ),
    "engines": Convention(
        text="class Engine with classmethod from_spec(model, rollout, *, device=...), generate(prompts, params),"
        " load_weights(weights) and an attribute version (an int each load_weights increments)",
        positional=("model", "rollout"),
        sometimes=("device",),
        through="from_spec",
        methods={"generate": Call(("prompts", "params")), "load_weights": Call(("weights",))},
        attributes=("version",),
    ),
    "models": Convention(
        text="an object with materialize(cache_dir) -> Path (and optionally family)",
        positional=("cache_dir",),
        through="materialize",
    ),
}


def _checked(name: str, builtins: str) -> Registry:
    """A registry whose entries are checked against `CONVENTIONS[name]` when registered."""
    return Registry(name, builtin_modules=[builtins], check=called_as(CONVENTIONS[name]))


REWARDS: Registry = _checked("rewards", "evr1.rewards.builtin")
ADVANTAGES: Registry = _checked("advantages", "evr1.algos.advantages")
POLICY_LOSSES: Registry = _checked("policy_losses", "evr1.algos.losses")
MIXERS: Registry = _checked("mixers", "evr1.data.mixers")
SAMPLERS: Registry = _checked("samplers", "evr1.data.samplers")
ENGINES: Registry = _checked("engines", "evr1.engines.builtin")
MODELS: Registry = _checked("models", "evr1.models.builtin")
BENCHMARKS: Registry = Registry("benchmarks", builtin_modules=["evr1.eval.benchmarks"])
EXPERIMENTS: Registry = Registry("experiments")
ROLLOUT_CORRECTIONS: Registry = Registry(
    "rollout_corrections", builtin_modules=["evr1.algos.rollout_presets"], check=requires_params()
)

REGISTRIES: dict[str, Registry] = {
    r.name: r
    for r in (
        REWARDS, ADVANTAGES, POLICY_LOSSES, MIXERS, SAMPLERS, ENGINES, MODELS, BENCHMARKS, EXPERIMENTS, ROLLOUT_CORRECTIONS
    )
}

__all__ = [
    "ADVANTAGES",
    "BENCHMARKS",
    "CONVENTIONS",
    "ENGINES",
    "EXPERIMENTS",
    "MIXERS",
    "MODELS",
    "POLICY_LOSSES",
    "REGISTRIES",
    "REWARDS",
    "ROLLOUT_CORRECTIONS",
    "SAMPLERS",
    "Call",
    "Convention",
    "Description",
    "DuplicateNameError",
    "RegistrationError",
    "Registry",
    "UnknownNameError",
    "call_problems",
    "called_as",
    "is_instance_of",
    "requires_params",
]
