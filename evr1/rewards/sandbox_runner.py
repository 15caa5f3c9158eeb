"""The program that runs inside the sandbox: it executes an answer and serves its values; stdlib only.

Run as `python -I -S -c SOURCE` (SOURCE: `sandbox_codec.py` then this file). It reads one JSON line, the job
{"mode": "module" | "program", "code", "stdin" (program), "limits": {"memory_mb", "cpu_s", "file_mb",
"processes" (or null: not set here)}}, sets those rlimits on itself (they hold for everything it starts) and
then runs the untrusted code; from that point nothing this process writes is trusted.

- "program": the code runs as `__main__` with the case's input on fd 0 and its output on fd 1 (read and
  compared outside); its stderr goes to a file in the working folder, bounded by the file-size limit.
- "module": the code runs as `__main__` with empty stdin and its output in that file; the runner answers
  {"names": {name: value}} (or {"error"}) and then, per request line {"op": "call" | "attr" | "item" |
  "list" | "len", "h": handle, ...}, {"v": value} or {"e": message, "type": exception name}. Values are
  plain data or handles (`sandbox_codec`): the tests run in another process and compare only plain data.
"""

# ruff: noqa: F821, BLE001, S102  (sandbox_codec's names are prepended; untrusted code may raise anything)

import os
import resource
import sys

_C_SLOTS = (type(int.__bool__), type(str.join))
OUTPUT_FILE = ".evr1-output"


def _limit(limits):
    for name, value in (("AS", limits["memory_mb"] << 20), ("CPU", int(limits["cpu_s"]) + 1),
                        ("FSIZE", limits["file_mb"] << 20), ("NOFILE", 64), ("CORE", 0),
                        ("NPROC", limits.get("processes"))):  # fmt: skip
        if value is not None:
            resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))


def _quiet_output(fds):
    out = os.open(OUTPUT_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for fd in fds:
        os.dup2(out, fd)
    os.close(out)


def _run_program(job):
    with open("stdin.txt", "w") as f:  # before the file-size limit
        f.write(job.get("stdin", ""))
    os.dup2(os.open("stdin.txt", os.O_RDONLY), 0)
    _limit(job["limits"])
    _quiet_output([2])
    status = 0
    try:
        exec(compile(job["code"], "<solution>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        status = 0 if exc.code in (None, 0) else 1
    except BaseException:
        status = 1
    try:
        sys.stdout.flush()
    except BaseException:
        status = 1
    os._exit(status)


class _Served:
    """The answer's namespace and the objects handed out by handle."""

    def __init__(self):
        self.objects = []

    def handle(self, obj):
        self.objects.append(obj)
        return {"h": len(self.objects) - 1, "truth": _truth(obj)}

    def resolve(self, n, truth):
        return self.objects[n]

    def answer(self, request):
        target = self.objects[request["h"]]
        op = request["op"]
        if op == "call":
            args = decode(request.get("args", []), self.resolve)
            kwargs = decode(request.get("kwargs", {"d": []}), self.resolve)
            return target(*args, **kwargs)
        if op == "attr":
            return getattr(target, str(request["name"]))
        if op == "item":
            return target[decode(request["key"], self.resolve)]
        if op == "list":
            return list(target)
        if op == "len":
            return len(target)
        raise ValueError(f"unknown op {op!r}")


def _truth(obj):
    """bool(obj) when its type's truth is builtin code (or the default), else None: the tests may not use it."""
    kind = type(obj)
    for name in ("__bool__", "__len__"):
        if type(getattr(kind, name, None)) not in (*_C_SLOTS, type(None)):
            return None
    try:
        return bool(obj)
    except BaseException:
        return None


def _error(exc):
    return {"e": f"{type(exc).__name__}: {exc}"[:500], "type": type(exc).__name__}


def _serve_module(job, requests, reply):
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    _quiet_output([1, 2])
    served = _Served()
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(job["code"], "<solution>", "exec"), namespace)
        names = {k: encode(v, served.handle) for k, v in namespace.items() if not k.startswith("__")}
        reply({"names": names})
    except BaseException as exc:
        reply({"error": _error(exc)["e"]})
        return
    for line in requests:
        try:
            reply({"v": encode(served.answer(loads(line)), served.handle)})
        except BaseException as exc:
            reply(_error(exc))


def main():
    requests = os.fdopen(os.dup(0), "rb")
    job = loads(requests.readline())
    if job["mode"] == "program":
        _run_program(job)
    _limit(job["limits"])
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    _serve_module(job, requests, lambda message: protocol.write(dumps(message)))
    os._exit(0)


main()
