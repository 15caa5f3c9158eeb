"""Attaching to a `ray start` cluster with Ray's token auth on: the refusal says what to set, and it works once set.

The head and the drivers get a HOME of their own, so the token lives in the test's folder.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from .nodes import RAY, free_port, start_node, stop_node

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ATTACH = (
    "from evr1.runner.ray.cluster import ray_session\nfrom evr1.specs import ResourcesSpec\nimport ray\n"
    "with ray_session(ResourcesSpec(ray_address={address!r})):\n    print('CPUs', int(ray.cluster_resources()['CPU']))\n"
)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((NODE_IP, port)) == 0


NODE_IP = socket.gethostbyname(socket.gethostname())


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}
    subprocess.run([RAY, "get-auth-token", "--generate"], env=env, check=True, capture_output=True, timeout=120)
    port = free_port()
    head = start_node(
        [RAY, "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
         "--disable-usage-stats", "--block"],
        env | {"RAY_AUTH_MODE": "token"}, home,
    )  # fmt: skip
    try:
        deadline = time.time() + 120
        while not _listening(port):
            assert head.poll() is None and time.time() < deadline, "ray start --head did not come up"
            time.sleep(0.5)
        yield f"{NODE_IP}:{port}", env
    finally:
        stop_node(head)


def test_without_ray_auth_mode_the_refusal_names_the_token_settings(token_cluster) -> None:
    address, env = token_cluster
    out = subprocess.run([sys.executable, "-c", ATTACH.format(address=address)], env=env, capture_output=True,
                         text=True, timeout=180, check=False)  # fmt: skip
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert f"the Ray cluster at {address} refused the connection: Ray's token auth is on" in last
    assert "set RAY_AUTH_MODE=token" in last and "RAY_AUTH_TOKEN" in last


def test_with_the_token_settings_the_driver_attaches(token_cluster) -> None:
    address, env = token_cluster
    out = subprocess.run([sys.executable, "-c", ATTACH.format(address=address)], env=env | {"RAY_AUTH_MODE": "token"},
                         capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "CPUs 1"
