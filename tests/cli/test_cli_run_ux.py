"""`evr1 run | show` for power users: the plan shows mixing, sampling and reward routes; enums print by
value; `--set` refuses a boolean for a non-boolean field; dry runs check `mixer.file` and say what they
wrote; experiment files import their sibling modules; notes for a project found upwards, a run started
elsewhere and an experiment file changed since the run copied it; `--update-code`; the run state in run.json.

The commands run in this process (`cli_inproc`); what they import and register from a test's experiment files
is undone after the test (`experiment_imports_restored`). A resume that must import a sibling module afresh runs
as a process of its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_cli_experiments import ROOT, assert_user_error, evr1, evr1_process

from evr1.errors import ConfigError

QUICKSTART = ROOT / "evr1" / "experiments" / "quickstart.py"

HELPERS = '''
from evr1.registry import REWARDS


@REWARDS.register("sibling/mc")
def mc(inp, spec):
    """Multiple choice, as the built-in reward scores it."""
    return REWARDS.get("multiple_choice")(inp, spec)
'''

SPLIT = f'''
import helpers  # a module next to this file

from evr1.experiment_files import load_config


def experiment():
    """The quickstart's debug variant, scored by a reward of a sibling module."""
    cfg, _ = load_config("{QUICKSTART}:debug")
    cfg.name = "split"
    cfg.reward.routes = {{"multiple_choice": "sibling/mc"}}
    return cfg
