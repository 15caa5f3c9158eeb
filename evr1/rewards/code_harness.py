"""Runs untrusted Python in a child process (`python -I -S code_harness.py`); stdlib only.

Reads a JSON job from stdin: {"nonce", "code", "tests" (assert snippets) or "cases" (stdin/
expected stdout pairs), "memory_mb", "cpu_s"}. It limits memory, CPU time, file size and open
files, leaves the network (a new user + network namespace where the kernel allows it, and the
`socket` module disabled in any case), runs the tests and prints `nonce + JSON result` last.
This is a guard against accidents, not a security boundary against a determined attacker.
"""

import contextlib
import ctypes
import io
import json
import os
import resource
import sys

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000


def _limit(memory_mb: int, cpu_s: float) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    cpu = int(cpu_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _map_self(uid: int, gid: int) -> None:
    """Keep our own uid/gid inside the new user namespace (so the temp dir stays writable)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        except OSError:
            pass


def _leave_network() -> bool:
    isolated = False
    uid, gid = os.getuid(), os.getgid()
    try:
        isolated = ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        pass
    if isolated:
        _map_self(uid, gid)
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access is disabled in the code sandbox")

    for name in ("socket", "create_connection", "create_server", "socketpair", "fromfd", "getaddrinfo"):
        setattr(socket, name, refuse)
    return isolated


def _run_asserts(code: str, tests: list) -> int:
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(code, "<solution>", "exec"), namespace)
    except BaseException:
        return 0
    passed = 0
    for test in tests:
        try:
            exec(compile(test, "<test>", "exec"), namespace)
            passed += 1
        except BaseException:
            pass
    return passed


def _run_cases(code: str, cases: list) -> int:
    passed = 0
    for case in cases:
        out = io.StringIO()
        sys.stdin = io.StringIO(str(case.get("input", "")))
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "<solution>", "exec"), {"__name__": "__main__"})
        except BaseException:
            continue
        finally:
            sys.stdin = sys.__stdin__
        got = [line.rstrip() for line in out.getvalue().strip().splitlines()]
        expected = [line.rstrip() for line in str(case.get("output", "")).strip().splitlines()]
        passed += got == expected
    return passed


def main() -> None:
    job = json.loads(sys.stdin.read())
    report = os.fdopen(os.dup(1), "w")
    _limit(int(job["memory_mb"]), float(job["cpu_s"]))
    isolated = _leave_network()
    if "cases" in job:
        passed, total = _run_cases(job["code"], job["cases"]), len(job["cases"])
    else:
        passed, total = _run_asserts(job["code"], job["tests"]), len(job["tests"])
    sys.stdout.flush()
    report.write("\n" + job["nonce"] + json.dumps({"passed": passed, "total": total, "network_isolated": isolated}) + "\n")
    report.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
