"""The offline-online mixers: offline responses tokenised like the policy's, checked up front, flagged, placed, counted."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from cli_inproc import evr1
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.data.mixers import OfflineK, OfflineResponse, Trajectory, tokenise
from evr1.data.records import Record
from evr1.engines.base import RolloutResult
from evr1.errors import ConfigError, Evr1Error
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.registry import MIXERS
from evr1.rewards import RewardRouter
from evr1.runner.loop.reward_phase import reward_input
from evr1.specs import MixerSpec, RewardSpec

ROOT = Path(__file__).resolve().parents[2]


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


def make(name: str, tokenizer, records=(), *, max_tokens: int = 32, n: int = 4, **spec):
    stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return MIXERS.get(name)(MixerSpec(name=name, **spec), n=n, records=records, tokenizer=tokenizer, stop_token_id=stop,
                            max_tokens=max_tokens)


def offline_of(r: Record, tokenizer, max_tokens: int = 32) -> Trajectory:
    """The record's offline trajectory as the trainer gets it: through a mixer (one offline in a group of 2)."""
    mixer = make("offline_k", tokenizer, [r], max_tokens=max_tokens, n=2, k=1)
    groups, _ = mixer.mix([r], rollouts([r], mixer, 1), step=1)
    return groups[0][1]


def tokens(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_offline_tokens_are_the_text_then_the_stop_token(tokenizer, stop: int) -> None:
    t = offline_of(record("r"), tokenizer)
    expected = tokens(tokenizer, "<answer>B</answer>") + [stop]
    assert t.token_ids.tolist() == expected
    assert tokenizer.decode(t.token_ids[:-1]) == "<answer>B</answer>" == t.text
    assert (t.offline, t.finish_reason, t.prompt_index) == (True, "stop", 0)
    assert torch.isnan(t.logprobs).all() and len(t.logprobs) == len(expected)


def test_known_behaviour_logprobs_are_kept(tokenizer) -> None:
    n = len(tokens(tokenizer, "<answer>B</answer>"))
    given = [-0.1 * (i + 1) for i in range(n)]
    t = offline_of(record("r", logprobs=given), tokenizer)
    assert t.logprobs[:n].tolist() == pytest.approx(given)
    assert math.isnan(t.logprobs[n].item())  # the stop token's log-prob was not given


def test_truncation(tokenizer, stop: int) -> None:
    t = offline_of(record("r", offline="<answer>" + "long " * 20 + "</answer>"), tokenizer, max_tokens=5)
    assert len(t) == 5 and t.finish_reason == "length" and stop not in t.token_ids.tolist()


def test_a_truncated_response_is_rewarded_on_the_text_it_keeps(tokenizer) -> None:
    """Cut before its answer, a right response scores what the policy would for those tokens: 0, not 1."""
    full = "Let me think about the colours in this clip carefully. <answer>B</answer>"
    r = record("r", offline=full)
    t = offline_of(r, tokenizer, max_tokens=8)
    kept = tokens(tokenizer, full)[:8]
    assert t.finish_reason == "length" and t.token_ids.tolist() == kept
    assert t.text == tokenizer.decode(kept, skip_special_tokens=True) == "Let me think a"  # as the HF engine decodes
    router = RewardRouter(RewardSpec(strictness="strict"))
    cut, whole = router.score([reward_input(r, t.text, "r#1", None), reward_input(r, full, "r#2", None)])
    assert (cut.components["accuracy"], whole.components["accuracy"]) == (0.0, 1.0)


def test_a_response_that_fits_keeps_its_own_text(tokenizer, stop: int) -> None:
    text = "a  b\n<answer>B</answer>"  # kept as given, not re-decoded
    n = len(tokens(tokenizer, text))
    t = offline_of(record("r", offline=text), tokenizer, max_tokens=n + 1)
    assert (t.finish_reason, t.text, t.token_ids[-1].item()) == ("stop", text, stop)
    t = offline_of(record("r", offline=text), tokenizer, max_tokens=n)  # no room for the stop token: cut
    assert (t.finish_reason, len(t)) == ("length", n)
    assert t.text == tokenizer.decode(tokens(tokenizer, text), skip_special_tokens=True)


@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.sampled_from(["a", "b", " ", "\n", "é", "<answer>", "</answer>", "7"]), max_size=30).map("".join),
       max_tokens=st.integers(1, 12))
