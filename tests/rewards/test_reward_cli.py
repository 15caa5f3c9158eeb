"""`evr1 rewards score|describe|routes` and `python -m evr1.rewards`, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EVR1 = str(Path(sys.executable).parent / "evr1")

PAIRS = [
    {"response": "<answer>B</answer>", "record": {"id": "q1", "problem": "Which?", "problem_type": "mcq", "answer": "B", "options": ["dog", "cat"]}},
    {"id": "q2", "problem": "How many?", "problem_type": "numerical", "answer": "3", "responses": ["<answer>three</answer>", "<answer>4</answer>"]},
    {"response": "<answer>[2, 6]</answer>", "record": {"id": "q3", "problem": "When?", "problem_type": "temporal_grounding", "answer": {"time": [4, 8]}}},
]  # fmt: skip


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in PAIRS) + "\n")
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_score_prints_a_per_type_summary(pairs: Path) -> None:
    out = _run(EVR1, "rewards", "score", str(pairs))
    assert out.returncode == 0, out.stderr
    rows = {line.split("│")[1].strip(): line for line in out.stdout.splitlines() if line.count("│") > 3}
    assert set(rows) >= {"multiple_choice", "numerical", "temporal_grounding", "all"}
    assert "1.000" in rows["multiple_choice"]
    assert "0.550" in rows["numerical"]  # (1.0 + 0.1) / 2: three is right, 4 is wrong
    assert " 4 " in rows["all"]


def test_module_entry_point_writes_json_and_per_sample_rows(pairs: Path, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    out = _run(sys.executable, "-m", "evr1.rewards", str(pairs), "--json", "--out", str(rows), "--set", "format=none")
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout)
    assert metrics["reward/numerical/accuracy"] == 0.5
    assert metrics["reward/temporal_grounding/accuracy"] == pytest.approx(1 / 3)
    lines = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [r["sample_id"] for r in lines] == ["q1", "q2#0", "q2#1", "q3"]
    assert lines[2]["score"] == 0.0


def test_bad_input_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(PAIRS[0]) + "\n" + json.dumps({"record": PAIRS[0]["record"]}) + "\n")
    out = _run(EVR1, "rewards", "score", str(bad))
    assert out.returncode == 2
    assert f"{bad}:2: field 'response'" in out.stderr and "Traceback" not in out.stderr
    out = _run(EVR1, "rewards", "score", str(bad), "--set", "format=bogus")
    assert out.returncode == 2 and "reward.format" in out.stderr


def test_describe_and_routes() -> None:
    out = _run(EVR1, "rewards", "describe", "regression")
    assert out.returncode == 0, out.stderr
    assert "evr1/rewards/numerical.py" in out.stdout and "0.50" in out.stdout and "VSI-Bench" in out.stdout
    out = _run(EVR1, "rewards", "routes", "--route", "open_ended=format")
    assert out.returncode == 0, out.stderr
    assert any(line.split() == ["open_ended", "format"] for line in out.stdout.splitlines())
    out = _run(EVR1, "list", "rewards")
    assert "open_ended_judge" in out.stdout and "spatial_temporal_grounding" in out.stdout


def test_each_reward_error_is_printed_once_whole(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    rows = [{"id": f"t{i}", "problem": "When?", "problem_type": "temporal_grounding", "answer": "soon", "response": "[1, 2]"}
            for i in range(12)] + [{"id": "n1", "problem": "How many?", "problem_type": "numerical", "answer": "lots", "response": "3"}]  # fmt: skip
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = _run(EVR1, "rewards", "score", str(bad))
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    first = "reward 'temporal_grounding' failed on sample t0: ValueError: record 't0': temporal_grounding answer 'soon' holds no [start, end] interval"
    assert lines.count(first) == 1  # one whole line: not also logged, not re-wrapped
    assert sum(line.startswith("reward '") for line in lines) == 10
    assert lines[-1] == "... and 3 more errors (--out writes all)"


def test_missing_judge_names_the_option_of_this_command(pairs: Path) -> None:
    out = _run(EVR1, "rewards", "score", str(pairs), "--route", "open_ended=open_ended_judge")
    assert out.returncode == 2
    assert "reward 'open_ended_judge' calls an LLM judge: pass --set judge.base_url and judge.model" in out.stderr
    assert "reward.judge" not in out.stderr
    out = _run(EVR1, "rewards", "score", str(pairs), "--route", "open_ended=open_ended_judge", "--set", "judge.base_url='http://127.0.0.1:9/v1'")
    assert out.returncode == 2 and "pass --set judge.model (" in out.stderr
