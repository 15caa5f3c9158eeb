"""The worker behind `process_pool`: `python -m evr1.rewards.process_worker module:function [warm_up [args]]`.

`warm_up` (a `module:function`) runs once before the first call, with `args` (a JSON list) when given.

Reads one JSON list of arguments per line from stdin and answers one JSON line on the original
stdout (`{"status": "ok" | "error", "value": ...}`); anything the function prints goes to stderr.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any


def _resolve(target: str) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str]) -> None:
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints must not corrupt the protocol

    def send(status: str, value: Any) -> None:
        reply.write(json.dumps({"status": status, "value": value}) + "\n")
        reply.flush()

    try:
        fn = _resolve(argv[0])
        if len(argv) > 1:
            _resolve(argv[1])(*(json.loads(argv[2]) if len(argv) > 2 else []))
    except Exception as exc:  # noqa: BLE001 - reported to the caller
        send("error", f"{type(exc).__name__}: {exc}")
        return
    send("ready", None)
    for line in sys.stdin:
        try:
            send("ok", fn(*json.loads(line)))
        except Exception as exc:  # noqa: BLE001 - reported to the caller; the worker lives on
            send("error", f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
