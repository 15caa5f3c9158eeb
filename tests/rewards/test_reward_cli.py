"""`evr1 rewards score|describe|routes` and `python -m evr1.rewards`, run as a user would.

Commands run in this process (`cli_inproc`), except the module entry point and those that import an experiment
file registering a reward (a registration lasts as long as its process)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_inproc import evr1

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
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_score_prints_a_per_type_summary(pairs: Path) -> None:
    out = evr1("rewards", "score", str(pairs))
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
    out = evr1("rewards", "score", str(bad))
    assert out.returncode == 2
    assert f"{bad}:2: field 'response'" in out.stderr and "Traceback" not in out.stderr
    out = evr1("rewards", "score", str(bad), "--set", "format=bogus")
    assert out.returncode == 2 and "reward.format" in out.stderr


def test_describe_and_routes() -> None:
    out = evr1("rewards", "describe", "regression")
    assert out.returncode == 0, out.stderr
    assert "evr1/rewards/numerical.py" in out.stdout and "0.50" in out.stdout and "VSI-Bench" in out.stdout
    assert "policy" not in out.stdout  # the module's docstring is said to be the module's
    assert "\nmodule evr1.rewards.numerical, which holds it:\nNumerical answers (exact after normalising" in out.stdout
    out = evr1("rewards", "routes", "--route", "open_ended=format")
    assert out.returncode == 0, out.stderr
    assert any(line.split() == ["open_ended", "format"] for line in out.stdout.splitlines())
    out = evr1("list", "rewards")
    assert "open_ended_judge" in out.stdout and "spatial_temporal_grounding" in out.stdout


def test_each_reward_error_is_printed_once_whole(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    rows = [{"id": f"t{i}", "problem": "When?", "problem_type": "temporal_grounding", "answer": "soon", "response": "[1, 2]"}
            for i in range(12)] + [{"id": "n1", "problem": "How many?", "problem_type": "numerical", "answer": "lots", "response": "3"}]  # fmt: skip
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = evr1("rewards", "score", str(bad))
    assert out.returncode == 1, out.stderr  # every sample failed
    lines = out.stderr.splitlines()
    first = "reward 'temporal_grounding' failed on sample t0: ValueError: record 't0': temporal_grounding answer 'soon' holds no [start, end] interval"
    assert lines.count(first) == 1  # one whole line: not also logged, not re-wrapped
    assert sum(line.startswith("reward '") for line in lines) == 10
    assert lines[-2:] == ["... and 3 more errors (--out writes all)", "all 13 sample(s) failed to score"]


def test_missing_judge_names_the_option_of_this_command(pairs: Path) -> None:
    out = evr1("rewards", "score", str(pairs), "--route", "open_ended=open_ended_judge")
    assert out.returncode == 2
    assert "reward 'open_ended_judge' calls an LLM judge: pass --set judge.base_url and judge.model" in out.stderr
    assert "reward.judge" not in out.stderr
    out = evr1("rewards", "score", str(pairs), "--route", "open_ended=open_ended_judge", "--set", "judge.base_url='http://127.0.0.1:9/v1'")
    assert out.returncode == 2 and "pass --set judge.model (" in out.stderr


def test_every_good_line_is_scored_and_every_bad_one_reported(tmp_path: Path) -> None:
    mcq = PAIRS[0]["record"]
    lines = [
        json.dumps(PAIRS[0]),
        json.dumps({"response": 5, "record": {**mcq, "id": "five"}}),
        "not json",
        json.dumps({"record": {**mcq, "id": "none"}}),
        json.dumps({"response": "<answer>A</answer>", "record": {**mcq, "id": "a"}}),
        json.dumps({"responses": ["<answer>B</answer>", None], "record": {**mcq, "id": "many"}}),
        json.dumps({"response": "B", "record": {**mcq, "id": "typo", "problem_type": "mcqq"}}),
    ]
    bad = tmp_path / "mixed.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    out = evr1("rewards", "score", str(bad), "--json", "--set", "format=none")
    assert out.returncode == 2
    metrics = json.loads(out.stdout)  # lines 1 and 5 scored: B is right, A is wrong
    assert metrics["reward/multiple_choice/count"] == 2 and metrics["reward/multiple_choice/accuracy"] == 0.5
    errors = out.stderr.splitlines()
    assert f"{bad}:2: field 'response': must be a string, got a number (5) (record 'five')" in errors
    assert any(e.startswith(f"{bad}:3: ") for e in errors)
    assert f"{bad}:4: field 'response': missing: each line needs a 'response' string or a 'responses' list (record 'none')" in errors
    assert f"{bad}:6: field 'responses[1]': must be a string, got null (record 'many')" in errors
    assert any(e.startswith(f"{bad}:7: field 'problem_type': unknown problem_type 'mcqq'") and "(record 'typo')" in e for e in errors)
    assert errors[-1] == f"5 line(s) of {bad} could not be read and were not scored"


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = evr1("rewards", "score", str(empty))
    assert out.returncode == 2
    assert f"{empty}: holds no (response, record) pairs (the file is empty)" in out.stderr


def test_set_suggests_and_takes_the_reward_prefix(pairs: Path) -> None:
    out = evr1("rewards", "score", str(pairs), "--set", "formt=partial")
    assert out.returncode == 2 and "has no field 'formt'. Did you mean 'format'?" in out.stderr
    for typed in ("judge.modle=x", "reward.judge.modle=x"):  # echoed as typed, with or without the prefix
        out = evr1("rewards", "score", str(pairs), "--set", typed)
        assert out.returncode == 2 and out.stderr.startswith(f"error: --set {typed}: JudgeSpec at reward.judge has no field"
                                                             " 'modle'. Did you mean 'model'?"), out.stderr
    out = evr1("rewards", "score", str(pairs), "--set", "judge")
    assert out.returncode == 2 and out.stderr.startswith("error: --set expects PATH=VALUE (e.g. algo.clip_high=0.28), got 'judge'")
    plain = evr1("rewards", "score", str(pairs), "--json", "--set", "format=none")
    prefixed = evr1("rewards", "score", str(pairs), "--json", "--set", "reward.format=none")
    assert plain.returncode == prefixed.returncode == 0, prefixed.stderr
    assert json.loads(prefixed.stdout) == json.loads(plain.stdout)
    assert json.loads(plain.stdout)["reward/multiple_choice/score"] == 1.0  # format none: score = accuracy


EXPERIMENT = '''
"""An experiment scoring numerical answers with half marks."""
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.registry import REWARDS
from evr1.rewards import per_sample
from evr1.specs import RewardSpec


@REWARDS.register("clitest/half")
@per_sample
def half(inp, spec):
    """Half marks for everything."""
    return 0.5


def experiment():
    return fdl.Config(Experiment, name="halfexp", reward=RewardSpec(routes={"numerical": "clitest/half"}, format="none"))
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "halfexp.py").write_text(EXPERIMENT)
    return tmp_path


def _run_in(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd, check=False)


def test_experiment_option_imports_its_rewards_and_settings(project: Path, pairs: Path) -> None:
    out = _run_in(project, EVR1, "rewards", "score", str(pairs), "--route", "numerical=clitest/half")
    assert out.returncode == 2 and "unknown rewards name 'clitest/half'" in out.stderr and "--experiment" in out.stderr
    out = _run_in(project, EVR1, "rewards", "score", str(pairs), "--experiment", "halfexp", "--json")
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout)  # the experiment's route and format="none": exactly 0.5 each
    assert metrics["reward/numerical/score"] == 0.5 and metrics["reward/multiple_choice/score"] == 1.0
    out = _run_in(project, EVR1, "rewards", "score", str(pairs), "-e", "experiments/halfexp.py", "--json",
                  "--route", "numerical=numerical", "--set", "reward.format=full")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["reward/numerical/score"] == pytest.approx(0.55)  # three right, 4 wrong; both tagged
    out = _run_in(project, EVR1, "rewards", "describe", "clitest/half", "--experiment", "halfexp")
    assert out.returncode == 0, out.stderr
    assert "Half marks for everything." in out.stdout and "halfexp.py" in out.stdout
    assert "An experiment scoring" not in out.stdout and "which holds it" not in out.stdout  # the experiment's docstring
    out = _run_in(project, EVR1, "rewards", "routes", "--experiment", "halfexp")
    assert any(line.split() == ["numerical", "clitest/half"] for line in out.stdout.splitlines())


def test_a_code_sample_says_why_it_scored_zero_and_describe_says_where_code_runs(tmp_path: Path) -> None:
    pairs, rows = tmp_path / "code.jsonl", tmp_path / "rows.jsonl"
    tests = {"language": "python", "tests": ["assert f(1) == 2"]}
    pairs.write_text(json.dumps({"id": "loop", "problem": "Write f.", "problem_type": "code", "answer": tests,
                                 "response": "<answer>while True:\n    pass</answer>"}) + "\n")  # fmt: skip
    out = evr1("rewards", "score", str(pairs), "--set", "code.timeout_s=2", "--out", str(rows))
    assert out.returncode == 0, out.stderr
    assert "sample loop: 0/1 tests passed: timed out after 2 s" in out.stderr.splitlines()
    [row] = [json.loads(line) for line in rows.read_text().splitlines()]
    assert (row["components"]["accuracy"], row["error"], row["note"]) == (0.0, None, "0/1 tests passed: timed out after 2 s")
    out = evr1("rewards", "describe", "code")
    assert out.returncode == 0, out.stderr
    here = out.stdout.split("\nhere:\n")[1].splitlines()
    assert here[0] == "  python answers run in: bubblewrap" and here[1].startswith("  limits in force: ")


@pytest.fixture
def short_reward() -> Iterator[str]:
    """`t25/short` registered in this process: 1 for a response of at most 20 characters, else 0; None (not
    applicable) for temporal grounding."""
    from evr1.problem_types import ProblemType
    from evr1.registry import REWARDS
    from evr1.rewards import per_sample

    @per_sample
    def short(inp, spec):
        return None if inp.problem_type is ProblemType.TEMPORAL_GROUNDING else float(len(inp.response) <= 20)

    REWARDS.register("t25/short", short)
    yield "t25/short"
    REWARDS.unregister("t25/short")


def test_score_summary_has_a_column_per_extra_reward(pairs: Path, short_reward: str) -> None:
    out = evr1("rewards", "score", str(pairs), "--set", f"extra={{'{short_reward}': 0.5}}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(line for line in lines if "type" in line and "┃" in line)
    assert [c.strip() for c in header.split("┃")[1:-1]] == ["type", "reward", "n", "score", "accuracy", "format",
                                                            "t25/short", "errors", "timeouts", "n/a"]
    rows = {(cells := [c.strip() for c in line.split("│")[1:-1]])[0]: cells for line in lines if line.count("│") > 3}
    # mcq: right, tagged, 18 characters: (0.9 + 0.1 + 0.5 * 1) / 1.5; numerical: <answer>three</answer> (22
    # characters, right) (0.9 + 0.1 + 0) / 1.5 and <answer>4</answer> (wrong) (0 + 0.1 + 0.5) / 1.5
    assert rows["multiple_choice"][3:7] == ["1.000", "1.000", "1.000", "1.000"]
    assert rows["numerical"][2:7] == ["2", f"{(1.0 / 1.5 + 0.6 / 1.5) / 2:.3f}", "0.500", "1.000", "0.500"]
    assert rows["temporal_grounding"][6] == "-"  # it applies to no temporal grounding sample
    assert rows["all"][6] == f"{2 / 3:.3f}"  # over the 3 samples it applies to
    assert "extra rewards: the mean where one applied (weights t25/short 0.5); -: none applied" in out.stdout


def test_routes_say_how_the_score_weighs_its_parts(tmp_path: Path, short_reward: str) -> None:
    out = evr1("rewards", "routes")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "score: the weighted mean of the route's accuracy (0.9), the format (0.1)"
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "extra.py").write_text(
        "from evr1.experiment_files import load_config\n\n\ndef experiment():\n    cfg, _ = load_config('quickstart')\n"
        f"    cfg.reward.extra = {{'{short_reward}': 0.5, 'open_ended': 0.25}}\n    return cfg\n")
    out = evr1("rewards", "routes", "-e", "extra", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == (
        "score: the weighted mean of the route's accuracy (0.9), the format (0.1), t25/short (0.5), open_ended (0.25),"
        " each extra reward where it applies")


def _documented(inp, spec):
    """Documented: 1 for everything.

    Its second paragraph, which `rewards describe` prints too."""
    return 1.0


def test_describe_prints_the_whole_docstring_and_no_experiment_files_docstring(tmp_path: Path) -> None:
    from evr1.registry import REWARDS

    REWARDS.register("t25/documented", _documented)
    try:
        out = evr1("rewards", "describe", "t25/documented")
    finally:
        REWARDS.unregister("t25/documented")
    assert out.returncode == 0, out.stderr
    assert "  Documented: 1 for everything.\n\n  Its second paragraph, which `rewards describe` prints too.\n" in out.stdout
    assert f"module {__name__}, which holds it:\n{__doc__.splitlines()[0]}" in out.stdout
