"""A learner on a Ray node in its own network namespace, linked to the head by a veth pair the test makes.

The namespace has one link (to the host side of the pair) and no route out; the addresses are a
/30 of the test's own. Learner 1 lands there (placement 'spread' over the two nodes), so the
learners' rendezvous must be at learner 0's node address: a 127.0.0.1 address, as before, never
connects from the namespace.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..loop.test_train import run
from .nodes import RAY, free_port, start_node, stop_node
from .test_cluster_runs import QUICKSTART, cluster_settings, placed

pytestmark = [pytest.mark.slow, pytest.mark.ray]

_A, _B = uuid.uuid4().int % 256, 4 * (uuid.uuid4().int % 64)  # a /30 of the test's own, on the veth pair only
HOST_IP, NS_IP = f"10.213.{_A}.{_B + 1}", f"10.213.{_A}.{_B + 2}"


def _can_make_namespaces() -> str | None:
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    return None


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=60)


def _logs(folders: list[Path]) -> str:
    return "\n".join(f"{f}: {(f / 'ray_start.log').read_text()[-1500:]}" for f in folders)


def _wait(ready, procs: list[subprocess.Popen], folders: list[Path], what: str) -> None:
    deadline = time.time() + 180
    while not ready():
        if time.time() > deadline or any(p.poll() is not None for p in procs):
            pytest.fail(f"{what} did not come up:\n{_logs(folders)}")
        time.sleep(0.5)


def _listening(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


def _nodes_alive(address: str, env: dict[str, str]) -> int:
    code = f"import ray\nray.init(address={address!r}, log_to_driver=False)\nprint(sum(n['Alive'] for n in ray.nodes()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False)
    return int(out.stdout.split()[-1]) if out.returncode == 0 and out.stdout.split() else 0


@pytest.fixture(scope="module")
def netns_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if (reason := _can_make_namespaces()) is not None:
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:6]
    ns, host_link, ns_link = f"evr1-{tag}", f"e1h{tag}", f"e1n{tag}"
    procs: list[subprocess.Popen] = []
    try:
        _sh("ip", "netns", "add", ns)
        _sh("ip", "link", "add", host_link, "type", "veth", "peer", "name", ns_link)
        _sh("ip", "link", "set", ns_link, "netns", ns)
        _sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", host_link)
        _sh("ip", "link", "set", host_link, "up")
        for command in (("ip", "addr", "add", f"{NS_IP}/30", "dev", ns_link), ("ip", "link", "set", ns_link, "up"),
                        ("ip", "link", "set", "lo", "up")):  # fmt: skip
            _sh("ip", "netns", "exec", ns, *command)
        home = tmp_path_factory.mktemp("netns-home")  # no auth token: Ray's auth stays off
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}
        port = free_port(HOST_IP)
        address = f"{HOST_IP}:{port}"
        common = ["--num-cpus=1", "--disable-usage-stats", "--block", f"--object-store-memory={80 * 2**20}"]
        folders = [tmp_path_factory.mktemp("head"), tmp_path_factory.mktemp("ns-node")]
        procs.append(start_node([RAY, "start", "--head", f"--port={port}", f"--node-ip-address={HOST_IP}",
                                  "--include-dashboard=false", *common],
                                 env, folders[0]))  # fmt: skip
        _wait(lambda: _listening(HOST_IP, port), procs, folders, "the head node")
        procs.append(start_node(["ip", "netns", "exec", ns, RAY, "start", f"--address={address}",
                                  f"--node-ip-address={NS_IP}", *common], env, folders[1]))  # fmt: skip
        _wait(lambda: _nodes_alive(address, env) == 2, procs, folders, "the node in the namespace")
        yield address
    finally:
        for proc in reversed(procs):
            stop_node(proc)
        subprocess.run(["ip", "link", "del", host_link], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_a_learner_in_its_own_network_namespace_joins_the_rendezvous(netns_cluster: str, tmp_path: Path, model_cache: Path) -> None:
    common = cluster_settings(netns_cluster, model_cache, **{"trainer.steps": "1", "trainer.val_every": "1"})
    out = run(f"{QUICKSTART}:debug", "--run-dir", "run", *common, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    actors = placed(tmp_path / "run")["actors"]
    assert {actors["learner 0"]["ip"], actors["learner 1"]["ip"]} == {HOST_IP, NS_IP}
    assert [r["step"] for r in read_metrics(tmp_path / "run")] == [0, 1]
