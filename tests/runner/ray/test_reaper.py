"""A driver killed with `kill -9` leaves none of its local Ray's processes behind (agents included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evr1.runner.ray.reaper import _descendants

pytestmark = [pytest.mark.slow, pytest.mark.ray]

DRIVER = """
import sys, time
from evr1.runner.ray.cluster import ray_session
from evr1.specs import ResourcesSpec
with ray_session(ResourcesSpec(num_cpus=1, object_store_memory_mb=80)):
    print("ready", flush=True)  # Ray started and its helpers recorded by the watchdog
    sys.stdin.read()  # held here until the test kills it
"""


def _names(pids: list[int]) -> list[str]:
    names = []
    for pid in pids:
        try:
            names.append(Path(f"/proc/{pid}/cmdline").read_text().split("\0")[0])
        except OSError:
            pass
    return names


def test_a_killed_driver_leaves_no_ray_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    helpers: list[int] = []
    try:
        assert proc.stdout.readline().strip() == "ready"
        helpers = _descendants(proc.pid)
        names = _names(helpers)
        assert any("DashboardAgent" in n for n in names) and any("raylet" in n for n in names), names
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _names(helpers):
            time.sleep(0.1)
        assert _names(helpers) == [], "Ray processes outlived the killed driver"
    finally:
        for pid in [proc.pid, *helpers]:  # clean up whatever is left if the test failed
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)
