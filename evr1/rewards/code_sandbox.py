"""Executing a Python answer against tests in a subprocess: temp dir, time/memory limits, no network.

The child is `python -I -S` (no site-packages, no user environment) running `code_harness.py`
in a fresh temporary directory with a minimal environment; it runs in its own session and the
whole process group is killed when it overruns the time limit.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).with_name("code_harness.py")


@dataclass(frozen=True)
class RunResult:
    passed: int
    total: int
    network_isolated: bool


def run_python(code: str, *, tests: list[str] | None = None, cases: list[dict[str, Any]] | None = None,
               timeout_s: float, memory_mb: int) -> RunResult:
    """Run `code` then each assert in `tests` (or each stdin/stdout case); raises TimeoutError."""
    nonce = secrets.token_hex(16)
    job: dict[str, Any] = {"nonce": nonce, "code": code, "memory_mb": memory_mb, "cpu_s": timeout_s}
    job.update({"cases": cases} if cases is not None else {"tests": tests or []})
    with tempfile.TemporaryDirectory(prefix="evr1-code-") as tmp:
        out_path = Path(tmp) / "stdout.txt"
        with out_path.open("wb") as out:
            child = subprocess.Popen(
                [sys.executable, "-I", "-S", str(HARNESS)],
                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.DEVNULL, cwd=tmp,
                env={"PATH": os.defpath, "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8"},
                start_new_session=True,
            )  # fmt: skip
            try:
                child.communicate(json.dumps(job).encode(), timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"code ran past {timeout_s:g} s") from None
            finally:
                _kill_group(child)
        tail = out_path.read_bytes()[-4096:].decode("utf-8", "replace")
    for line in reversed(tail.splitlines()):
        if line.startswith(nonce):
            result = json.loads(line[len(nonce) :])
            return RunResult(int(result["passed"]), int(result["total"]), bool(result["network_isolated"]))
    total = len(cases) if cases is not None else len(tests or [])
    return RunResult(0, total, False)  # killed by a limit (memory, CPU, file size) before reporting


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.wait()
