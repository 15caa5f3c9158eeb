"""The synthetic data and the rewards agree: every stored answer scores 1, a wrong one 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.data.records import read_records
from evr1.data.synth import generate
from evr1.rewards import RewardInput, RewardRouter
from evr1.specs import RewardSpec


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list:
    out = Path(tmp_path_factory.mktemp("synth"))
    generate(out, tasks=("all",), n_train=45, n_val=0, seed=5)
    return list(read_records(out / "train.jsonl"))


def test_every_task_is_covered(records: list) -> None:
    assert len({r.problem_type for r in records}) == 13


@pytest.mark.parametrize("strictness", ["lenient", "strict"])
def test_offline_responses_score_one(records: list, strictness: str) -> None:
    router = RewardRouter(RewardSpec(strictness=strictness))
    outputs = router.score([RewardInput.from_record(r, r.offline_response) for r in records])
    bad = [(r.id, r.problem_type.value, o.components) for r, o in zip(records, outputs) if o.score != 1.0]
    assert bad == []


def test_wrong_answers_score_zero_accuracy(records: list) -> None:
    router = RewardRouter(RewardSpec())
    outputs = router.score([RewardInput.from_record(r, "<answer>zzz</answer>") for r in records])
    assert all(o.components["accuracy"] == 0.0 for o in outputs)