def test_offline_text_is_what_its_tokens_say(tokenizer, text: str, max_tokens: int) -> None:
    stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
    t = tokenise(OfflineResponse(text, None, "record 'r'"), 0, tokenizer, stop, max_tokens)
    ids = tokens(tokenizer, text) + [stop]
    assert t.token_ids.tolist() == ids[:max_tokens]
    if len(ids) <= max_tokens:
        assert (t.finish_reason, t.text) == ("stop", text)
    else:
        assert (t.finish_reason, t.text) == ("length", tokenizer.decode(ids[:max_tokens], skip_special_tokens=True))


def test_offline_k_places_k_per_group(tokenizer) -> None:
    mixer = make("offline_k", tokenizer, [record("a"), record("b", offline=None)], k=2)
    records = [record("a"), record("b", offline=None)]
    assert [mixer.online_count(r, 1) for r in records] == [2, 4]
    groups, metrics = mixer.mix(records, rollouts(records, mixer, 1), step=1)
    assert [[t.offline for t in g] for g in groups] == [[False, False, True, True], [False] * 4]
    assert all(isinstance(t, Trajectory) for g in groups for t in g)
    assert groups[0][0].logprobs.tolist() == [-0.5, -0.25]  # online keeps the sampler's log-probs
    assert metrics == {"mixer/groups_mixed": 1.0, "mixer/offline_share": 2 / 8, "mixer/offline_truncated": 0.0, "mixer/k": 2.0}


def test_tokenised_once_placed_in_each_group_with_its_prompt_index(tokenizer) -> None:
    records = [record("a"), record("b", offline="<answer>A</answer>")]
    mixer = make("offline_k", tokenizer, records, k=1)
    for order in (records, records[::-1]):  # the cached trajectories take each step's group index
        groups, _ = mixer.mix(order, rollouts(order, mixer, 1), step=1)
        assert [(g[3].prompt_index, g[3].text) for g in groups] == [(i, r.offline_response) for i, r in enumerate(order)]


def test_only_the_records_of_the_run_are_mixed(tokenizer) -> None:
    mixer = make("offline_k", tokenizer, [record("a")], k=1)
    assert mixer.online_count(record("other"), 1) == 4  # a record the mixer was not built with has nothing to mix


def test_truncated_offline_responses_are_counted(tokenizer, stop: int) -> None:
    records = [record("long", offline="<answer>" + "long " * 20 + "</answer>"), record("short")]
    mixer = make("offline_k", tokenizer, records, max_tokens=6, k=2)
    groups, metrics = mixer.mix(records, rollouts(records, mixer, 1), step=1)
    assert [t.finish_reason for t in groups[0][2:]] == ["length", "length"]
    assert groups[1][2].finish_reason == "stop" and groups[1][2].token_ids[-1] == stop  # EOS kept when it fits
    assert metrics["mixer/offline_truncated"] == 2.0


@pytest.mark.parametrize(
    ("k", "decay_steps", "expected"),  # ceil(k (S + 1 - step) / S), 0 after step S
    [(2, 4, [2, 2, 1, 1, 0, 0]), (3, 2, [3, 2, 0, 0, 0, 0]), (1, 1, [1, 0, 0, 0, 0, 0]), (3, 6, [3, 3, 2, 2, 1, 1])],
)
def test_decay_schedule(tokenizer, k: int, decay_steps: int, expected: list[int]) -> None:
    mixer = make("offline_k_decay", tokenizer, [record("a")], k=k, decay_steps=decay_steps)
    assert [mixer.k_at(step) for step in range(1, 7)] == expected
    assert [mixer.online_count(record("a"), step) for step in range(1, 7)] == [4 - k for k in expected]


def test_decay_mixes_the_scheduled_k(tokenizer) -> None:
    records = [record("a")]
    mixer = make("offline_k_decay", tokenizer, records, k=2, decay_steps=4)
    for step, offline in [(1, 2), (3, 1), (5, 0)]:
        groups, metrics = mixer.mix(records, rollouts(records, mixer, step), step=step)
        assert [t.offline for t in groups[0]] == [False] * (4 - offline) + [True] * offline
        assert (metrics["mixer/k"], metrics["mixer/groups_mixed"], metrics["mixer/offline_share"]) == (offline, min(offline, 1), offline / 4)


