"""Shared fixtures of the eval tests: the 22 tiny benchmarks on disk and a local LLM judge."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evr1.eval.fixtures import write_fixtures


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 22 benchmark fixtures (official formats, generated videos), written once per session."""
    root = tmp_path_factory.mktemp("benchmarks")
    write_fixtures(root)
    return root


class Judge(ThreadingHTTPServer):
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that always replies `reply` (the fake at the edge)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = "8"
        self.requests: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: Judge

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        self.server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": self.server.reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def judge() -> Iterator[Judge]:
    server = Judge()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
