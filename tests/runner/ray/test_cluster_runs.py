"""Runs on an existing Ray cluster of two nodes on this machine, each node in its own working folder.

The driver runs `evr1 run` from a third folder with relative paths: the learners (spread over
both nodes) must read the driver's data and write into the driver's run folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..holding import held_experiment, wait_until_held
from ..loop.test_train import ROOT, run, stable

pytestmark = [pytest.mark.slow, pytest.mark.ray]

QUICKSTART = str(ROOT / "evr1" / "experiments" / "quickstart.py")
SMALL = 80 * 2**20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Path]]]:
    """A head node (1 CPU) and a worker node (1 CPU), started in folders of their own."""
    from ray.cluster_utils import Cluster

    folders = {name: tmp_path_factory.mktemp(name) for name in ("head", "worker")}
    here = Path.cwd()
    try:
        os.chdir(folders["head"])  # a node's workers run in the folder its raylet started in
        nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": SMALL,
                                                              "include_dashboard": False})  # fmt: skip
        os.chdir(folders["worker"])
        nodes.add_node(num_cpus=1, object_store_memory=SMALL)
    finally:
        os.chdir(here)
    nodes.wait_for_nodes()
    try:
        yield nodes.address, folders
    finally:
        nodes.shutdown()


def cluster_settings(address: str, models: Path, **extra: str) -> list[str]:
    """Relative data, cache and run paths (from the driver's folder) on the cluster at `address`."""
    values = {
        "resources.ray_address": f"'{address}'",
        "resources.learner_workers": "2",
        "resources.placement": "'spread'",
        "model.cache_dir": f"'{models}'",
        "data.synth.out": "'data'",
        "data.synth.n_train": "16",
        "data.synth.n_val": "4",
        "data.synth.blank_control": "False",
        "data.train": "('data/train.jsonl',)",
        "data.val": "('data/val.jsonl',)",
        "data.cache.path": "'cache.lmdb'",
        "trainer.prompts_per_step": "2",
        "rollout.n": "4",
        **extra,
    }
    return [item for k, v in values.items() for item in ("--set", f"{k}={v}")]


def placed(run_dir: Path) -> dict:
    """Where the run's latest start placed its workers (`cluster` in run.json)."""
    return json.loads((run_dir / "run.json").read_text())["cluster"]


def test_learners_on_two_nodes_train_from_the_drivers_folder_and_resume_after_kill(cluster, tmp_path: Path, model_cache: Path) -> None:
    address, folders = cluster
    driver = tmp_path / "driver"
    driver.mkdir()
    common = cluster_settings(address, model_cache, **{"trainer.steps": "4", "trainer.save_every": "2",
                                                              "trainer.val_every": "2"})  # fmt: skip
    out = run(QUICKSTART, "--run-dir", "whole", *common, cwd=driver)
    assert out.returncode == 0, out.stderr[-3000:]
    record = placed(driver / "whole")
    assert len(record["nodes"]) == 2
    learners = {record["actors"][f"learner {r}"]["node_id"] for r in (0, 1)}
    assert len(learners) == 2  # spread: one learner per node
    assert (driver / "whole" / "checkpoints" / "step_000004" / "learner").is_dir()
    assert (driver / "whole" / "final_model" / "config.json").is_file()
    assert not any(p.name == "whole" for f in folders.values() for p in f.iterdir())  # nothing in a node's folder
    assert "cluster: 2 node(s)" in out.stdout and "learner 1 on" in out.stdout
    rows = read_metrics(driver / "whole")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4] and all(r["learner/optimizer_steps"] == 1.0 for r in rows[1:])

    killed = driver / "killed"  # the same run, killed (driver only: the actors are the cluster's) after step 2
    experiment = held_experiment(driver / "held.py", QUICKSTART, killed, after_step=2)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "evr1"), "run", str(experiment), "--run-dir", "killed",
                             *common], cwd=driver, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        wait_until_held(proc, killed)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    resumed = run("--resume", "killed", cwd=driver)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert stable(read_metrics(killed)) == stable(rows)


def test_a_run_the_cluster_cannot_hold_is_refused_before_any_actor_starts(cluster, tmp_path: Path, model_cache: Path) -> None:
    address, _ = cluster
    out = run(f"{QUICKSTART}:debug", "--run-dir", str(tmp_path / "run"),
              *cluster_settings(address, model_cache, **{"resources.learner_workers": "4"}), cwd=tmp_path,
              timeout=300)  # fmt: skip
    assert out.returncode == 2, out.stderr[-3000:]
    assert "this run needs 2.75 CPUs (the cluster has 2)" in out.stderr
    assert "Traceback" not in out.stderr


def test_ray_address_from_the_environment_attaches_without_local_arguments(cluster, tmp_path: Path) -> None:
    """As `ray job submit` runs a driver: RAY_ADDRESS set, and num_cpus set in the experiment."""
    address, _ = cluster
    code = ("from evr1.runner.ray.cluster import ray_session\nfrom evr1.specs import ResourcesSpec\nimport ray\n"
            "with ray_session(ResourcesSpec(num_cpus=7, object_store_memory_mb=64)):\n"
            "    print(int(ray.cluster_resources()['CPU']))\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "RAY_ADDRESS": address}, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1] == "2"  # the cluster's 2 CPUs, not an embedded Ray of 7
    assert "resources.num_cpus, resources.object_store_memory_mb size an embedded Ray only" in out.stdout