'''


@pytest.fixture
def project(tmp_path: Path, experiment_imports_restored: None) -> Path:
    """A project whose experiment imports a sibling module; its data are the quickstart's own files. What the
    commands run in this process import and register from it is undone after the test."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "helpers.py").write_text(HELPERS)
    (tmp_path / "experiments" / "split.py").write_text(SPLIT)
    (tmp_path / "data").mkdir()
    return tmp_path


def plan_row(stdout: str, key: str) -> str:
    """One row of the printed plan, its wrapped lines (indented past the key column) joined."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [key])
    row = [lines[start].split(None, 1)[1]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 5) or not line.strip():
            break
        row.append(line.strip())
    return " ".join(" ".join(row).split())


def test_plan_shows_sampler_mixer_and_reward_routes(tmp_path: Path) -> None:
    out = evr1("run", "quickstart", "--prepare", "--run-dir", str(tmp_path / "a"), "--set", "mixer.name=offline_k_threshold",
               "--set", "mixer.threshold=0.5", "--set", "data.modality_ratio={'video': 2, 'image': 1}",
               "--set", "reward.routes={'numerical': 'regression'}", "--set", "reward.format=partial")
    assert out.returncode == 0, out.stderr
    assert plan_row(out.stdout, "sampler") == "modality (video 2, image 1)"
    assert plan_row(out.stdout, "mixer") == "offline_k_threshold, k=1 of n=4, threshold 0.5"
    assert plan_row(out.stdout, "rewards") == ("accuracy (weight 0.9): numerical -> regression, others by default route;"
                                               " format partial (weight 0.1)")
    out = evr1("run", "quickstart", "--prepare", "--run-dir", str(tmp_path / "b"), "--set", "mixer.name=None", "--set", "mixer.k=0",
               "--set", "mixer.decay_steps=None")
    assert out.returncode == 0, out.stderr
    assert plan_row(out.stdout, "mixer") == "off (on-policy only)"
    assert plan_row(out.stdout, "sampler") == "uniform"
    assert plan_row(out.stdout, "rewards") == "accuracy (weight 0.9): every type by default route; format full (weight 0.1)"
    out = evr1("run", "quickstart", "--dry-run", "--set", "reward.extra={'open_ended': 0.25, 'boolean': 1.0}",
               "--set", "reward.accuracy_weight=0.5")
    assert out.returncode == 0, out.stderr
    assert plan_row(out.stdout, "rewards") == ("accuracy (weight 0.5): every type by default route; format full (weight 0.1);"
                                               " extra open_ended (weight 0.25); extra boolean (weight 1)")


def test_show_prints_problem_types_by_value() -> None:
    out = evr1("show", "quickstart", "--set", "reward.routes={'numerical': 'regression', 'mcq': 'multiple_choice'}")
    assert out.returncode == 0, out.stderr
    (line,) = [line for line in out.stdout.splitlines() if line.startswith("reward.routes ")]
    assert line.split(None, 1)[1].split("  #")[0] == "{'numerical': 'regression', 'multiple_choice': 'multiple_choice'}"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("trainer.steps=True", "--set trainer.steps=True: trainer.steps is not a boolean field, so True would be read as 1"),
        ("rollout.temperature=False", "rollout.temperature is not a boolean field, so False would be read as 0"),
        ("mixer.decay_steps=True", "mixer.decay_steps is not a boolean field"),  # int | None
        ("model.lora=True", ("--set model.lora=True: model.lora is a LoraSpec, not an on/off switch: set its fields"
                             " (e.g. --set model.lora.rank=...), or None to turn it off. Fields: rank, alpha,")),
        ("data.video=False", "data.video is a VideoSpec, not an on/off switch: set its fields (e.g. --set data.video.fps=...)."),
        ("reward.format=True", "--set reward.format=True: reward.format is not a boolean field; give a value of its type"),
    ],
)
def test_a_boolean_for_a_non_boolean_field_is_refused(item: str, message: str) -> None:
    out = evr1("show", "quickstart", "--set", item)
    assert_user_error(out, message)
    assert ("would be read as" in out.stderr) == (item.split("=")[0] in ("trainer.steps", "rollout.temperature", "mixer.decay_steps"))


def test_booleans_still_set_boolean_fields() -> None:
    out = evr1("show", "quickstart", "--set", "trainer.tensorboard=False", "--set", "reward.fail_on_error=True")
    assert out.returncode == 0, out.stderr
    values = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()[1:] if line.strip()}
    assert (values["trainer.tensorboard"], values["reward.fail_on_error"]) == ("False", "True")


@pytest.mark.usefixtures("experiment_imports_restored")
def test_missing_mixer_file_warns_in_a_dry_run_and_stops_a_real_run(tmp_path: Path) -> None:
    args = ("run", "quickstart", "--set", "mixer.file=nofile.jsonl", "--set", f"trainer.run_root='{tmp_path}'")
    dry = evr1(*args, "--prepare")  # as a dry run does, but it writes the run directory
    assert dry.returncode == 0 and "warning: mixer.file nofile.jsonl does not exist; a real run stops here" in dry.stderr
    (run_dir,) = (tmp_path / "quickstart").iterdir()
    assert_user_error(evr1(*args), "mixer.file nofile.jsonl does not exist")
    assert list((tmp_path / "quickstart").iterdir()) == [run_dir]  # no second run directory, no Ray
    refused = evr1("run", "--resume", str(run_dir), "--dry-run")  # the recorded config names the missing file too
    assert_user_error(refused, "mixer.file nofile.jsonl does not exist")


@pytest.mark.usefixtures("experiment_imports_restored")
def test_resume_dry_run_writes_nothing_and_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert evr1("run", "quickstart", "--prepare", "--run-dir", str(run_dir)).returncode == 0
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    out = evr1("run", "--resume", str(run_dir), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "dry run: the recorded config is valid; nothing written; not training." in out.stdout
    assert "recorded;" not in out.stdout
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_update_code_needs_resume() -> None:
    assert_user_error(evr1("run", "quickstart", "--update-code", "--dry-run"), "--update-code goes with --resume RUN_DIR")


def test_experiment_imports_its_sibling_module(project: Path) -> None:
    out = evr1("show", "split", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "{'multiple_choice': 'sibling/mc'}" in out.stdout


def test_sys_path_is_restored_after_the_import(project: Path) -> None:
    from evr1.experiment_files import load_config

    before = list(sys.path)
    (project / "experiments" / "other.py").write_text(SPLIT.replace("import helpers", "import helpers_gone"))
    with pytest.raises(ConfigError, match=f"No module named 'helpers_gone' \\(modules next to it are imported from {project}/experiments\\)"):
        load_config("other", root=project)
    assert sys.path == before


def test_a_project_found_upwards_is_noted(project: Path) -> None:
    out = evr1("run", "split", "--prepare", "--run-dir", str(project / "r"), cwd=project / "data")
    assert out.returncode == 0, out.stderr
    assert (f"note: found {project}/experiments/split.py in the project folder {project}; its relative paths (data, cache,"
            f" runs/) resolve from the current folder {project}/data: run from {project} if they are meant from there") in out.stderr
    here = evr1("run", "split", "--prepare", "--run-dir", str(project / "r2"), cwd=project)
    assert "note:" not in here.stderr
    moved = evr1("run", "--resume", str(project / "r"), "--dry-run", cwd=project)  # the run started in data/
    assert f"note: this run started in {project}/data; its relative paths resolve from the current folder {project}" in moved.stderr


def test_changed_experiment_file_is_noted_and_update_code_replaces_the_copy(project: Path) -> None:
    run_dir = project / "runs" / "split"
    assert evr1("run", "split", "--prepare", "--run-dir", str(run_dir), cwd=project).returncode == 0
    original, config = (run_dir / "experiment.py").read_text(), (run_dir / "config.json").read_bytes()
    assert evr1("run", "--resume", str(run_dir), "--dry-run", cwd=project).stderr == ""  # unchanged: nothing to say
    fixed = original + "\n# fixed\n"
    (project / "experiments" / "split.py").write_text(fixed)
    out = evr1("run", "--resume", str(run_dir), "--dry-run", cwd=project)
    assert out.returncode == 0, out.stderr
    assert (f"note: {project}/experiments/split.py differs from this run's copy {run_dir}/experiment.py, which the resume"
            " imports; to run the current file instead, add --update-code (the copy is kept as experiment.py.N;"
            " config.json stays as recorded)") in " ".join(out.stderr.split())
    dry = evr1("run", "--resume", str(run_dir), "--dry-run", "--update-code", cwd=project)
    assert dry.returncode == 0 and "dry run: would replace" in dry.stderr
    assert (run_dir / "experiment.py").read_text() == original and not (run_dir / "experiment.py.1").exists()

    from evr1.run_dir import read_info, replace_code

    assert replace_code(run_dir, project / "experiments" / "split.py") == run_dir / "experiment.py.1"
    assert (run_dir / "experiment.py").read_text() == fixed and (run_dir / "experiment.py.1").read_text() == original
    (project / "experiments" / "split.py").write_text(fixed + "# again\n")
    assert replace_code(run_dir, project / "experiments" / "split.py") == run_dir / "experiment.py.2"
    assert (run_dir / "experiment.py.2").read_text() == fixed and (run_dir / "config.json").read_bytes() == config
    events = [(e["event"], e["backup"]) for e in read_info(run_dir)["history"]]
    assert events == [("code updated", "experiment.py.1"), ("code updated", "experiment.py.2")]
    assert read_info(run_dir)["status"] == "created"  # a code update is an event, not a state


def test_copy_found_by_name_when_the_recorded_file_moved(project: Path) -> None:
    run_dir = project / "runs" / "split"
    assert evr1("run", str(project / "experiments" / "split.py"), "--prepare", "--run-dir", str(run_dir)).returncode == 0
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "location": "/gone/split.py"}))
    (project / "experiments" / "split.py").write_text(SPLIT + "\n# changed\n")
    out = evr1_process("run", "--resume", str(run_dir), "--dry-run", cwd=project)
    assert out.returncode == 0, out.stderr  # a fresh process imports helpers from the folder of the file found by name
    assert f"note: {project}/experiments/split.py differs from this run's copy" in out.stderr


@pytest.mark.usefixtures("experiment_imports_restored")
def test_run_state_and_failure_marker(tmp_path: Path) -> None:
    from evr1.run_dir import last_failure, log_event, read_info

    run_dir = tmp_path / "run"
    assert evr1("run", "quickstart", "--prepare", "--run-dir", str(run_dir)).returncode == 0
    assert (read_info(run_dir)["status"], read_info(run_dir)["history"], last_failure(run_dir)) == ("created", [], None)
    log_event(run_dir, "running", resumed=False)
    log_event(run_dir, "failed", step=3, error="RuntimeError: plugin bug", in_experiment_code=True)
    assert last_failure(run_dir)["step"] == 3 and read_info(run_dir)["status"] == "failed"
    out = evr1("run", "--resume", str(run_dir), "--dry-run")
    assert out.returncode == 0 and "note: this run failed at step 3 (RuntimeError: plugin bug)" in out.stderr
    log_event(run_dir, "running", resumed=True)
    assert last_failure(run_dir) is None and read_info(run_dir)["experiment"] == "quickstart"
