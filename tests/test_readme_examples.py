"""The README's Python examples work as written: the experiment file builds (one shared VideoSpec, its
variant edits it) and the plugin reward registers and scores."""

from __future__ import annotations

import re
from pathlib import Path

import fiddle as fdl
import pytest

from evr1.registry import REWARDS
from evr1.rewards import RewardInput

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def _run(block: str) -> dict:
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    return namespace


def test_the_experiment_example_builds_with_one_shared_video_spec() -> None:
    example = _run(next(b for b in BLOCKS if "def experiment()" in b))
    exp = fdl.build(example["experiment"]())
    assert exp.data.video is exp.eval.video
    assert (exp.data.video.fps, exp.data.video.max_frames, exp.data.video.max_pixels) == (2.0, 64, 262_144)
    assert (exp.algo.advantage, exp.algo.policy_loss, exp.algo.clip_high, exp.trainer.steps) == (
        "grpo",
        "ppo_clip",
        0.28,
        500,
    )
    assert fdl.build(example["debug"]()).trainer.steps == 3


@pytest.fixture
def plugin() -> dict:
    block = next(b for b in BLOCKS if "REWARDS.register" in b)
    name = re.search(r'REWARDS\.register\("([^"]+)"\)', block).group(1)
    yield {"name": name, **_run(block)}
    REWARDS.unregister(name)


def test_the_plugin_example_registers_and_scores(plugin: dict) -> None:
    record = {"id": "r1", "problem": "Say x.", "problem_type": "open_ended", "answer": "x"}
    reward = REWARDS.get(plugin["name"])
    inputs = [
        RewardInput.from_record(record, response, sample_id=f"r1#{i}") for i, response in enumerate([" x\n", "y"])
    ]
    assert reward(inputs, None) == [1.0, 0.0]
    assert REWARDS.describe(plugin["name"]).summary == "1 if the response is the reference, verbatim."
