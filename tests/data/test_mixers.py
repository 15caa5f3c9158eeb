"""The offline-online mixer: offline responses tokenised like the policy's, flagged, counted."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.data.mixers import OfflineK, Trajectory, offline_trajectory
from evr1.data.records import Record
from evr1.engines.base import RolloutResult
from evr1.errors import ConfigError, Evr1Error
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.registry import MIXERS
from evr1.specs import MixerSpec


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    return load_processor(tiny_spec("qwen2.5-vl", tmp_path_factory.mktemp("models"))).tokenizer


@pytest.fixture(scope="module")
def stop(tokenizer) -> int:
    return tokenizer.convert_tokens_to_ids("<|im_end|>")


def record(rid: str, offline: str | None = "<answer>B</answer>", logprobs=None) -> Record:
    return Record(id=rid, problem="q", problem_type="multiple_choice", answer="B", options=["x", "y"],
                  offline_response=offline, offline_logprobs=logprobs)


def online(prompt_index: int, k: int) -> RolloutResult:
    return RolloutResult(prompt_index, k, torch.tensor([5, 6]), torch.tensor([-0.5, -0.25]), "stop", "ab")


def test_offline_tokens_are_the_text_then_the_stop_token(tokenizer, stop: int) -> None:
    t = offline_trajectory(record("r"), 3, tokenizer, stop, max_tokens=32)
    expected = tokenizer("<answer>B</answer>", add_special_tokens=False)["input_ids"] + [stop]
    assert t.token_ids.tolist() == expected
    assert tokenizer.decode(t.token_ids[:-1]) == "<answer>B</answer>"
    assert (t.offline, t.finish_reason, t.prompt_index) == (True, "stop", 3)
    assert torch.isnan(t.logprobs).all() and len(t.logprobs) == len(expected)


def test_known_behaviour_logprobs_are_kept(tokenizer, stop: int) -> None:
    n = len(tokenizer("<answer>B</answer>", add_special_tokens=False)["input_ids"])
    given = [-0.1 * (i + 1) for i in range(n)]
    t = offline_trajectory(record("r", logprobs=given), 0, tokenizer, stop, max_tokens=32)
    assert t.logprobs[:n].tolist() == pytest.approx(given)
    assert math.isnan(t.logprobs[n].item())  # the stop token's log-prob was not given


def test_mismatched_logprobs_name_the_record(tokenizer, stop: int) -> None:
    with pytest.raises(Evr1Error, match=r"record 'bad': offline_logprobs has 1 values but offline_response is \d+ tokens"):
        offline_trajectory(record("bad", logprobs=[-1.0]), 0, tokenizer, stop, max_tokens=32)


def test_truncation(tokenizer, stop: int) -> None:
    t = offline_trajectory(record("r", offline="<answer>" + "long " * 20 + "</answer>"), 0, tokenizer, stop, max_tokens=5)
    assert len(t) == 5 and t.finish_reason == "length" and stop not in t.token_ids.tolist()


def test_offline_k_places_k_per_group(tokenizer, stop: int) -> None:
    mixer = MIXERS.get("offline_k")(MixerSpec(name="offline_k", k=2), n=4)
    records = [record("a"), record("b", offline=None)]
    assert [mixer.online_count(r) for r in records] == [2, 4]
    results = [[online(0, k) for k in range(2)], [online(1, k) for k in range(4)]]
    groups, metrics = mixer.mix(records, results, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)
    assert [[t.offline for t in g] for g in groups] == [[False, False, True, True], [False] * 4]
    assert all(isinstance(t, Trajectory) for g in groups for t in g)
    assert groups[0][0].logprobs.tolist() == [-0.5, -0.25]  # online keeps the sampler's log-probs
    assert metrics == {"mixer/groups_mixed": 1.0, "mixer/offline_share": 2 / 8, "mixer/offline_truncated": 0.0}


def test_offline_k_errors(tokenizer, stop: int) -> None:
    with pytest.raises(ConfigError, match="needs 0 < k < rollout.n, got k=4, n=4"):
        OfflineK(MixerSpec(name="offline_k", k=4), n=4)
    mixer = OfflineK(MixerSpec(name="offline_k", k=1), n=4)
    with pytest.raises(Evr1Error, match="record 'a': expected 3 online responses, got 1"):
        mixer.mix([record("a")], [[online(0, 0)]], tokenizer=tokenizer, stop_token_id=stop, max_tokens=8)
