"""A worker node that cannot see the run's data folder: the run refuses at start, naming the node and the path.

The worker node runs in a mount namespace of its own where an empty tmpfs hides the data folder (as a
node without the shared file system would see it); the head node has no CPUs, so every actor lands there.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..loop.test_train import run
from .nodes import RAY, free_port, start_node, stop_node
from .test_cluster_runs import QUICKSTART, cluster_settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]

NODE_IP = socket.gethostbyname(socket.gethostname())


def _cpus(address: str, env: dict[str, str]) -> int:
    code = f"import ray\nray.init(address={address!r}, log_to_driver=False)\nprint(int(ray.cluster_resources().get('CPU', 0)))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False)
    return int(out.stdout.split()[-1]) if out.returncode == 0 and out.stdout.split() else -1


@pytest.fixture
def blind_cluster(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(address, driver folder): the worker node cannot see `<driver>/data`."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare (util-linux) for the worker node's mount namespace")
    driver, home = tmp_path / "driver", tmp_path / "home"
    (driver / "data").mkdir(parents=True)
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}  # no auth token
    port = free_port()
    address = f"{NODE_IP}:{port}"
    common = ["--disable-usage-stats", "--block", f"--object-store-memory={80 * 2**20}"]
    folders = [tmp_path / "head", tmp_path / "worker"]
    for folder in folders:
        folder.mkdir()
    procs = [start_node([RAY, "start", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false", *common],
                    env, folders[0])]  # fmt: skip
    try:
        hide = f"mount -t tmpfs evr1-hidden {driver / 'data'} && exec {RAY} start --address={address} --num-cpus=2 " + " ".join(common)
        deadline = time.time() + 180
        while _cpus(address, env) < 0:  # the head answers
            assert procs[0].poll() is None and time.time() < deadline, (folders[0] / "ray_start.log").read_text()[-2000:]
            time.sleep(1)
        procs.append(start_node(["unshare", "-m", "--propagation", "private", "sh", "-c", hide], env, folders[1]))
        while _cpus(address, env) < 2:
            assert procs[1].poll() is None and time.time() < deadline, (folders[1] / "ray_start.log").read_text()[-2000:]
            time.sleep(1)
        yield address, driver
    finally:
        for proc in reversed(procs):
            stop_node(proc)


def test_a_node_that_cannot_see_the_data_is_refused_at_start(blind_cluster, tmp_path: Path, model_cache: Path) -> None:
    address, driver = blind_cluster
    settings = cluster_settings(address, model_cache, **{"resources.learner_workers": "1",
                                                                "resources.placement": "'pack'"})  # fmt: skip
    out = run(f"{QUICKSTART}:debug", "--run-dir", str(tmp_path / "run"), *settings, cwd=driver, timeout=600)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "workers must see the run's files at the same paths as the driver (shared storage)" in out.stderr
    import ray

    node = ray.util.get_node_ip_address()  # the address Ray gives this machine's nodes
    assert f"on node {node} cannot see {driver / 'data' / 'train.jsonl'}" in out.stderr
    assert "Traceback" not in out.stderr
