"""`evr1 --help | list | show | run` as a user runs them.

Commands run in this process (`cli_inproc`: what they print, their exit status, the files they write); what an
experiment file of a test registers is unregistered after it (`experiment_imports_restored`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inproc import evr1 as evr1_here

from evr1.run_dir import load_experiment

ROOT = Path(__file__).resolve().parents[2]
EVR1 = str(Path(sys.executable).parent / "evr1")


def evr1_process(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`evr1 ARGS` as a process of its own."""
    return subprocess.run([EVR1, *args], capture_output=True, text=True, cwd=cwd, timeout=300, env=None, check=False)


def evr1(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`evr1 ARGS` run in this process (`cli_inproc`), from the project folder unless `cwd` is given."""
    return evr1_here(*args, cwd=cwd)


def assert_user_error(out: subprocess.CompletedProcess, message: str) -> None:
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error: ")
    assert message in " ".join(out.stderr.split()), out.stderr


def test_help() -> None:
    out = evr1("--help")
    assert out.returncode == 0
    for command in ("run", "show", "list"):
        assert command in out.stdout


def test_list_shows_registries_and_experiments() -> None:
    out = evr1("list")
    assert out.returncode == 0, out.stderr
    for title in ("rewards", "advantages", "policy_losses", "experiments", "grpo", "quickstart"):
        assert title in out.stdout
    out = evr1("list", "experiments")
    assert "quickstart" in out.stdout and "Tiny model, synthetic colour questions" in out.stdout
    labels = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    for label in ("quickstart", "quickstart:debug", "ablations:mixed", "ablations:decay", "qwen25vl_7b_video:small_gpu_lora"):
        assert label in labels
    assert "ablations" not in labels  # no default variant
    assert "Three steps, for smoke tests." in out.stdout
    assert "broken" not in out.stdout
    assert_user_error(evr1("list", "reward"), "unknown kind 'reward'. Did you mean 'rewards'?")


@pytest.mark.usefixtures("experiment_imports_restored")  # me/verbatim is unregistered after the test
def test_list_takes_the_components_an_experiment_file_registers(tmp_path: Path) -> None:
    exp = tmp_path / "exp.py"
    exp.write_text(
        "from evr1.experiment import Experiment\n"
        "from evr1.registry import REWARDS\n"
        "from evr1.rewards import per_sample\n\n\n"
        "@REWARDS.register('me/verbatim')\n@per_sample\n"
        "def verbatim(inp, spec):\n    \"\"\"1 for the reference, verbatim.\"\"\"\n    return float(inp.response == str(inp.answer))\n\n\n"
        "def experiment():\n    import fiddle as fdl\n    return fdl.Config(Experiment, name='exp')\n"
    )
    assert "me/verbatim" not in evr1("list", "rewards").stdout
    out = evr1("list", "rewards", "--experiment", str(exp))
    assert out.returncode == 0, out.stderr
    assert any(line.split()[:2] == ["me/verbatim", "1"] for line in out.stdout.splitlines()), out.stdout


def test_show_marks_overrides() -> None:
    out = evr1("show", "quickstart", "--set", "data.video.fps=1.0")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert "--set data.video.fps=1.0" in lines["data.video.fps"]
    assert "(shared)" in lines["eval.video.fps"]
    assert "--set" not in lines["trainer.steps"]


@pytest.mark.usefixtures("experiment_imports_restored")  # load_experiment imports the run's copy here
def test_prepare_writes_a_run_dir_that_round_trips_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    dry = evr1("run", "quickstart", "--dry-run", "--set", "trainer.steps=5", "--run-dir", str(run_dir))
    assert dry.returncode == 0, dry.stderr
    assert "dry run: config validated; nothing written, not training." in dry.stdout and not run_dir.exists()
    out = evr1("run", "quickstart", "--prepare", "--set", "trainer.steps=5", "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr
    assert f"prepared: run directory written; not training. Start it with `evr1 run --resume {run_dir}`." in " ".join(
        out.stdout.split())
    exp = load_experiment(run_dir)
    assert exp.trainer.steps == 5 and exp.name == "quickstart"
    assert json.loads((run_dir / "run.json").read_text())["overrides"] == ["trainer.steps=5"]
    assert (run_dir / "experiment.py").read_text() == (ROOT / "evr1" / "experiments" / "quickstart.py").read_text()


@pytest.mark.parametrize("leftover", ["config.json", "metrics.jsonl", "samples.jsonl", "checkpoints"])
def test_a_run_dir_holding_a_run_is_refused(tmp_path: Path, leftover: str) -> None:
    run_dir = tmp_path / "run"
    assert evr1("run", "quickstart", "--prepare", "--run-dir", str(run_dir)).returncode == 0
    if leftover != "config.json":  # what a run leaves besides its config
        (run_dir / "config.json").unlink()
        (run_dir / leftover).mkdir() if leftover == "checkpoints" else (run_dir / leftover).write_text("")
    before = {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir()}
    out = evr1("run", "quickstart", "--dry-run", "--set", "trainer.steps=2", "--run-dir", str(run_dir))
    assert_user_error(out, f"{run_dir} already holds a run ({leftover}): continue it with `evr1 run --resume {run_dir}`,"
                           " or pass another --run-dir")
    assert {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir()} == before  # nothing written over


@pytest.mark.usefixtures("experiment_imports_restored")  # load_experiment imports the run's copy here
def test_default_run_dir_under_run_root(tmp_path: Path) -> None:
    assert evr1("run", "quickstart:debug", "--dry-run", "--set", f"trainer.run_root='{tmp_path}'").returncode == 0
    assert list(tmp_path.iterdir()) == []  # a dry run leaves no run directory
    out = evr1("run", "quickstart:debug", "--prepare", "--set", f"trainer.run_root='{tmp_path}'")
    assert out.returncode == 0, out.stderr
    (run_dir,) = (tmp_path / "quickstart-debug").iterdir()
    assert load_experiment(run_dir).trainer.steps == 3


NAMED = """
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.specs import TrainerSpec


def experiment():
    return fdl.Config(Experiment, name="mine", trainer=fdl.Config(TrainerSpec, steps=3))


def longer():
    cfg = experiment()
    cfg.trainer.steps = 9
    return cfg
"""


@pytest.mark.parametrize(("name", "variant", "label"), [
    ("mine", "experiment", "mine"), ("mine", "longer", "mine:longer"), ("named:longer", "longer", "named:longer"),
    ("mine-longer", "longer", "mine-longer"), ("mine", "long", "mine:long")])
def test_run_label_names_the_variant_once(name: str, variant: str, label: str) -> None:
    from evr1.experiment import Experiment
    from evr1.run_dir import run_label

    assert run_label(Experiment(name=name), variant) == label


def test_a_variant_of_an_experiment_that_names_itself_is_named_in_the_plan_and_folder(
        tmp_path: Path, experiment_imports_restored: None) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "named.py").write_text(NAMED)
    out = evr1("run", "named:longer", "--prepare", "--set", f"trainer.run_root='{tmp_path / 'runs'}'", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == ["plan:", "mine:longer"]  # the name the file gives, and the variant
    (run_dir,) = (tmp_path / "runs" / "mine-longer").iterdir()
    assert load_experiment(run_dir).name == "mine"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "quikstart", "--dry-run"), "unknown experiment 'quikstart'"),
        (("run", "quikstart", "--dry-run"), "Did you mean 'quickstart'?"),
        (("show", "quickstart", "--set", "algo.clip_hihg=0.3"), "has no field 'clip_hihg'. Did you mean 'clip_high'?"),
        (("show", "quickstart", "--set", "trainer.steps=many"), "trainer.steps: Input should be a valid integer"),
        (("show", "quickstart", "--set", "algo.advantage=rlooo"), "algo.advantage: unknown advantages name 'rlooo'. Did you mean 'rloo'?"),
        (("show", "quickstart", "--set", "algo.advantage=@advantages:rlooo"), "unknown advantages name 'rlooo'. Did you mean 'rloo'?"),
        (("run", "--resume", "/nonexistent/run"), "run directory /nonexistent/run does not exist"),
        (("run", "ablations"), "has no default variant; choose one of ablations:decay, ablations:joint, ablations:mixed,"),
        (("run",), "evr1 run needs an experiment NAME"),
    ],
)
def test_user_errors_are_short(args: tuple[str, ...], message: str) -> None:
    assert_user_error(evr1(*args), message)


def test_usage_error_exit_code() -> None:
    out = evr1("show")
    assert out.returncode == 2 and "Missing argument" in out.stderr


def test_import_is_cheap() -> None:
    code = (
        "import sys, evr1, evr1.experiment, evr1.experiment_files, evr1.registry\n"
        "from evr1.experiment_files import load_config\n"
        "load_config('quickstart')\n"
        "heavy = sorted(m for m in ('torch', 'ray', 'vllm', 'transformers') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_show_prints_the_docstring_and_the_description_as_text() -> None:
    out = evr1("show", "quickstart")
    assert out.returncode == 0, out.stderr
    assert "\\n" not in out.stdout and "description " not in out.stdout
    lines = out.stdout.splitlines()
    assert lines[0].startswith("quickstart  (file: ")  # the name as it is called
    assert lines[1:5] == ["Tiny model, synthetic colour questions on 56x56 clips and images, GRPO + one offline answer per",
                          "group of 4.", "",  # the function's docstring, then the description (the file's docstring)
                          "A tiny random-init Qwen2.5-VL learns synthetic video and image questions on CPU."]
    assert "- lr 1e-3: 2e-3 learned the format sooner but collapsed to one letter and stayed at chance." in lines
    debug = evr1("show", "quickstart:debug").stdout.splitlines()
    assert debug[1:4] == ["Three steps, for smoke tests.", "",
                          "A tiny random-init Qwen2.5-VL learns synthetic video and image questions on CPU."]


def test_show_prints_a_description_equal_to_the_docstring_once(tmp_path: Path) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "same.py").write_text(
        "import fiddle as fdl\nfrom evr1.experiment import Experiment\n\n\ndef experiment():\n"
        "    \"\"\"Described once.\"\"\"\n    return fdl.Config(Experiment, description=experiment.__doc__)\n")
    out = evr1("show", "same", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"same  (file: {tmp_path / 'experiments' / 'same.py'})"  # one line, however long
    assert lines[1:3] == ["Described once.", ""] and lines[3].split() == ["name", "'same'"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One line.", "One line."),
        ("Joined by a         continuation.", "Joined by a continuation."),  # a docstring's `\\` continuation
        ("Title.\n\n    Body of\n    two lines.\n", "Title.\n\nBody of two lines."),
        ("Why:\n- first\n  item\n- second", "Why:\n- first item\n- second"),
        ("word " * 30, ("word " * 20).strip() + "\n" + ("word " * 10).strip()),  # 20 words: 99 characters
    ],
)
def test_readable(text: str, expected: str) -> None:
    from evr1.cli.experiments import readable

    assert readable(text) == expected


def test_plan_shows_lora(tmp_path: Path) -> None:
    out = evr1("run", "qwen25vl_7b_video:small_gpu_lora", "--prepare", "--run-dir", str(tmp_path / "run"))
    assert out.returncode == 0, out.stderr
    lora = out.stdout[out.stdout.index(" lora ") : out.stdout.index(" data ")]  # the table wraps at 80 columns
    assert " ".join(lora.split()) == ("lora rank 64, alpha 128, targets q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,"
                                      " down_proj, in_proj_qkv, in_proj_z, out_proj, vision frozen")
    out = evr1("run", "quickstart", "--prepare", "--run-dir", str(tmp_path / "run2"))
    assert "off (full fine-tuning)" in out.stdout


def test_missing_data_file_stops_before_the_run_dir(tmp_path: Path) -> None:
    args = ("run", "quickstart:debug", "--set", "data.train=('data/nothere.jsonl',)", "--set", f"trainer.run_root='{tmp_path}'")
    assert_user_error(evr1(*args), "data.train: data/nothere.jsonl does not exist")
    assert list(tmp_path.iterdir()) == []  # no run directory, no Ray
    dry = evr1(*args, "--dry-run")  # a dry run warns: a recipe may be checked away from its data
    assert dry.returncode == 0 and "warning: data.train: data/nothere.jsonl does not exist" in dry.stderr


@pytest.mark.usefixtures("experiment_imports_restored")  # load_experiment imports the run's copy here
def test_one_data_path_is_a_one_element_tuple(tmp_path: Path) -> None:
    (tmp_path / "mine.jsonl").write_text("")
    out = evr1("run", "quickstart", "--prepare", "--run-dir", str(tmp_path / "run"), "--set", f"data.train={tmp_path}/mine.jsonl",
               "--set", f"data.val={tmp_path}/mine.jsonl")
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr
    data = load_experiment(tmp_path / "run").data
    assert data.train == data.val == (f"{tmp_path}/mine.jsonl",)


PLUGINS = '''
"""Acme's plugins, next to the experiments."""
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.registry import EXPERIMENTS, REWARDS
from evr1.specs import VideoSpec


@EXPERIMENTS.register("t25list/base")
def base() -> fdl.Config[Experiment]:
    """Registered: listed under its registered name, not as a variant of this file."""
    return fdl.Config(Experiment)


@REWARDS.register("t25list/batch")
def batch(inputs=(), spec=None):
    """A reward whose arguments all have defaults."""
    return [1.0] * len(inputs)


def video() -> fdl.Config[VideoSpec]:
    """A helper returning a spec's config."""
    return fdl.Config(VideoSpec)
'''

MINE = '''
import fiddle as fdl

from evr1.experiment import Experiment


def experiment():
    """Unannotated: an experiment."""
    return fdl.Config(Experiment)


def annotated() -> "fdl.Config[Experiment]":
    """Annotated as one."""
    return fdl.Config(Experiment)
'''


def test_list_experiments_leaves_out_plugin_modules(tmp_path: Path, experiment_imports_restored: None) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "acme_plugins.py").write_text(PLUGINS)
    (tmp_path / "experiments" / "mine.py").write_text(MINE)
    out = evr1("list", "experiments", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    listed = [line.split()[0] for line in out.stdout.splitlines()[1:] if str(tmp_path) in line or ":" in line.split()[0]]
    assert [label for label in listed if label.startswith(("acme", "mine"))] == ["mine", "mine:annotated"]
    assert_user_error(evr1("show", "acme_plugins:video", cwd=tmp_path),
                      f"acme_plugins:video ({tmp_path / 'experiments' / 'acme_plugins.py'}) returned"
                      " fdl.Config[VideoSpec], not fdl.Config[Experiment]")
