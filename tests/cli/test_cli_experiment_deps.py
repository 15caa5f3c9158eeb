"""Experiment files as users combine them: an experiment built on another (`load_config("ex")` in its
function, or at the top of the file) records, copies and re-imports it on resume; each file is imported
once per process (`evr1 list` never reports a good experiment as broken, nor lists a helper module);
same-named sibling modules of two folders do not clash; resume after the file moved; `--update-code`
covers every copy and restores a missing one; backups count up from the highest; a run another process
runs is refused, a killed one is noted; `run.json` survives concurrent writers.

Commands run as processes of their own (`evr1_process`) where what they check is what a fresh process does: a
resume's check of a live or killed process, a resume's (or a listing's) import of experiment files. Preparations
and one refusal run in this process (`cli_inproc`), what they import and register undone after the test
(`experiment_imports_restored`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_cli_experiments import ROOT, assert_user_error, evr1_process
from test_cli_experiments import evr1 as evr1_here

from evr1.errors import ConfigError

QUICKSTART = ROOT / "evr1" / "experiments" / "quickstart.py"
SHIPPED = {p.stem for p in QUICKSTART.parent.glob("[!_]*.py")}  # the experiments evr1 ships, listed everywhere


def listed_labels(stdout: str) -> list[str]:
    """The experiments `evr1 list experiments` printed, but those evr1 ships."""
    labels = [line.split()[0] for line in stdout.splitlines()[1:]]
    return [label for label in labels if label.partition(":")[0] not in SHIPPED]

EX = f'''
from evr1.experiment_files import load_config
from evr1.registry import REWARDS
from evr1.rewards import per_sample


@REWARDS.register("{{prefix}}/exact")
@per_sample
def exact(inp, spec):
    """1 if the response is the reference, verbatim."""
    return float(inp.response.strip() == str(inp.answer))


def experiment():
    """The quickstart's debug variant scored by this file's reward."""
    cfg, _ = load_config("{QUICKSTART}:debug")
    cfg.reward.routes = {{{{"multiple_choice": "{{prefix}}/exact"}}}}
    return cfg
'''

DERIVED = '''
from evr1.experiment_files import load_config


def experiment():
    """Built on ex."""
    cfg, _ = load_config("ex")
    cfg.name = "derived"
    return cfg
'''

TOP_LEVEL = '''
from evr1.experiment_files import load_config

BASE, _ = load_config("ex")  # at import: a resume imports this file again


def experiment():
    """Built on ex, loaded when this file is imported."""
    cfg, _ = load_config("ex")
    cfg.name = "top"
    return cfg
'''


def project(root: Path, prefix: str) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "ex.py").write_text(EX.format(prefix=prefix))
    (root / "experiments" / "derived.py").write_text(DERIVED)
    (root / "experiments" / "top.py").write_text(TOP_LEVEL)
    return root


@pytest.mark.usefixtures("experiment_imports_restored")
def test_an_experiment_built_on_another_records_and_copies_it(tmp_path: Path) -> None:
    proj = project(tmp_path / "p", "deps1")
    run_dir = proj / "runs" / "d"
    out = evr1_here("run", "derived", "--prepare", "--run-dir", str(run_dir), cwd=proj)
    assert out.returncode == 0, out.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["deps"] == [
        {"origin": "file", "location": str(proj / "experiments" / "ex.py"), "name": "ex", "copy": "experiment_deps/ex.py"},
        {"origin": "file", "location": str(QUICKSTART), "name": "quickstart", "copy": "experiment_deps/quickstart.py"},
    ]
    assert (run_dir / "experiment_deps" / "ex.py").read_text() == EX.format(prefix="deps1")
    assert (run_dir / "experiment.py").read_text() == DERIVED
    (proj / "experiments" / "ex.py").unlink()  # the resume imports the run's copy, which registers deps1/exact
    resumed = evr1_process("run", "--resume", str(run_dir), "--dry-run", cwd=proj)
    assert resumed.returncode == 0, resumed.stderr
    assert "rewards accuracy (weight 0.9): multiple_choice -> deps1/exact, others by default route;" in " ".join(resumed.stdout.split())


@pytest.mark.usefixtures("experiment_imports_restored")
def test_an_experiment_loaded_at_import_is_imported_once_on_resume(tmp_path: Path) -> None:
    proj = project(tmp_path / "p", "deps2")
    run_dir = proj / "runs" / "t"
    out = evr1_here("run", "top", "--prepare", "--run-dir", str(run_dir), cwd=proj)
    assert out.returncode == 0, out.stderr
    assert [d["name"] for d in json.loads((run_dir / "run.json").read_text())["deps"]] == ["ex", "quickstart"]
    # the copy experiment.py loads experiments/ex.py when imported: it gets the copy of ex already imported
    resumed = evr1_process("run", "--resume", str(run_dir), "--dry-run", cwd=proj)
    assert resumed.returncode == 0, resumed.stderr


def test_list_imports_each_file_once_and_skips_helper_modules(tmp_path: Path) -> None:
    proj = project(tmp_path / "p", "deps3")
    (proj / "experiments" / "a_rewards.py").write_text(
        "from evr1.registry import REWARDS\n\n\n@REWARDS.register('deps3/sib')\n"
        "def mc(inp, spec):\n    \"\"\"Sibling.\"\"\"\n    return REWARDS.get('multiple_choice')(inp, spec)\n"
    )
    (proj / "experiments" / "e3.py").write_text("import a_rewards  # a module next to it\n" + DERIVED.replace('"ex"', '"derived"'))
    for args in (("experiments",), ("experiments", "-e", "ex"), ("experiments", "-e", "e3"), ("rewards", "-e", "e3")):
        out = evr1_process("list", *args, cwd=proj)
        assert out.returncode == 0, out.stderr
        assert "broken" not in out.stdout, out.stdout
        if args[0] == "experiments":
            assert listed_labels(out.stdout) == ["derived", "e3", "ex", "top"], out.stdout  # a_rewards: no experiment
        else:
            labels = [line.split()[0] for line in out.stdout.splitlines()[1:]]
            assert "deps3/sib" in labels and "deps3/exact" not in labels
    assert_user_error(evr1_process("run", "a_rewards", "--dry-run", cwd=proj), "experiments/a_rewards.py defines no experiment")


HELPERS = '''
from evr1.registry import REWARDS

NAME = "{name}"


@REWARDS.register(NAME)
def mc(inp, spec):
    """Sibling."""
    return REWARDS.get("multiple_choice")(inp, spec)
'''

USES_HELPERS = f'''
import helpers

from evr1.experiment_files import load_config


def experiment():
    """Routed to its sibling's reward."""
    cfg, _ = load_config("{QUICKSTART}:debug")
    cfg.reward.routes = {{"multiple_choice": helpers.NAME}}
    return cfg
