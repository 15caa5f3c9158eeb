"""Scoring a Python answer against tests, with the answer in a sandbox and the verdict outside its reach.

Asserts (`tests`): the answer runs in the sandbox (`sandbox_runner.py`, "module" mode); the tests run in a
separate, trusted process (`code_harness.py`) on the host, and this module relays the tests' requests to
the answer and its replies back, each a capped line. The verdict is the tests' process's last line: the
answer can neither write it nor reach the process that does. Stdin/stdout `cases`: one sandbox run per
case with the case's input; its output is compared here. `CodeSandboxSpec.timeout_s` is the wall time of
one sample (all its tests or cases); at expiry everything of it is killed and it scores 0.

Backends (`CodeSandboxSpec.sandbox`): "bubblewrap" (`sandbox_local.Bubblewrap`), "remote" (a
SandboxFusion-style service, `sandbox_remote`), "unsandboxed" (a plain child process: opt-in only).
`sandbox_for` refuses, with one line naming what is missing and the options, when the chosen isolation
does not work here.
"""

from __future__ import annotations

import functools
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError
from evr1.rewards.sandbox_codec import dumps, loads
from evr1.rewards.sandbox_local import Bubblewrap, Deadline, Process, Unsandboxed, python_binary
from evr1.rewards.sandbox_remote import RemoteSandbox, ReplaySession, SandboxUnavailable

if TYPE_CHECKING:
    from evr1.specs import CodeSandboxSpec

logger = logging.getLogger(__name__)
_HERE = Path(__file__).parent
MESSAGE_CAP = 16 << 20  # one request of the tests, or one reply of the answer (a returned value)
__all__ = ["RunResult", "SandboxUnavailable", "bubblewrap_problem", "run_python", "sandbox_for"]


def _source(name: str) -> str:
    return (_HERE / "sandbox_codec.py").read_text() + "\n" + (_HERE / name).read_text()


RUNNER = _source("sandbox_runner.py")
HARNESS = _source("code_harness.py")


@dataclass(frozen=True)
class RunResult:
    passed: int
    total: int
    reason: str | None = None  # why not every test could run: a timeout, a limit, the answer's process died


class _Local:
    """A local backend (bubblewrap or unsandboxed) seen as sessions and one-shot program runs."""

    def __init__(self, backend: Bubblewrap | Unsandboxed, spec: CodeSandboxSpec) -> None:
        self.backend, self.spec = backend, spec
        self.name, self.limits = backend.name, backend.limits

    def session(self, deadline: Deadline) -> _LocalSession:
        return _LocalSession(self.backend.start(RUNNER, deadline), MESSAGE_CAP)

    def program(self, job: bytes, deadline: Deadline) -> tuple[bytes, int | None, str | None]:
        process = self.backend.start(RUNNER, deadline)
        try:
            process.send(job)
            process.end_input()
            out = process.output(self.spec.output_mb << 20)
            return out, process.wait(), process.reason
        finally:
            process.close()


class _LocalSession:
    def __init__(self, process: Process, cap: int) -> None:
        self.process, self.cap = process, cap

    @property
    def reason(self) -> str | None:
        return self.process.reason

    def ask(self, line: bytes) -> bytes:
        reply = self.process.readline(self.cap) if self.process.send(line) else b""
        if not reply and not self.process.reason:
            self.process.reason = "the answer's process ended (it exited, crashed or was killed by a limit)"
        return reply

    def close(self) -> None:
        self.process.close()


class _Remote:
    def __init__(self, spec: CodeSandboxSpec) -> None:
        assert spec.url is not None
        self.sandbox = RemoteSandbox(spec.url, spec.memory_mb, spec.retries, RUNNER)
        self.cap = spec.output_mb << 20
        self.name, self.limits = self.sandbox.name, self.sandbox.limits

    def session(self, deadline: Deadline) -> ReplaySession:
        return ReplaySession(self.sandbox, deadline, MESSAGE_CAP)

    def program(self, job: bytes, deadline: Deadline) -> tuple[bytes, int | None, str | None]:
        return self.sandbox.run(job, deadline, self.cap)


OPTIONS = ("install bubblewrap (`make setup`, or `apt-get install bubblewrap`) where user namespaces are allowed;"
           " or reward.code.sandbox='remote' with reward.code.url='http://HOST:PORT' (a SandboxFusion-style service);"
           " or reward.code.sandbox='unsandboxed' to run answers as plain processes (trusted data only);"
           " or reward.code.execute=False to skip Python execution")  # fmt: skip


