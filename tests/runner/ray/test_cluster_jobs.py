"""`ray job submit` against a local cluster with the job server (the `evr1[cluster]` extra, `ray[default]`).

The job's working directory is a small project (its `experiments/`), uploaded by Ray; the run
folder must be outside Ray's copy of it, which `ray stop` deletes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..loop.test_train import ROOT
from .nodes import free_port, start_node, stop_node

pytestmark = [pytest.mark.slow, pytest.mark.ray]

BIN = Path(sys.executable).parent


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def job_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A head node with the dashboard's job server, in a HOME of its own (no auth token)."""
    pytest.importorskip("ray.dashboard.modules.job.sdk", reason="the job server needs evr1[cluster] (ray[default])")
    home = tmp_path_factory.mktemp("jobhome")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}
    dashboard = free_port()
    head = start_node(
        [str(BIN / "ray"), "start", "--head", f"--port={free_port()}", "--num-cpus=2", "--include-dashboard=true",
         "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}", f"--dashboard-agent-listen-port={free_port()}",
         "--disable-usage-stats", "--block"],  # the agent (it runs the jobs) not on Ray's fixed port, which another Ray may hold
        env, home,
    )  # fmt: skip
    url = f"http://127.0.0.1:{dashboard}"
    try:
        deadline = time.time() + 180
        while not _answers(url):
            assert head.poll() is None and time.time() < deadline, "ray start --head (job server) did not come up"
            time.sleep(1)
        yield url, env
    finally:
        stop_node(head)


def submit(url: str, env: dict[str, str], project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "ray"), "job", "submit", f"--address={url}", f"--working-dir={project}", "--",
               str(BIN / "evr1"), "run", *args]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)


def small(models: Path) -> list[str]:
    values = {"model.cache_dir": f"'{models}'", "data.synth.n_train": "16", "data.synth.n_val": "4",
              "data.synth.blank_control": "False", "data.val": "('data/quickstart/val.jsonl',)",
              "trainer.prompts_per_step": "2", "rollout.n": "4", "trainer.steps": "2", "trainer.val_every": "2"}  # fmt: skip
    return [item for k, v in values.items() for item in ("--set", f"{k}={v}")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project" / "experiments"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "evr1" / "experiments" / "quickstart.py", folder)
    return folder.parent


def test_a_submitted_job_runs_the_quickstart_into_a_run_folder_outside_the_upload(job_server, project, tmp_path, model_cache: Path) -> None:
    url, env = job_server
    run_dir = tmp_path / "runs" / "job"
    out = submit(url, env, project, "quickstart:debug", "--run-dir", str(run_dir), *small(model_cache))
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert "succeeded" in out.stdout
    assert [r["step"] for r in read_metrics(run_dir)] == [0, 1, 2]
    assert (run_dir / "final_model" / "config.json").is_file()


def test_a_job_whose_run_folder_would_be_inside_the_upload_is_refused(job_server, project, tmp_path, model_cache: Path) -> None:
    url, env = job_server
    out = submit(url, env, project, "quickstart:debug", *small(model_cache))  # runs/ relative to the job's copy
    assert out.returncode != 0
    assert "is inside Ray's temporary copy of the job's working_dir, deleted by `ray stop`" in out.stdout + out.stderr
