"""docs/records.md stays true: every JSON example is a valid record whose reference its routed reward
reads (and whose curated answer it scores 1), every problem type has one, and the synthetic-task
table matches the tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from evr1.data.records import Record
from evr1.data.synth import TASK_GROUPS
from evr1.data.synth_render import Canvas
from evr1.data.synth_tasks import TASKS
from evr1.problem_types import ProblemType
from evr1.rewards.reference_check import offline_warnings, reference_errors

DOC = Path(__file__).resolve().parents[2] / "docs" / "records.md"
TEXT = DOC.read_text(encoding="utf-8")
EXAMPLES = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", TEXT, re.DOTALL)]
ROW = re.compile(r"^\| `(\w+)` \| (\w+) \| (\w+) \|$", re.MULTILINE)


def test_every_example_is_a_record_its_reward_can_read() -> None:
    records = [Record.model_validate(example) for example in EXAMPLES]
    assert len({r.id for r in records}) == len(records) >= len(ProblemType)
    assert reference_errors(records) == [None] * len(records)
    assert offline_warnings(records) == [None] * len(records)


def test_there_is_an_example_of_every_problem_type_and_of_clips_and_offline_answers() -> None:
    records = [Record.model_validate(example) for example in EXAMPLES]
    assert {r.problem_type for r in records} == set(ProblemType)
    assert any(m.start is not None and m.end is not None for r in records for m in r.media)
    assert any(r.offline_response and r.offline_logprobs for r in records)


def _modality(media: list) -> str:
    kinds = sorted({"video" if isinstance(m, list) else "image" for m in media})
    return "+".join(kinds)


def test_the_synthetic_task_table_matches_the_tasks() -> None:
    canvas = Canvas(width=32, height=32, fps=2.0, frames=4)
    actual = {}
    for name, task in TASKS.items():
        kinds = set()
        for slot in range(4):  # tasks cycle through their answers by slot; their type and media do not change
            item = task(np.random.default_rng([0, slot]), slot, canvas)
            kinds.add((item.problem_type.value, _modality(item.media)))
        [actual[name]] = kinds
    documented = {task: (ptype, modality) for task, ptype, modality in ROW.findall(TEXT)}
    assert documented == actual
    assert "`quickstart` is " + " and ".join(f"`{t}`" for t in TASK_GROUPS["quickstart"]) in TEXT