def test_threshold_replaces_online_responses_of_low_groups_only(tokenizer) -> None:
    records = [record("low"), record("at_threshold"), record("low_without", offline=None)]
    mixer = make("offline_k_threshold", tokenizer, records, k=2, threshold=0.5)
    assert [mixer.online_count(r, 1) for r in records] == [4, 4, 4]
    scores = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]]  # accuracies 0.25, 0.5, 0
    groups, metrics = mixer.mix(records, rollouts(records, mixer, 1), step=1, online_scores=scores)
    assert [[t.offline for t in g] for g in groups] == [[False, False, True, True], [False] * 4, [False] * 4]
    assert [t.text for t in groups[0][:2]] == ["online0", "online1"]  # the last k online were dropped
    assert metrics == {
        "mixer/groups_mixed": 1.0, "mixer/offline_share": 2 / 12, "mixer/offline_truncated": 0.0,
        "mixer/online_dropped": 2.0, "mixer/low_unmixed": 1.0,
    }
    with pytest.raises(Evr1Error, match="needs the online responses' accuracies"):
        mixer.mix(records, rollouts(records, mixer, 1), step=1)


@pytest.mark.parametrize(
    ("scores", "mixed"),  # threshold 0.5; None: the reward does not apply to that response
    [
        ([1, None, None, None], False),  # accuracy 1 over the one applicable response (not 0.25)
        ([None, 0, None, 1], False),  # 0.5: not below
        ([None, 0, 0, 1], True),  # 1/3
        ([None, None, None, None], False),  # nothing to judge the group on
        ([0, None, None, None], True),
    ],
)
def test_threshold_judges_groups_on_their_applicable_scores(tokenizer, scores: list, mixed: bool) -> None:
    mixer = make("offline_k_threshold", tokenizer, [record("a")], k=1, threshold=0.5)
    groups, metrics = mixer.mix([record("a")], rollouts([record("a")], mixer, 1), step=1, online_scores=[scores])
    assert [t.offline for t in groups[0]] == [False, False, False, mixed]
    assert (metrics["mixer/groups_mixed"], metrics["mixer/low_unmixed"]) == (float(mixed), 0.0)


def write_curated(path: Path, rows: list) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_curated_file_rotates_its_responses_by_step(tmp_path: Path, tokenizer) -> None:
    n = len(tokens(tokenizer, "<answer>A</answer>"))
    path = write_curated(tmp_path / "curated.jsonl", [
        {"id": "a", "response": "<answer>A</answer>", "logprobs": [-0.5] * n},
        {"id": "a", "response": "<answer>B</answer>"},
        {"id": "a", "response": "<answer>C</answer>"},
    ])
    records = [record("a"), record("b")]  # the file replaces records' own offline_response: "b" is not mixed
    mixer = make("offline_k", tokenizer, records, k=2, file=path)
    assert [mixer.online_count(r, 1) for r in records] == [2, 4]
    seen = {}
    for step in (1, 2):  # responses (2 step + j) mod 3: step 1 -> 2, 0; step 2 -> 1, 2
        groups, metrics = mixer.mix(records, rollouts(records, mixer, step), step=step)
        seen[step] = [t.text for t in groups[0] if t.offline]
        assert metrics["mixer/groups_mixed"] == 1.0 and not any(t.offline for t in groups[1])
    assert seen == {1: ["<answer>C</answer>", "<answer>A</answer>"], 2: ["<answer>B</answer>", "<answer>C</answer>"]}
    groups, _ = mixer.mix(records, rollouts(records, mixer, 1), step=1)
    assert groups[0][3].logprobs[:n].tolist() == [-0.5] * n and torch.isnan(groups[0][2].logprobs).all()
    fresh = make("offline_k", tokenizer, records, k=2, file=path)  # no state: a resumed run mixes the same
    again, _ = fresh.mix(records, rollouts(records, fresh, 2), step=2)
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
def test_curated_file_errors_name_file_line_and_record(tmp_path: Path, tokenizer, rows: list, message: str) -> None:
    path = write_curated(tmp_path / "curated.jsonl", rows)
    with pytest.raises(Evr1Error, match=message):
        make("offline_k", tokenizer, [record("a")], k=1, file=path)


