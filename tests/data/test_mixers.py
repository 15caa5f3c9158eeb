"""The offline-online mixers: offline responses tokenised like the policy's, flagged, placed, counted."""

from __future__ import annotations

import json
import math
from pathlib import Path

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
    return RolloutResult(prompt_index, k, torch.tensor([5, 6]), torch.tensor([-0.5, -0.25]), "stop", f"online{k}")


def rollouts(records: list[Record], mixer, step: int) -> list[list[RolloutResult]]:
    return [[online(i, k) for k in range(mixer.online_count(r, step))] for i, r in enumerate(records)]


def make(name: str, records=(), **spec):
    return MIXERS.get(name)(MixerSpec(name=name, **spec), n=4, records=records)


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
    mixer = make("offline_k", k=2)
    records = [record("a"), record("b", offline=None)]
    assert [mixer.online_count(r, 1) for r in records] == [2, 4]
    groups, metrics = mixer.mix(records, rollouts(records, mixer, 1), step=1, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)
    assert [[t.offline for t in g] for g in groups] == [[False, False, True, True], [False] * 4]
    assert all(isinstance(t, Trajectory) for g in groups for t in g)
    assert groups[0][0].logprobs.tolist() == [-0.5, -0.25]  # online keeps the sampler's log-probs
    assert metrics == {"mixer/groups_mixed": 1.0, "mixer/offline_share": 2 / 8, "mixer/offline_truncated": 0.0, "mixer/k": 2.0}


def test_truncated_offline_responses_are_counted(tokenizer, stop: int) -> None:
    mixer = make("offline_k", k=2)
    records = [record("long", offline="<answer>" + "long " * 20 + "</answer>"), record("short")]
    groups, metrics = mixer.mix(records, rollouts(records, mixer, 1), step=1, tokenizer=tokenizer, stop_token_id=stop, max_tokens=6)
    assert [t.finish_reason for t in groups[0][2:]] == ["length", "length"]
    assert groups[1][2].finish_reason == "stop" and groups[1][2].token_ids[-1] == stop  # EOS kept when it fits
    assert metrics["mixer/offline_truncated"] == 2.0


@pytest.mark.parametrize(
    ("k", "decay_steps", "expected"),  # ceil(k (S + 1 - step) / S), 0 after step S
    [(2, 4, [2, 2, 1, 1, 0, 0]), (3, 2, [3, 2, 0, 0, 0, 0]), (1, 1, [1, 0, 0, 0, 0, 0]), (3, 6, [3, 3, 2, 2, 1, 1])],
)
def test_decay_schedule(k: int, decay_steps: int, expected: list[int]) -> None:
    mixer = make("offline_k_decay", k=k, decay_steps=decay_steps)
    assert [mixer.k_at(step) for step in range(1, 7)] == expected
    assert [mixer.online_count(record("a"), step) for step in range(1, 7)] == [4 - k for k in expected]


def test_decay_mixes_the_scheduled_k(tokenizer, stop: int) -> None:
    mixer = make("offline_k_decay", k=2, decay_steps=4)
    records = [record("a")]
    for step, offline in [(1, 2), (3, 1), (5, 0)]:
        groups, metrics = mixer.mix(records, rollouts(records, mixer, step), step=step, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)
        assert [t.offline for t in groups[0]] == [False] * (4 - offline) + [True] * offline
        assert (metrics["mixer/k"], metrics["mixer/groups_mixed"], metrics["mixer/offline_share"]) == (offline, min(offline, 1), offline / 4)


def test_threshold_replaces_online_responses_of_low_groups_only(tokenizer, stop: int) -> None:
    mixer = make("offline_k_threshold", k=2, threshold=0.5)
    records = [record("low"), record("at_threshold"), record("low_without", offline=None)]
    assert [mixer.online_count(r, 1) for r in records] == [4, 4, 4]
    scores = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]]  # accuracies 0.25, 0.5, 0
    groups, metrics = mixer.mix(
        records, rollouts(records, mixer, 1), step=1, online_scores=scores, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32
    )
    assert [[t.offline for t in g] for g in groups] == [[False, False, True, True], [False] * 4, [False] * 4]
    assert [t.text for t in groups[0][:2]] == ["online0", "online1"]  # the last k online were dropped
    assert metrics == {
        "mixer/groups_mixed": 1.0, "mixer/offline_share": 2 / 12, "mixer/offline_truncated": 0.0,
        "mixer/online_dropped": 2.0, "mixer/low_unmixed": 1.0,
    }
    with pytest.raises(Evr1Error, match="needs the online responses' accuracies"):
        mixer.mix(records, rollouts(records, mixer, 1), step=1, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)


