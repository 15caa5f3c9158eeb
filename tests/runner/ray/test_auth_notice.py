"""Ray's notice that it turned token auth on is not printed for the embedded Ray of a run (no one else connects to
it), but Ray's warning that auth is off stays. Each case starts a local Ray in a process of its own, HOME and
RAY_* variables its own, and reads what it printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.runner.ray.cluster import AUTH_NOTICE

pytestmark = [pytest.mark.slow, pytest.mark.ray]

EMBEDDED = ("from evr1.runner.ray.cluster import ray_session\nfrom evr1.specs import ResourcesSpec\n"
            "with ray_session(ResourcesSpec(num_cpus=1, object_store_memory_mb=80)):\n    print('ran')\n")
PLAIN = ("import ray\nray.init(address='local', num_cpus=1, include_dashboard=False, object_store_memory=80 * 2**20,"
         " configure_logging=False)\nprint('ran')\nray.shutdown()\n")
DISABLED = "Token authentication is disabled for this Ray cluster."


def _printed(code: str, home: Path, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home), **env}
    out = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ran", out.stderr
    return out.stderr


def test_the_embedded_ray_of_a_run_prints_no_auth_notice(tmp_path: Path) -> None:
    assert AUTH_NOTICE in _printed(PLAIN, tmp_path)  # Ray itself prints it: what ray_session leaves out
    assert AUTH_NOTICE not in _printed(EMBEDDED, tmp_path)


def test_the_warning_that_auth_is_off_is_kept(tmp_path: Path) -> None:
    """Ray warns when a token-less machine starts a Ray without auth (RAY_AUTH_MODE unset, a cluster joined):
    here the same logger's other message, the one a user needs, reaches stderr through ray_session's filter."""
    code = ("import logging\nfrom evr1.runner.ray.cluster import _without_auth_notice\n"
            "from ray._private.authentication.authentication_token_setup import _warn_token_auth_disabled,"
            " _warn_token_auth_enabled\nwith _without_auth_notice():\n    _warn_token_auth_disabled()\n"
            "    _warn_token_auth_enabled()\nprint('ran')\n")
    printed = _printed(code, tmp_path)
    assert DISABLED in printed and AUTH_NOTICE not in printed