def test_every_mismatched_curated_response_is_named_when_the_mixer_is_built(tmp_path: Path, tokenizer) -> None:
    n = len(tokens(tokenizer, "<answer>A</answer>"))  # 3
    path = write_curated(tmp_path / "curated.jsonl", [
        {"id": "a", "response": "<answer>A</answer>", "logprobs": [-1.0]},
        {"id": "a", "response": "<answer>A</answer>", "logprobs": [-1.0] * (n + 1)},  # with the stop token's: fine
        {"id": "b", "response": "<answer>A</answer>", "logprobs": [-1.0] * (n + 2)},
    ])
    with pytest.raises(Evr1Error) as err:
        make("offline_k", tokenizer, [record("a"), record("b")], k=1, file=path)
    assert str(err.value) == (
        "2 of 3 offline responses do not match their log-probs (fix them or drop the log-probs):\n"
        f"  {path}:1 (record 'a'): logprobs has 1 values but response is 3 tokens (+1 for the stop token) with this model's"
        " tokenizer\n"
        f"  {path}:3 (record 'b'): logprobs has 5 values but response is 3 tokens (+1 for the stop token) with this model's"
        " tokenizer"
    )


def test_every_mismatched_record_is_named_when_the_mixer_is_built(tokenizer) -> None:
    records = [record("bad", logprobs=[-1.0]), record("fine", logprobs=[-1.0] * 3), record("worse", logprobs=[-1.0] * 9)]
    with pytest.raises(Evr1Error) as err:
        make("offline_k", tokenizer, records, k=1)
    lines = str(err.value).splitlines()
    assert lines[0] == "2 of 3 offline responses do not match their log-probs (fix them or drop the log-probs):"
    assert lines[1:] == [
        f"  record {rid!r}: offline_logprobs has {n} values but offline_response is 3 tokens (+1 for the stop token) with"
        " this model's tokenizer"
        for rid, n in (("bad", 1), ("worse", 9))
    ]


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
def test_spec_errors(tokenizer, name: str, spec: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(name, tokenizer, **spec)


@pytest.mark.parametrize(
    ("spec", "stray"),
    [
        ({"k": 2, "threshold": 0.5}, "k=2, threshold=0.5"),
        ({"file": "c.jsonl"}, "file='c.jsonl'"),
        ({"decay_steps": 10}, "decay_steps=10"),
        ({"k": 1, "file": "c.jsonl", "threshold": 1.0, "decay_steps": 3}, "k=1, file='c.jsonl', threshold=1.0, decay_steps=3"),
    ],
)
def test_mixer_settings_without_a_mixer_name_are_refused(spec: dict, stray: str) -> None:
    with pytest.raises(ValueError) as err:
        MixerSpec(**spec)
    assert (
        f"{stray} given without mixer.name, so nothing would be mixed: set mixer.name (one of offline_k, offline_k_decay,"
        " offline_k_threshold), or keep k=0 and file, threshold, decay_steps None to train on-policy"
    ) in str(err.value)


def test_no_mixer_and_named_mixers_validate() -> None:
    assert MixerSpec().name is None
    assert MixerSpec(name="offline_k_threshold", k=1, threshold=0.5).threshold == 0.5


def test_the_cli_refuses_mixer_settings_without_a_mixer() -> None:
    out = evr1("show", "quickstart", "--set", "mixer.name=None", cwd=ROOT)
    assert out.returncode == 2, out.stdout[-2000:]
    assert "mixer: k=1 given without mixer.name" in out.stderr


def test_wrong_online_count_names_the_record(tokenizer) -> None:
    mixer = make("offline_k", tokenizer, [record("a")], k=1)
    assert isinstance(mixer, OfflineK)
    with pytest.raises(Evr1Error, match="record 'a': expected 3 online responses, got 1"):
        mixer.mix([record("a")], [[online(0, 0)]], step=1)
