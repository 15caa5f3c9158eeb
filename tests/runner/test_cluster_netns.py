"""A learner on a Ray node in its own network namespace, linked to the head by a veth pair the test makes.

The namespace has one link (to the host side of the pair) and no route out; the addresses are a
/30 of the test's own. Learner 1 lands there (placement 'spread' over the two nodes), so the
learners' rendezvous must be at learner 0's node address: a 127.0.0.1 address, as before, never
connects from the namespace.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from evr1.runner.metrics import read_metrics

from .test_cluster_runs import QUICKSTART, cluster_settings, placed
from .test_train import run

pytestmark = [pytest.mark.slow, pytest.mark.ray]

RAY = str(Path(sys.executable).parent / "ray")
HOST_IP, NS_IP = "10.213.77.1", "10.213.77.2"  # a /30 of the test's own, on the veth pair only


def _can_make_namespaces() -> str | None:
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    return None


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=60)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST_IP, 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # ray start --block stops its node's processes when it ends
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _start_node(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip


def _wait_nodes(address: str, count: int, env: dict[str, str], procs: list[subprocess.Popen]) -> None:
    code = ("import ray, time\nray.init(address=%r, log_to_driver=False)\n"
            "while sum(n['Alive'] for n in ray.nodes()) < %d: time.sleep(0.5)\n") % (address, count)  # fmt: skip
    waiter = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 180
    while waiter.poll() is None:
        if time.time() > deadline or any(p.poll() is not None for p in procs):
            waiter.kill()
            pytest.fail("the two Ray nodes did not come up")
        time.sleep(0.5)
    assert waiter.returncode == 0, waiter.stderr.read().decode()[-2000:] if waiter.stderr else ""


@pytest.fixture(scope="module")
def netns_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if (reason := _can_make_namespaces()) is not None:
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:6]
    ns, host_link, ns_link = f"evr1-{tag}", f"e1h{tag}", f"e1n{tag}"
    _sh("ip", "netns", "add", ns)
    procs: list[subprocess.Popen] = []
    try:
        _sh("ip", "link", "add", host_link, "type", "veth", "peer", "name", ns_link)
        _sh("ip", "link", "set", ns_link, "netns", ns)
        _sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", host_link)
        _sh("ip", "link", "set", host_link, "up")
        for command in (("ip", "addr", "add", f"{NS_IP}/30", "dev", ns_link), ("ip", "link", "set", ns_link, "up"),
                        ("ip", "link", "set", "lo", "up")):  # fmt: skip
            _sh("ip", "netns", "exec", ns, *command)
        home = tmp_path_factory.mktemp("netns-home")  # no auth token: Ray's auth stays off
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}
        port = _free_port()
        address = f"{HOST_IP}:{port}"
        common = ["--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats", "--block",
                  f"--object-store-memory={80 * 2**20}"]  # fmt: skip
        head_dir, ns_dir = tmp_path_factory.mktemp("head"), tmp_path_factory.mktemp("ns-node")
        procs.append(_start_node([RAY, "start", "--head", f"--port={port}", f"--node-ip-address={HOST_IP}", *common],
                                 env, head_dir))  # fmt: skip
        time.sleep(1)
        procs.append(_start_node(["ip", "netns", "exec", ns, RAY, "start", f"--address={address}",
                                  f"--node-ip-address={NS_IP}", *common], env, ns_dir))  # fmt: skip
        _wait_nodes(address, 2, env, procs)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)
        subprocess.run(["ip", "link", "del", host_link], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_a_learner_in_its_own_network_namespace_joins_the_rendezvous(netns_cluster: str, tmp_path: Path) -> None:
    common = cluster_settings(netns_cluster, tmp_path / "models", **{"trainer.steps": "1", "trainer.val_every": "1"})
    out = run(f"{QUICKSTART}:debug", "--run-dir", "run", *common, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    actors = placed(tmp_path / "run")["actors"]
    assert {actors["learner 0"]["ip"], actors["learner 1"]["ip"]} == {HOST_IP, NS_IP}
    assert [r["step"] for r in read_metrics(tmp_path / "run")] == [0, 1]
