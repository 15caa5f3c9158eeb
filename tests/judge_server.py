"""A real OpenAI-compatible chat endpoint on 127.0.0.1: the LLM judge's fake at the edge.

`judge` (a fixture in tests/conftest.py) starts one per test; set `reply`, `fail_first` (answer
503 that many times) or `stall_s`, and read `requests` / `headers_seen` afterwards.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar


class Judge(ThreadingHTTPServer):
    """Replies to /v1/chat/completions with `reply` (and token `usage`, unless `usage` is None); can fail first or stall."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.reply = "8"
        self.fail_first = 0
        self.stall_s = 0.0
        self.usage: dict | None = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        self.requests: list[dict] = []
        self.headers_seen: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    server: Judge

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        self.server.headers_seen.append(dict(self.headers))
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        if self.server.fail_first > 0:
            self.server.fail_first -= 1
            self.send_error(503)
            return
        time.sleep(self.server.stall_s)
        reply = {"choices": [{"message": {"role": "assistant", "content": self.server.reply}}]}
        if self.server.usage is not None:
            reply["usage"] = self.server.usage
        payload = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


S = TypeVar("S", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: S) -> Iterator[S]:
    """`server` answering on a background thread until the block ends (then shut down and closed)."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def running_judge() -> Iterator[Judge]:
    with serving(Judge()) as server:
        yield server
