"""A SandboxFusion-style HTTP code-execution service as the sandbox, for clusters that forbid namespaces.

One run is a POST to `{url}/run_code` with {"code": the runner's source, "language": "python", "stdin": the
job (and requests), "run_timeout": s, "memory_limit_MB": m}; the reply is {"status": "Success" | "Failed" |
"SandboxError", "message", "run_result": {"status", "return_code", "stdout", "stderr", ...}}. "Success" and
"Failed" (the program's own failure) are results; "SandboxError", HTTP 5xx/408/429 and connection errors are
the service's, retried `retries` times with exponential back-off, then raised as `SandboxUnavailable`.

A run keeps no state, so a session replays: each new request runs the answer again with all requests so far,
in order, and its replies to the earlier ones must be the same as before (an answer whose replies differ
between replays fails: it is not deterministic). A sample with k calls costs k + 1 runs.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from evr1.rewards.sandbox_local import Deadline

_RETRY_STATUS = {408, 429}


class SandboxUnavailable(RuntimeError):
    """The code-execution service could not be reached or failed itself."""


class RemoteSandbox:
    """Runs the runner on a SandboxFusion-style service at `url`."""

    name = "remote"
    limits = "the service's own (run_timeout and memory_limit_MB sent with each run)"

    def __init__(self, url: str, memory_mb: int, retries: int, source: str) -> None:
        self.url = url.rstrip("/") + "/run_code"
        self.memory_mb, self.retries, self.source = memory_mb, retries, source

    def run(self, stdin: bytes, deadline: Deadline, cap: int) -> tuple[bytes, int | None, str | None]:
        """(stdout, return code, why it failed) of one run, stdout up to `cap` bytes; raises SandboxUnavailable."""
        body = json.dumps({"code": self.source, "language": "python", "stdin": stdin.decode(),
                           "run_timeout": max(deadline.remaining(), 0.1), "memory_limit_MB": self.memory_mb}).encode()  # fmt: skip
        for attempt in range(self.retries + 1):
            if deadline.expired:
                return b"", None, "timed out"
            try:
                reply = self._post(body, deadline.remaining() + 5, cap)
                if reply.get("status") in ("Success", "Failed"):
                    result = reply.get("run_result") or {}
                    stdout = str(result.get("stdout") or "").encode()
                    if len(stdout) > cap:
                        return b"", None, f"printed over {cap >> 20} MB"
                    reason = None if result.get("status") == "Finished" else f"run {result.get('status')}"
                    code = result.get("return_code")
                    return stdout, code if isinstance(code, int) else None, reason
                problem = f"{reply.get('status')}: {str(reply.get('message'))[:200]}"
            except urllib.error.HTTPError as exc:
                if exc.code < 500 and exc.code not in _RETRY_STATUS:
                    raise SandboxUnavailable(f"{self.url} answered HTTP {exc.code}") from None
                problem = f"HTTP {exc.code}"
            except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < self.retries:
                time.sleep(min(0.5 * 2**attempt, max(deadline.remaining(), 0)))
        raise SandboxUnavailable(f"code sandbox {self.url} failed after {self.retries + 1} tries: {problem}")

    def _post(self, body: bytes, timeout: float, cap: int) -> dict:
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(cap * 2 + (1 << 20))  # JSON escapes may double it
        reply = json.loads(data)
        if not isinstance(reply, dict):
            raise ValueError("the reply is not a JSON object")  # noqa: TRY004
        return reply


class ReplaySession:
    """A stateful conversation with the answer on a stateless service: every request replays all before it."""

    def __init__(self, sandbox: RemoteSandbox, deadline: Deadline, cap: int) -> None:
        self.sandbox, self.deadline, self.cap = sandbox, deadline, cap
        self.requests: list[bytes] = []
        self.replies: list[bytes] = []
        self.reason: str | None = None

    def ask(self, line: bytes) -> bytes:
        if self.reason:
            return b""
        self.requests.append(line)
        stdout, _, reason = self.sandbox.run(b"".join(self.requests), self.deadline, self.cap * len(self.requests))
        replies = stdout.splitlines(keepends=True)
        if len(replies) < len(self.requests) or not all(r.endswith(b"\n") for r in replies[: len(self.requests)]):
            self.reason = reason or "the answer's process ended early"
            return b""
        if replies[: len(self.replies)] != self.replies:
            self.reason = "the answer is not deterministic: its replies changed between replays"
            return b""
        self.replies.append(replies[len(self.replies)])
        return self.replies[-1]

    def close(self) -> None:
        """Nothing runs between requests."""