@functools.lru_cache(maxsize=16)
def sandbox_for(spec: CodeSandboxSpec) -> _Local | _Remote:
    """The backend `spec` asks for, checked once: a ConfigError (one line) when it cannot isolate answers here."""
    if spec.sandbox == "remote":
        backend: _Local | _Remote = _Remote(spec)
    elif spec.sandbox == "unsandboxed":
        backend = _Local(Unsandboxed(), spec)
    else:
        problem = bubblewrap_problem()
        if problem:
            raise ConfigError(f"code rewards refuse to run answers unsandboxed: {problem}; {OPTIONS}")
        backend = _Local(Bubblewrap(spec.memory_mb, spec.processes, spec.file_mb, uid_base=spec.uid_base), spec)
    logger.info("code sandbox: %s; limits in force: %s", backend.name, backend.limits)
    return backend


@functools.lru_cache(maxsize=1)
def bubblewrap_problem() -> str | None:
    """Why the bubblewrap sandbox cannot run here (checked by running one program in it), or None."""
    from evr1.specs import CodeSandboxSpec

    spec = CodeSandboxSpec(timeout_s=30.0)
    local = Bubblewrap(spec.memory_mb, spec.processes, spec.file_mb, uid_base=spec.uid_base)
    if local.bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    deadline = Deadline(spec.timeout_s)
    try:
        out, status, reason = _Local(local, spec).program(_job("program", "print(6 * 7)", spec, stdin=""), deadline)
    finally:
        deadline.close()
    if out.strip() == b"42" and status == 0:
        return None
    return f"the bubblewrap sandbox does not start here ({reason or f'exit status {status}'}; user namespaces allowed?)"


def _limits(spec: CodeSandboxSpec, backend: Any) -> dict[str, Any]:
    processes = backend.backend.nproc_limit() if isinstance(backend, _Local) else None
    return {"memory_mb": spec.memory_mb, "cpu_s": spec.timeout_s, "file_mb": spec.file_mb, "processes": processes}


def _job(mode: str, code: str, spec: CodeSandboxSpec, backend: Any = None, **fields: Any) -> bytes:
    return dumps({"mode": mode, "code": code, "limits": _limits(spec, backend), **fields})


def run_python(code: str, *, tests: list[str] | None = None, cases: list[dict[str, Any]] | None = None,
               spec: CodeSandboxSpec) -> RunResult:  # fmt: skip
    """Run `code` against each assert in `tests` (or each stdin/stdout case) in `spec`'s sandbox.

    Raises ConfigError when the sandbox is unavailable, SandboxUnavailable when a remote one fails; anything
    the answer does (time, limits, crashes, escape attempts) ends in a RunResult with its reason.
    """
    backend = sandbox_for(spec)
    deadline = Deadline(spec.timeout_s)
    try:
        if cases is not None:
            result = _cases(backend, code, cases, spec, deadline)
        else:
            result = _asserts(backend, code, list(tests or []), spec, deadline)
    finally:
        deadline.close()
    if deadline.expired:
        return RunResult(0, result.total, f"timed out after {spec.timeout_s:g} s")
    return result


def _cases(backend: Any, code: str, cases: list[dict[str, Any]], spec: CodeSandboxSpec, deadline: Deadline) -> RunResult:
    passed, reason = 0, None
    for case in cases:
        out, status, why = backend.program(_job("program", code, spec, backend, stdin=str(case.get("input", ""))), deadline)
        got = [line.rstrip() for line in out.decode("utf-8", "replace").strip().splitlines()]
        expected = [line.rstrip() for line in str(case.get("output", "")).strip().splitlines()]
        passed += status == 0 and got == expected
        reason = reason or why
    return RunResult(passed, len(cases), reason)


def _asserts(backend: Any, code: str, tests: list[str], spec: CodeSandboxSpec, deadline: Deadline) -> RunResult:
    folder = tempfile.mkdtemp(prefix="evr1-tests-")  # the tests' own working folder, removed with them
    harness = Process([python_binary(), "-I", "-S", "-c", HARNESS], deadline, cwd=folder, folder=folder)
    session = None
    try:
        session = backend.session(deadline)
        harness.send(dumps({"tests": tests, "limits": {"memory_mb": max(spec.memory_mb, 256), "cpu_s": spec.timeout_s}}))
        reply = session.ask(_job("module", code, spec, backend))
        while True:
            if reply:
                harness.send(reply)
            else:
                harness.end_input()  # the answer is gone: the tests' requests fail from now on
            line = harness.readline(MESSAGE_CAP)
            if not line:
                return RunResult(0, len(tests), session.reason or "the tests' process ended without a verdict")
            message = loads(line)
            if "passed" in message:
                passed = message["passed"]
                if type(passed) is not int or not 0 <= passed <= len(tests):
                    raise ValueError(f"the tests' process gave the verdict {message!r}")
                return RunResult(passed, len(tests), session.reason)
            reply = session.ask(line) if reply else b""
    finally:
        if session is not None:
            session.close()
        harness.close()
