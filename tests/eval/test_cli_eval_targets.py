"""`evr1 eval run TARGET` for each kind of TARGET, run as a user would: a training run (its directory or its
final_model/) is evaluated at the run's own eval settings; anything unknown is one line, exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_inproc import evr1 as run_evr1

ROOT = Path(__file__).resolve().parents[2]


def evr1(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_evr1("eval", *args, cwd=cwd)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_unknown_target_names_what_was_tried(tmp_path: Path) -> None:
    err = one_line_error(evr1("run", "tiny-qwen-vl", "--benchmarks", "mvbench", cwd=tmp_path))
    assert err.startswith("error: 'tiny-qwen-vl' is no registered model (did you mean ")
    assert "'tiny-qwen2.5-vl'" in err and "no experiment (known: ablations, quickstart," in err and "no folder" in err


def test_folders_that_are_neither_a_model_nor_a_run(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    err = one_line_error(evr1("run", str(empty), "--benchmarks", "mvbench", cwd=tmp_path))
    assert f"{empty} is neither an HF model directory (no config.json) nor a training run" in err
    unfinished = tmp_path / "unfinished"  # a run directory whose model was never exported
    unfinished.mkdir()
    (unfinished / "config.json").write_text(json.dumps({"name": "x", "trainer": {}}))
    err = one_line_error(evr1("run", str(unfinished), "--benchmarks", "mvbench", cwd=tmp_path))
    assert "neither an HF model config (no model_type) nor a finished training run's config" in err


def test_generation_options_are_refused_with_responses(tmp_path: Path) -> None:
    answers = tmp_path / "r.jsonl"
    answers.write_text("")
    done = evr1("run", "--benchmarks", "minerva", "--responses", str(answers), "--min-pixels", "784",
                "--image-max-pixels", "3136", cwd=tmp_path)
    assert one_line_error(done) == "error: --responses scores given answers: --min-pixels, --image-max-pixels would" \
                                   " not be used (generation only)\n"


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory as `evr1 run quickstart:debug` leaves it: its config.json and an exported final_model/."""
    from evr1.experiment import build_experiment
    from evr1.experiment_files import load_config
    from evr1.models.loading import model_path
    from evr1.run_dir import write_run_dir
    from evr1.specs import ModelSpec

    run = tmp_path_factory.mktemp("runs") / "quickstart-debug" / "20260101-000000"
    run.mkdir(parents=True)
    cfg, source = load_config("quickstart:debug", root=ROOT)
    write_run_dir(run, build_experiment(cfg), source, [])
    shutil.copytree(model_path(ModelSpec(name="tiny-qwen2.5-vl")), run / "final_model")
    return run


@pytest.mark.slow
def test_a_run_is_evaluated_at_its_own_settings(trained_run: Path, tmp_path: Path) -> None:
    from evr1.eval.fixtures import write_fixtures

    write_fixtures(tmp_path / "fx", ["mvbench"])
    common = ("--benchmarks", "mvbench", "--data-root", str(tmp_path / "fx"), "--limit", "2", "--max-tokens", "2")
    done = evr1("run", str(trained_run), *common, "--out", str(tmp_path / "a"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == (
        f"evaluating {trained_run / 'final_model'} with the run's eval settings ({trained_run / 'config.json'}):"
        " fps 4, frames 4-4, pixels 3136-3136, prompt direct")
    settings = json.loads((tmp_path / "a" / "results.json").read_text())["benchmarks"]["mvbench"]["settings"]
    assert settings["model"] == str(trained_run / "final_model")
    assert (settings["video"]["fps"], settings["video"]["max_frames"]) == (4.0, 4)  # quickstart's 56x56 clips
    assert (settings["video"]["min_pixels"], settings["video"]["max_pixels"]) == (3136, 3136)
    assert settings["decoding"] == {"greedy": True, "max_tokens": 2}  # no temperature beside greedy: none is used
    assert '- decoding: `{"greedy": true, "max_tokens": 2}`' in (tmp_path / "a" / "results.md").read_text()
    # its final_model/ given directly: the same run settings, here with smaller frames asked for
    done = evr1("run", str(trained_run / "final_model"), *common, "--min-pixels", "784", "--max-pixels", "1568",
                "--image-max-pixels", "3136", "--out", str(tmp_path / "b"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"evaluating {trained_run / 'final_model'} with the run's eval settings")
    settings = json.loads((tmp_path / "b" / "results.json").read_text())["benchmarks"]["mvbench"]["settings"]
    assert (settings["video"]["fps"], settings["video"]["min_pixels"], settings["video"]["max_pixels"]) == (4.0, 784, 1568)
    assert settings["image"]["max_pixels"] == 3136