'''


@pytest.mark.usefixtures("experiment_imports_restored")  # it imports in this process: undone after it
def test_same_named_sibling_modules_of_two_folders_do_not_clash(tmp_path: Path) -> None:
    from evr1.experiment import build_experiment
    from evr1.experiment_files import load_config

    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "helpers.py").write_text(HELPERS.format(name=f"clash_{name}/mc"))
        (tmp_path / name / f"e_{name}.py").write_text(USES_HELPERS)
    before = sys.modules.get("helpers")
    routes = [build_experiment(load_config(str(tmp_path / n / f"e_{n}.py"))[0]).reward.routes for n in ("one", "two")]
    assert [list(r.values()) for r in routes] == [["clash_one/mc"], ["clash_two/mc"]]
    assert sys.modules.get("helpers") is before or Path(sys.modules["helpers"].__file__) == tmp_path / "one" / "helpers.py"
    again, _ = load_config(str(tmp_path / "two" / "e_two.py"))  # each file is imported once: no duplicate name
    assert list(build_experiment(again).reward.routes.values()) == ["clash_two/mc"]
    with pytest.raises(ConfigError, match="helpers.py defines no experiment"):  # the module imported as `helpers`, reused
        load_config(str(tmp_path / "two" / "helpers.py"))


def split_project(root: Path, prefix: str) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "helpers.py").write_text(HELPERS.format(name=f"{prefix}/mc"))
    (root / "experiments" / "split.py").write_text(USES_HELPERS)
    return root


@pytest.mark.usefixtures("experiment_imports_restored")
def test_resume_after_the_file_was_renamed_imports_siblings_from_its_folder(tmp_path: Path) -> None:
    proj = split_project(tmp_path / "p", "moved")
    run_dir = proj / "runs" / "s"
    assert evr1_here("run", str(proj / "experiments" / "split.py"), "--prepare", "--run-dir", str(run_dir)).returncode == 0
    (proj / "experiments" / "split.py").rename(proj / "experiments" / "renamed.py")
    out = evr1_process("run", "--resume", str(run_dir), "--dry-run", cwd=tmp_path)  # no project found from here
    assert out.returncode == 0, out.stderr  # helpers still imported from the recorded file's folder


@pytest.mark.usefixtures("experiment_imports_restored")
def test_update_code_covers_every_copy_and_restores_a_missing_one(tmp_path: Path) -> None:
    from evr1.run_dir import read_info, replace_code

    proj = project(tmp_path / "p", "deps4")
    run_dir = proj / "runs" / "d"
    assert evr1_here("run", "derived", "--prepare", "--run-dir", str(run_dir), cwd=proj).returncode == 0
    ex = proj / "experiments" / "ex.py"
    ex.write_text(ex.read_text() + "\n# changed\n")
    out = evr1_process("run", "--resume", str(run_dir), "--dry-run", cwd=proj)
    assert out.returncode == 0, out.stderr
    assert f"note: {ex} differs from this run's copy {run_dir}/experiment_deps/ex.py, which the resume imports" in " ".join(out.stderr.split())
    dry = evr1_process("run", "--resume", str(run_dir), "--dry-run", "--update-code", cwd=proj)
    assert dry.returncode == 0, dry.stderr
    assert dry.stderr.splitlines() == [f"dry run: would replace {run_dir}/experiment_deps/ex.py by {ex}"]

    (run_dir / "experiment.py").unlink()
    missing = evr1_process("run", "--resume", str(run_dir), "--dry-run", cwd=proj)
    assert_user_error(missing, f"{run_dir}/experiment.py, the run's copy of an experiment file, is missing: add --update-code"
                               f" to restore it from {proj}/experiments/derived.py")
    dry = evr1_process("run", "--resume", str(run_dir), "--dry-run", "--update-code", cwd=proj)
    assert dry.returncode == 0, dry.stderr
    assert f"dry run: would replace {run_dir}/experiment.py by {proj}/experiments/derived.py" in dry.stderr
    assert "already equal" not in dry.stderr
    assert replace_code(run_dir, proj / "experiments" / "derived.py") is None  # restored, nothing to keep
    assert (run_dir / "experiment.py").read_text() == DERIVED
    event = read_info(run_dir)["history"][-1]
    assert (event["event"], event["copy"], event["backup"]) == ("code updated", "experiment.py", None)


@pytest.mark.parametrize(
    ("present", "expected"),
    [((), "experiment.py.1"), ((1,), "experiment.py.2"), ((2,), "experiment.py.3"), ((1, 3), "experiment.py.4"), ((1, 2), "experiment.py.3")],
)
def test_a_backup_is_numbered_after_the_highest(tmp_path: Path, present: tuple[int, ...], expected: str) -> None:
    from evr1.run_dir import replace_code

    (tmp_path / "experiment.py").write_text("old")
    for n in present:
        (tmp_path / f"experiment.py.{n}").write_text(f"backup {n}")
    (tmp_path / "new.py").write_text("new")
    assert replace_code(tmp_path, tmp_path / "new.py").name == expected
    assert (tmp_path / expected).read_text() == "old" and (tmp_path / "experiment.py").read_text() == "new"
    assert all((tmp_path / f"experiment.py.{n}").read_text() == f"backup {n}" for n in present)


def test_resume_refuses_a_run_a_live_process_runs_and_notes_a_killed_one(tmp_path: Path) -> None:
    from evr1.run_dir import log_event, process_info, read_info

    run_dir = tmp_path / "run"
    assert evr1_here("run", "quickstart", "--prepare", "--run-dir", str(run_dir)).returncode == 0
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        log_event(run_dir, "running", resumed=False, **process_info(other.pid))
        event = read_info(run_dir)["history"][-1]
        refused = evr1_process("run", "--resume", str(run_dir), "--dry-run")
        assert_user_error(refused, f"{run_dir} is being run by another process (process {other.pid} on {event['host']},"
                                   f" started {event['time']}): wait for it to end or stop it first")
        os.kill(other.pid, signal.SIGKILL)
        other.wait()
    finally:
        other.kill()
    killed = evr1_process("run", "--resume", str(run_dir), "--dry-run")
    assert killed.returncode == 0, killed.stderr
    assert (f"note: the previous run of {run_dir} (process {other.pid} on {event['host']}, started {event['time']})"
            " ended without a record (killed?)") in " ".join(killed.stderr.split())
    log_event(run_dir, "running", resumed=False, **{**process_info(os.getppid()), "pid_start": "0"})  # the id reused since
    assert "ended without a record" in evr1_process("run", "--resume", str(run_dir), "--dry-run").stderr


def test_concurrent_events_keep_run_json_whole(tmp_path: Path) -> None:
    from evr1.run_dir import read_info

    run_dir = tmp_path / "run"
    assert evr1_here("run", "quickstart", "--prepare", "--run-dir", str(run_dir)).returncode == 0
    code = textwrap.dedent(f"""
        from evr1.run_dir import log_event
        for i in range(40):
            log_event({str(run_dir)!r}, "note", i=i)
    """)
    writers = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errors = [w.communicate(timeout=120)[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0, 0], errors
    history = read_info(run_dir)["history"]  # whole JSON; concurrent writers may each drop others' events
    assert 40 <= len(history) <= 160 and {e["event"] for e in history} == {"note"}
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.json", "experiment.py", "run.json", "versions.json"]


def test_resume_with_run_dir_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert evr1_here("run", "quickstart", "--prepare", "--run-dir", str(run_dir)).returncode == 0
    assert_user_error(evr1_here("run", "--resume", str(run_dir), "--run-dir", str(tmp_path / "other"), "--dry-run"),
                      f"--resume continues the run in its own directory {run_dir}; do not pass --run-dir with it")
    assert not (tmp_path / "other").exists()