def write_curated(path: Path, rows: list) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_curated_file_rotates_its_responses_by_step(tmp_path: Path, tokenizer, stop: int) -> None:
    n = len(tokenizer("<answer>A</answer>", add_special_tokens=False)["input_ids"])
    path = write_curated(tmp_path / "curated.jsonl", [
        {"id": "a", "response": "<answer>A</answer>", "logprobs": [-0.5] * n},
        {"id": "a", "response": "<answer>B</answer>"},
        {"id": "a", "response": "<answer>C</answer>"},
    ])
    records = [record("a"), record("b")]  # the file replaces records' own offline_response: "b" is not mixed
    mixer = make("offline_k", records, k=2, file=path)
    assert [mixer.online_count(r, 1) for r in records] == [2, 4]
    seen = {}
    for step in (1, 2):  # responses (2 step + j) mod 3: step 1 -> 2, 0; step 2 -> 1, 2
        groups, metrics = mixer.mix(records, rollouts(records, mixer, step), step=step, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)
        seen[step] = [t.text for t in groups[0] if t.offline]
        assert metrics["mixer/groups_mixed"] == 1.0 and not any(t.offline for t in groups[1])
    assert seen == {1: ["<answer>C</answer>", "<answer>A</answer>"], 2: ["<answer>B</answer>", "<answer>C</answer>"]}
    groups, _ = mixer.mix(records, rollouts(records, mixer, 1), step=1, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)
    assert groups[0][3].logprobs[:n].tolist() == [-0.5] * n and torch.isnan(groups[0][2].logprobs).all()
    fresh = make("offline_k", records, k=2, file=path)  # no state: a resumed run mixes the same
    again, _ = fresh.mix(records, rollouts(records, fresh, 2), step=2, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)
    assert [t.text for t in again[0] if t.offline] == seen[2]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"id": "a", "response": "x"}, "{not json"], r"curated.jsonl:2: not valid JSON"),
        ([{"id": "zz", "response": "x"}], r"curated.jsonl:1 \(record 'zz'\): no training record has this id"),
        ([{"id": "a"}], r"curated.jsonl:1: expected an object with string fields \"id\" and \"response\""),
        ([[1, 2]], r"curated.jsonl:1: expected an object"),
        ([{"id": "a", "response": "x", "logprobs": "no"}], r"curated.jsonl:1 \(record 'a'\): \"logprobs\" must be a list of numbers"),
        ([{"id": "a", "response": "x", "score": 1}], r"curated.jsonl:1 \(record 'a'\): unknown field\(s\) score"),
        ([], r"holds no curated responses"),
    ],
)
def test_curated_file_errors_name_file_line_and_record(tmp_path: Path, rows: list, message: str) -> None:
    path = write_curated(tmp_path / "curated.jsonl", rows)
    with pytest.raises(Evr1Error, match=message):
        make("offline_k", [record("a")], k=1, file=path)


def test_curated_logprobs_mismatch_names_file_line(tmp_path: Path, tokenizer, stop: int) -> None:
    path = write_curated(tmp_path / "curated.jsonl", [{"id": "a", "response": "<answer>A</answer>", "logprobs": [-1.0]}])
    mixer = make("offline_k", [record("a")], k=1, file=path)
    with pytest.raises(Evr1Error, match=r"curated.jsonl:1 \(record 'a'\): offline_logprobs has 1 values"):
        mixer.mix([record("a")], [[online(0, k) for k in range(3)]], step=1, tokenizer=tokenizer, stop_token_id=stop, max_tokens=32)


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("offline_k", {"k": 4}, "mixer offline_k needs 0 < k < rollout.n, got k=4, n=4"),
        ("offline_k", {"k": 1, "threshold": 0.5}, "mixer.threshold does not apply to mixer offline_k"),
        ("offline_k_threshold", {"k": 1}, "mixer offline_k_threshold needs mixer.threshold"),
        ("offline_k_decay", {"k": 1}, "mixer offline_k_decay needs mixer.decay_steps"),
        ("offline_k_decay", {"k": 1, "decay_steps": 3, "threshold": 0.5}, "mixer.threshold does not apply to mixer offline_k_decay"),
        ("offline_k", {"k": 1, "file": "/nonexistent/curated.jsonl"}, "mixer.file '/nonexistent/curated.jsonl' does not exist"),
    ],
)
def test_spec_errors(name: str, spec: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(name, **spec)


def test_wrong_online_count_names_the_record(tokenizer, stop: int) -> None:
    mixer = OfflineK(MixerSpec(name="offline_k", k=1), n=4)
    with pytest.raises(Evr1Error, match="record 'a': expected 3 online responses, got 1"):
        mixer.mix([record("a")], [[online(0, 0)]], step=1, tokenizer=tokenizer, stop_token_id=stop, max_tokens=8)
