"""A learner that cannot reach its rendezvous fails fast, naming its rank, its host and the address."""

from __future__ import annotations

import socket
import subprocess
import sys


def test_a_learner_that_cannot_reach_the_rendezvous_fails_within_the_connect_timeout() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = (
        "import time\nfrom evr1.runner.learner.distributed import RendezvousError, init_process_group\n"
        "start = time.monotonic()\n"
        f"try:\n    init_process_group(1, 2, '127.0.0.1:{port}', backend='gloo', connect_timeout_s=2)\n"
        "except RendezvousError as exc:\n    print(round(time.monotonic() - start), exc)\n"
    )  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, _, message = out.stdout.strip().partition(" ")
    assert int(seconds) < 30  # the connect timeout, not the 600 s collective timeout
    assert message.startswith(f"learner rank 1 of 2 on {socket.gethostname()}: rendezvous at 127.0.0.1:{port} failed")
    assert "within 2 s (it could not reach it)" in message
