"""Registering a component whose signature evr1 cannot call fails at once, saying why."""

from __future__ import annotations

import pytest

from evr1.registry import (
    ADVANTAGES,
    ENGINES,
    MIXERS,
    MODELS,
    POLICY_LOSSES,
    REGISTRIES,
    REWARDS,
    SAMPLERS,
    RegistrationError,
)


# -- one function per case; the table below says which are accepted ---------------------------
def reward_batch(inputs, spec): ...
def reward_kwargs(inputs, spec, **kwargs): ...
def reward_star(*args): ...
def reward_one(inp): ...
def reward_keyword_spec(inputs, *, spec): ...
def reward_extra(inputs, spec, judge): ...


def adv_ok(scores, group_ids, response_mask, *, spec, offline=None): ...
def adv_kwargs(scores, group_ids, response_mask, **kwargs): ...
def adv_no_offline(scores, group_ids, response_mask, *, spec): ...
def adv_two(scores, response_mask, *, spec, offline=None): ...
def adv_extra(scores, group_ids, response_mask, *, spec, offline=None, temperature): ...
def adv_spec_by_position(scores, group_ids, response_mask, spec, offline=None): ...
def adv_spec_second(scores, spec, group_ids, response_mask=None, offline=None): ...


def loss_full(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser, offline=None,
              behaviour_logprobs=None, ref_logprobs=None, entropy=None, kl_coef=None, staleness=None, rollout_weights=None): ...  # fmt: skip
def loss_kwargs(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser, **kwargs): ...
def loss_narrow(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser): ...
def loss_required_ref(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser, ref_logprobs, **kwargs): ...
def loss_positional_only(logprobs, old_logprobs, advantages, response_mask, spec, /, **kwargs): ...


class SamplerOk:
    def __init__(self, modalities, *, seed, ratios=None): ...
    def sample(self, n): ...
    def state_dict(self): ...
    def load_state_dict(self, state): ...


class SamplerNoRatios(SamplerOk):
    def __init__(self, modalities, *, seed): ...


class SamplerNoState:
    def __init__(self, modalities, **kwargs): ...
    def sample(self, n): ...


class SamplerNoCount(SamplerOk):
    def sample(self): ...  # evr1 passes the step's prompt count


class SamplerStatic(SamplerOk):
    @staticmethod
    def sample(n): ...  # no instance argument: fine


class SamplerLoadNothing(SamplerOk):
    def load_state_dict(self): ...


class MixerOk:
    uses_online_scores = False

    def __init__(self, spec, n, *, records, tokenizer, stop_token_id, max_tokens): ...
    def online_count(self, record, step): ...
    def mix(self, records, online, *, step, online_scores=None): ...


class MixerNoTokens(MixerOk):
    def __init__(self, spec, n, *, records, tokenizer): ...


class MixerSetsScoresFlag:  # the attribute set per instance only: not visible on the class, refused
    def __init__(self, spec, n, **kwargs):
        self.uses_online_scores = True

    def online_count(self, record, step): ...
    def mix(self, records, online, **kwargs): ...


class MixerNoScoresFlag:
    def __init__(self, spec, n, **kwargs): ...
    def online_count(self, record, step): ...
    def mix(self, records, online, *, step, online_scores=None): ...


class MixerNoOnlineScores(MixerOk):
    def mix(self, records, online, *, step): ...


class MixerMixTakesTokenizer(MixerOk):  # mix() no longer gets the tokenizer (the constructor does)
    def mix(self, records, online, tokenizer, *, step, online_scores=None): ...


class MixerStepByName(MixerOk):
    def online_count(self, record, *, step): ...


class EngineOk:  # sync_from is not needed: evr1 never calls it
    version: int

    def __init__(self):
        self.version = 0

    @classmethod
    def from_spec(cls, model, rollout, *, device="cpu"): ...
    def generate(self, prompts, params): ...
    def load_weights(self, weights): ...


class EngineDeclaresVersion:
    version: int

    @classmethod
    def from_spec(cls, model, rollout, **kwargs): ...
    def generate(self, prompts, params): ...
    def load_weights(self, weights): ...


