"""A run on a two-node Ray cluster that loses a node (its processes killed with -9 while the run is held at a known
point, `holding.held_at_draw`) goes on by itself on a replacement node: it records the lost workers, places its
actors again, reloads the last checkpoint and ends with the metrics of an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..holding import held_at_draw, release_marker, wait_until_held
from ..loop.test_train import run, stable
from .test_cluster_runs import QUICKSTART, SMALL, cluster_settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def add_node(nodes, folder: Path):
    """A node of 1 CPU whose workers run in `folder` (the folder its raylet starts in)."""
    here = Path.cwd()
    try:
        os.chdir(folder)
        return nodes.add_node(num_cpus=1, object_store_memory=SMALL)
    finally:
        os.chdir(here)


def test_a_run_that_loses_a_node_goes_on_on_a_replacement_node(tmp_path: Path, model_cache: Path) -> None:
    from ray.cluster_utils import Cluster

    folders = {name: tmp_path / name for name in ("head", "worker", "spare", "driver")}
    for folder in folders.values():
        folder.mkdir()
    here = Path.cwd()
    try:
        os.chdir(folders["head"])
        nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": SMALL,
                                                              "include_dashboard": False})  # fmt: skip
    finally:
        os.chdir(here)
    try:
        worker = add_node(nodes, folders["worker"])
        nodes.wait_for_nodes()
        driver = folders["driver"]
        common = cluster_settings(nodes.address, model_cache, **{"trainer.steps": "4", "trainer.save_every": "2",
                                                                 "trainer.val_every": "0"})  # fmt: skip
        whole = run(QUICKSTART, "--run-dir", "whole", *common, cwd=driver)
        assert whole.returncode == 0, whole.stderr[-3000:]

        lost = driver / "lost"  # held at step 3's draw of records, after step 2's checkpoint
        experiment = held_at_draw(driver / "held.py", QUICKSTART, lost, draw=3)
        log = tmp_path / "lost.err"
        with log.open("w") as err:
            proc = subprocess.Popen([str(Path(sys.executable).parent / "evr1"), "run", str(experiment), "--run-dir",
                                     "lost", *common], cwd=driver, stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
        try:
            wait_until_held(proc, lost, log=log)
            nodes.remove_node(worker, allow_graceful=False)  # with one of the learners (spread: one per node)
            add_node(nodes, folders["spare"])
            nodes.wait_for_nodes()
            release_marker(lost).touch()
            assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        nodes.shutdown()
    rows = read_metrics(lost)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert [r.get("faults/lost_workers") for r in rows] == [None, None, 1.0, None]
    assert stable([{k: v for k, v in r.items() if not k.startswith("faults/")} for r in rows]) == stable(
        read_metrics(driver / "whole"))
    info = json.loads((lost / "run.json").read_text())
    events = [e for e in info["history"] if e["event"] == "worker lost"]
    assert len(events) == 1 and events[0]["step"] == 3, events
    assert sum(role.startswith("learner") for role in events[0]["workers"]) == 1, events
    assert info["status"] == "finished" and len(info["cluster"]["nodes"]) == 2  # the head and the spare
