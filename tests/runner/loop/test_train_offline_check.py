"""The trainer's side of the mixers: offline responses checked at start, n/a online scores passed on as None."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from evr1.data.records import Record, read_records
from evr1.errors import Evr1Error
from evr1.rewards import RewardRouter
from evr1.runner.loop.reward_phase import Scorer, reward_input
from evr1.runner.loop.train import Trainer
from evr1.specs import CodeSandboxSpec, RewardSpec


def quickstart(tmp_path: Path, *sets: str):
    from evr1.experiment import apply_overrides, build_experiment
    from evr1.experiment_files import load_config

    data = tmp_path / "data"
    cfg, _ = load_config("quickstart")
    apply_overrides(cfg, [
        f"data.synth.out='{data}'", "data.synth.n_train=4", "data.synth.n_val=2", "data.synth.blank_control=False",
        f"data.train=('{data}/train.jsonl',)", f"data.val=('{data}/val.jsonl',)", f"data.cache.path='{tmp_path}/cache.lmdb'",
        f"model.cache_dir='{tmp_path}/models'", *sets,
    ])
    return build_experiment(cfg)


def test_every_bad_curated_response_stops_the_trainer_before_the_cache_is_built(tmp_path: Path) -> None:
    from evr1.runner.loop.datasets import ensure_synthetic

    exp = quickstart(tmp_path, f"mixer.file='{tmp_path}/curated.jsonl'")
    ensure_synthetic(exp.data.synth)
    ids = [r.id for r in read_records(tmp_path / "data" / "train.jsonl")]
    rows = [
        {"id": ids[0], "response": "<answer>A</answer>", "logprobs": [-1.0]},
        {"id": ids[1], "response": "<answer>A</answer>"},
        {"id": ids[2], "response": "<answer>A</answer>", "logprobs": [-1.0] * 9},
    ]
    (tmp_path / "curated.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(Evr1Error) as err:
        Trainer(exp, tmp_path / "run")
    lines = str(err.value).splitlines()
    assert lines[0].startswith("2 of 3 offline responses do not match their log-probs")
    assert [line.split(": ", 1)[0] for line in lines[1:]] == [
        f"  {tmp_path}/curated.jsonl:1 (record {ids[0]!r})", f"  {tmp_path}/curated.jsonl:3 (record {ids[2]!r})"
    ]
    assert all("logprobs has" in line and "but response is" in line for line in lines[1:])
    assert not (tmp_path / "cache.lmdb").exists()  # stopped before the cache build (and before any worker)


class LocalScorer(Scorer):
    """The trainer's scorer, with the real router in-process instead of Ray reward workers."""

    def __init__(self, spec: RewardSpec) -> None:
        self.router = RewardRouter(spec)

    def score(self, records, texts, ids, step, shown=None):
        inputs = [reward_input(r, t, i, shown) for r, t, i in zip(records, texts, ids)]
        return inputs, self.router.score(inputs)


def response(text: str) -> SimpleNamespace:
    return SimpleNamespace(prompt_index=0, token_ids=torch.tensor([1]), logprobs=torch.tensor([0.0]), finish_reason="stop",
                           text=text)


def test_online_accuracy_is_none_where_the_reward_does_not_apply() -> None:
    """Python code is not applicable with execution off; a multiple-choice answer scores as usual."""
    code = Record(id="c", problem="Write f.", problem_type="code", answer={"language": "python", "tests": ["assert f(1) == 2"]})
    choice = Record(id="m", problem="Which?", problem_type="multiple_choice", answer="A", options=["A. x", "B. y"])
    scorer = LocalScorer(RewardSpec(code=CodeSandboxSpec(execute=False)))
    online = [[response("<answer>def f(x): return x + 1</answer>")] * 2,
              [response("<answer>A</answer>"), response("<answer>B</answer>")]]
    scored = scorer.online_accuracy([code, choice], online, step=1)
    assert scored.scores == [[None, None], [1.0, 0.0]]
    assert [i.sample_id for i in scored.inputs] == ["c#0", "c#1", "m#2", "m#3"] and len(scored.outputs) == 4


def test_a_failed_reward_is_no_verdict_for_the_threshold_mixer() -> None:
    """A judge outage is not a wrong answer: its responses must not make every group 'low'."""
    judged = Record(id="j", problem="Describe it.", problem_type="open_ended", answer="a red ball")
    scorer = LocalScorer(RewardSpec(routes={"open_ended": "open_ended_judge"},
                               judge={"base_url": "http://127.0.0.1:9/v1", "model": "judge", "retries": 0, "timeout_s": 2.0}))
    scored = scorer.online_accuracy([judged], [[response("<answer>a red ball</answer>")]], step=1)
    assert scored.outputs[0].error is not None and scored.outputs[0].applicable  # the router's failed output
    assert scored.scores == [[None]]