class EngineNeedsDevice(EngineOk):
    @classmethod
    def from_spec(cls, model, rollout, *, device): ...


class EngineNoFromSpec:
    version = 0

    def generate(self, prompts, params): ...
    def load_weights(self, weights): ...


class EngineNoVersion:
    @classmethod
    def from_spec(cls, model, rollout, *, device="cpu"): ...
    def generate(self, prompts, params): ...
    def load_weights(self, weights): ...


class EngineNoLoadWeights(EngineDeclaresVersion):
    load_weights = None


class EngineGeneratesOne(EngineOk):
    def generate(self, prompts): ...


class ModelOk:
    def materialize(self, cache_dir): ...


class ModelNoArg:
    def materialize(self): ...


CASES = [  # registry, entry, None (accepted) or the fragments the error must hold
    (REWARDS, reward_batch, None),
    (REWARDS, reward_kwargs, None),
    (REWARDS, reward_star, None),
    (REWARDS, reward_one, ["takes 1 positional argument(s), evr1 passes 2 (inputs, spec)"]),
    (REWARDS, reward_keyword_spec, ["takes 1 positional argument(s), evr1 passes 2"]),
    (REWARDS, reward_extra, ["required parameter(s) judge that evr1 never passes"]),
    (ADVANTAGES, adv_ok, None),
    (ADVANTAGES, adv_kwargs, None),
    (ADVANTAGES, adv_no_offline, ["unexpected keyword argument(s) offline", "add **kwargs"]),
    (ADVANTAGES, adv_two, ["takes 2 positional argument(s), evr1 passes 3 (scores, group_ids, response_mask)"]),
    (ADVANTAGES, adv_extra, ["required parameter(s) temperature that evr1 never passes"]),
    (ADVANTAGES, adv_spec_by_position, None),  # keywords may name ordinary parameters
    (ADVANTAGES, adv_spec_second, ["gets spec both by position and by name"]),
    (POLICY_LOSSES, loss_full, None),
    (POLICY_LOSSES, loss_kwargs, None),
    (POLICY_LOSSES, loss_narrow, ["unexpected keyword argument(s) offline, entropy, kl_coef, behaviour_logprobs, ref_logprobs, staleness, rollout_weights"]),
    (POLICY_LOSSES, loss_required_ref, ["ref_logprobs need a default (evr1 passes them only sometimes)"]),
    (POLICY_LOSSES, loss_positional_only, ["positional-only parameter(s) spec that evr1 passes by name"]),
    (SAMPLERS, SamplerOk, None),
    (SAMPLERS, SamplerNoRatios, ["unexpected keyword argument(s) ratios"]),
    (SAMPLERS, SamplerNoState, ["has no method(s) state_dict, load_state_dict"]),
    (SAMPLERS, SamplerNoCount, [("SamplerNoCount.sample(self) cannot be called the way evr1 calls it: takes 1 positional"
                                 " argument(s), evr1 passes 2 (self, count)")]),
    (SAMPLERS, SamplerStatic, None),
    (SAMPLERS, SamplerLoadNothing, ["load_state_dict(self) cannot be called", "evr1 passes 2 (self, state)"]),
    (MIXERS, MixerOk, None),
    (MIXERS, MixerNoTokens, ["unexpected keyword argument(s) stop_token_id, max_tokens"]),
    (MIXERS, MixerSetsScoresFlag, [("has no attribute(s) uses_online_scores, which evr1 reads (set it on the class, or"
                                    " declare it in the class body")]),
    (MIXERS, MixerNoScoresFlag, ["has no attribute(s) uses_online_scores, which evr1 reads"]),
    (MIXERS, MixerNoOnlineScores, [("MixerNoOnlineScores.mix(self, records, online, *, step) cannot be called the way"
                                    " evr1 calls it: unexpected keyword argument(s) online_scores")]),
    (MIXERS, MixerMixTakesTokenizer, ["mix(self, records, online, tokenizer, *, step, online_scores=None) cannot be called",
                                      "required parameter(s) tokenizer that evr1 never passes"]),
    (MIXERS, MixerStepByName, ["online_count(self, record, *, step) cannot be called",
                               "takes 2 positional argument(s), evr1 passes 3 (self, record, step)"]),
    (ENGINES, EngineOk, None),
    (ENGINES, EngineDeclaresVersion, None),
    (ENGINES, EngineNeedsDevice, ["device need a default"]),
    (ENGINES, EngineNoFromSpec, ["has no method(s) from_spec"]),
    (ENGINES, EngineNoVersion, ["has no attribute(s) version, which evr1 reads"]),
    (ENGINES, EngineNoLoadWeights, ["has no method(s) load_weights"]),
    (ENGINES, EngineGeneratesOne, ["generate(self, prompts) cannot be called", "evr1 passes 3 (self, prompts, params)"]),
    (MODELS, ModelOk(), None),
    (MODELS, ModelNoArg(), ["takes 0 positional argument(s), evr1 passes 1 (cache_dir)"]),
    (MODELS, "not a model", ["has no method(s) materialize"]),
]


