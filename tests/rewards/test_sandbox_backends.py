"""The remote backend against a SandboxFusion-style server on 127.0.0.1 (which runs each program in evr1's own
bubblewrap sandbox), and the refusal to run answers when no isolation is available."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from reward_helpers import accuracies, make

from evr1.errors import ConfigError
from evr1.rewards import code_reward, code_sandbox
from evr1.rewards.code_sandbox import run_python
from evr1.rewards.sandbox_local import Bubblewrap, Deadline
from evr1.specs import CodeSandboxSpec, RewardSpec

PY = {"language": "python", "tests": ["assert f(1) == 2", "assert f(2) == 3", "assert f(-1) == 0"]}


class _Service(BaseHTTPRequestHandler):
    """POST /run_code: runs the posted Python with its stdin in a bubblewrap sandbox; fails `fail_next` requests."""

    fail_next = 0
    requests = 0

    def do_POST(self) -> None:
        type(self).requests += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/run_code":
            return self._reply(404, {"detail": "not found"})
        if type(self).fail_next:
            type(self).fail_next -= 1
            return self._reply(503, {"detail": "busy"})
        deadline = Deadline(float(body["run_timeout"]))
        process = Bubblewrap(int(body["memory_limit_MB"]), 16, 16, uid_base=CodeSandboxSpec().uid_base).start(body["code"], deadline)
        try:
            process.send(body["stdin"].encode())
            process.end_input()
            out = process.output(1 << 20)
            code = process.wait()
        finally:
            process.close()
            deadline.close()
        status = "TimeLimitExceeded" if deadline.expired else "Finished"
        self._reply(200, {"status": "Success" if code == 0 else "Failed", "message": "",
                          "run_result": {"status": status, "return_code": code, "stdout": out.decode(), "stderr": ""}})  # fmt: skip

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Service.fail_next, _Service.requests = 0, 0
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


REMOTE_CASES = [
    ("def f(x):\n    return x + 1", PY, 1.0),
    ("def f(x):\n    return x + 1 if x > 0 else 5", PY, 2 / 3),
    ("def f(x):\n    class E:\n        __eq__ = lambda s, o: True\n    return E()", PY, 0.0),
    ("import random\ndef f(x):\n    return x + 1 + random.random()", PY, 0.0),  # differs between replays
    ("print(sum(map(int, input().split())))",
     {"language": "python", "cases": [{"input": "1 2", "output": "3"}, {"input": "2 2", "output": "5"}]}, 0.5),
]  # fmt: skip


def test_the_remote_backend_scores_like_the_local_one(service: str) -> None:
    spec = RewardSpec(code=CodeSandboxSpec(sandbox="remote", url=service, timeout_s=10.0, memory_mb=256))
    inputs = [make(f"<answer>```python\n{c}\n```</answer>", a, "code", sample_id=str(i)) for i, (c, a, _) in enumerate(REMOTE_CASES)]
    assert accuracies(code_reward.score(inputs, spec)) == pytest.approx([e for _, _, e in REMOTE_CASES])


def test_a_session_replays_every_request(service: str) -> None:
    spec = CodeSandboxSpec(sandbox="remote", url=service, timeout_s=10.0)
    result = run_python("def f(x):\n    return x + 1", tests=PY["tests"], spec=spec)
    assert (result.passed, result.total) == (3, 3)
    assert _Service.requests == 4  # the module alone, then one run per call: 1 + 3


def test_remote_failures_are_retried_then_fail_only_their_sample(service: str) -> None:
    _Service.fail_next = 2
    spec = CodeSandboxSpec(sandbox="remote", url=service, timeout_s=10.0, retries=2)
    assert run_python("def f(x):\n    return x + 1", tests=["assert f(1) == 2"], spec=spec).passed == 1
    down = RewardSpec(code=CodeSandboxSpec(sandbox="remote", url="http://127.0.0.1:9", timeout_s=2.0, retries=0))
    svg = "<svg><rect width='1'/></svg>"
    values = code_reward.score([make("<answer>def f(x): return x + 1</answer>", PY, "code"),
                                make(f"<answer>{svg}</answer>", svg, "code")], down)  # fmt: skip
    assert isinstance(values[0], code_sandbox.SandboxUnavailable) and "127.0.0.1:9" in str(values[0]) and values[1] == 1.0


def test_without_bubblewrap_code_rewards_refuse(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    code_sandbox.bubblewrap_problem.cache_clear()
    code_sandbox.sandbox_for.cache_clear()
    try:
        spec = RewardSpec(code=CodeSandboxSpec(timeout_s=2.0))
        with pytest.raises(ConfigError) as refused:
            code_reward.score([make("<answer>def f(x): return x + 1</answer>", PY, "code")], spec)
        message = str(refused.value)
        assert "\n" not in message and "bubblewrap (bwrap) is not installed" in message
        assert all(option in message for option in ("sandbox='remote'", "code.url", "sandbox='unsandboxed'", "execute=False"))
        opted_in = RewardSpec(code=CodeSandboxSpec(sandbox="unsandboxed", timeout_s=5.0))
        assert code_reward.score([make("<answer>def f(x): return x + 1</answer>", PY, "code")], opted_in) == [1.0]
    finally:
        code_sandbox.bubblewrap_problem.cache_clear()
        code_sandbox.sandbox_for.cache_clear()


def test_remote_needs_a_url() -> None:
    with pytest.raises(ValueError, match="code.url"):
        CodeSandboxSpec(sandbox="remote")