@pytest.mark.parametrize(("registry", "entry", "fragments"), CASES, ids=lambda v: getattr(v, "__name__", None) or getattr(v, "name", None))
def test_registration_checks_the_calling_convention(registry, entry, fragments: list[str] | None) -> None:
    name = f"conventions_test/{getattr(entry, '__name__', type(entry).__name__)}"
    try:
        if fragments is None:
            registry.register(name, entry)
            assert registry[name] is entry
            return
        with pytest.raises(RegistrationError) as info:
            registry.register(name, entry)
        message = str(info.value)
        assert message.startswith(f"cannot register {registry.name} {name!r}: ")
        assert "Expected: " in message
        for fragment in fragments:
            assert fragment in message
        assert name not in registry
    finally:
        registry.unregister(name)


def test_the_narrow_loss_of_the_report_names_the_expected_signature() -> None:
    with pytest.raises(RegistrationError) as info:
        POLICY_LOSSES.register("conventions_test/narrow", loss_narrow)
    assert str(info.value) == (
        "cannot register policy_losses 'conventions_test/narrow': loss_narrow(logprobs, old_logprobs, advantages,"
        " response_mask, *, spec, normaliser) cannot be called the way evr1 calls it: unexpected keyword argument(s)"
        " offline, entropy, kl_coef, behaviour_logprobs, ref_logprobs, staleness, rollout_weights. Expected:"
        " fn(logprobs, old_logprobs, advantages, response_mask, *, spec, normaliser, offline=None,"
        " behaviour_logprobs=None, ref_logprobs=None, entropy=None, kl_coef=None, staleness=None, rollout_weights=None)"
        " -> (loss, metrics) (add **kwargs to take keywords you do not use)"
    )


BUILT_IN = {"rewards": "multiple_choice", "advantages": "grpo", "policy_losses": "ppo_clip", "mixers": "offline_k",
            "samplers": "uniform", "engines": "hf", "models": "tiny-qwen2.5-vl", "benchmarks": "mvbench"}  # one each


@pytest.mark.parametrize("kind", sorted(BUILT_IN))
def test_every_builtin_passes_its_registrys_check(kind: str) -> None:
    """The built-ins are found (their modules exist and register them) and each passes the registry's check, run
    again here under a test name: a built-in the check refuses raises."""
    registry = REGISTRIES[kind]
    builtins = [name for name in registry.names() if registry.describe_origin(name) == "builtin"]
    assert BUILT_IN[kind] in builtins
    for name in builtins:
        registry.register("conventions_test/again", registry.get(name))
        registry.unregister("conventions_test/again")


def test_every_registry_but_experiments_has_built_ins() -> None:
    assert set(REGISTRIES) - set(BUILT_IN) == {"experiments"}  # experiments: files, entry points, none registered


def test_subscript_is_get_with_the_same_errors() -> None:
    assert REWARDS["numerical"] is REWARDS.get("numerical")
    with pytest.raises(KeyError, match="unknown rewards name 'numericl'. Did you mean 'numerical'?"):
        REWARDS["numericl"]
