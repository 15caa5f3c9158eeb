"""The tests' process: runs the reference's asserts against an answer that lives in another process; stdlib only.

Run as `python -I -S -c SOURCE` (SOURCE: `sandbox_codec.py` then this file) outside the sandbox; it never
executes the answer's code. Its stdin carries the job {"tests": [...], "limits": {"memory_mb", "cpu_s"}}, then
the answer's {"names": ...} (or {"error"}) from `sandbox_runner.py`, then one reply per request it writes on
stdout; its last line is the verdict {"passed": n, "total": m}.

The answer's top-level names are bound in the tests' namespace: plain data as itself, anything else (its
functions, classes, instances) as a `Remote`, which can be called, and whose attributes, items, length and
items-as-a-list can be read: each such use is one request answered by the sandbox with plain data or another
handle. Comparisons in the tests thus run here on plain data only: an object of the answer's that overrides
`__eq__`, `__bool__` or `__lt__` (the always-equal hack) cannot be compared or asserted (a `Remote` refuses),
and nothing the answer does (`sys._getframe`, patching, printing a forged result) can reach this process.
Names of builtins stay the builtins (an answer's `abs = lambda v: 0` does not answer the tests'
`abs(...)`). An exception raised by the answer is re-raised here as the builtin exception of the same name (else
`AnswerError`), so tests may expect one. Arguments passed to the answer must be plain data or `Remote`s.
"""

# ruff: noqa: F821, BLE001, S102, S110  (sandbox_codec's names are prepended; untrusted code may raise anything)

import builtins
import os
import resource


class AnswerError(Exception):
    """The answer raised an exception that is not a builtin one, or its process is gone."""


class _Channel:
    """Requests to the answer's process (on our stdout) and its replies (on our stdin)."""

    def __init__(self):
        self.replies = os.fdopen(os.dup(0), "rb")
        self.requests = os.fdopen(os.dup(1), "wb", buffering=0)
        self.gone = False

    def read(self):
        line = self.replies.readline()
        if not line:
            self.gone = True
            raise AnswerError("the answer's process is gone")
        return loads(line)

    def ask(self, request):
        if self.gone:
            raise AnswerError("the answer's process is gone")
        self.requests.write(dumps(request))
        reply = self.read()
        if "v" in reply:
            return decode(reply["v"], Remote)
        kind = getattr(builtins, str(reply.get("type")), None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = AnswerError
        raise kind(str(reply.get("e", "the answer failed")))


CHANNEL = None


def _handle_of(obj):
    if type(obj) is Remote:
        return {"h": obj._h}
    raise TypeError(f"a test passed a {type(obj).__name__} to the answer: only plain data and the answer's objects")


def _refuse(self, *args):
    raise TypeError("a test compared or hashed an object of the answer's; only plain builtin data is compared")


class Remote:
    """An object that stays in the answer's process (see the module docstring for what a test may do with it)."""

    __slots__ = ("_h", "_truth")
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __contains__ = _refuse

    def __init__(self, h, truth):
        self._h, self._truth = h, truth

    def _ask(self, op, **fields):
        return CHANNEL.ask({"op": op, "h": self._h, **fields})

    def __call__(self, *args, **kwargs):
        return self._ask("call", args=encode(list(args), _handle_of), kwargs=encode(kwargs, _handle_of))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._ask("attr", name=name)

    def __getitem__(self, key):
        return self._ask("item", key=encode(key, _handle_of))

    def __iter__(self):
        return iter(self._ask("list"))

    def __len__(self):
        return self._ask("len")

    def __bool__(self):
        if self._truth is None:
            raise TypeError("a test asserted an object of the answer's whose truth is not builtin")
        return self._truth

    def __repr__(self):
        return f"<answer object {self._h}>"


def _passed(tests, namespace):
    passed = 0
    for test in tests:
        try:
            exec(compile(test, "<test>", "exec"), namespace)
            passed += 1
        except BaseException:
            pass
    return passed


def main():
    global CHANNEL
    CHANNEL = _Channel()
    job = CHANNEL.read()
    limits = job["limits"]
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] << 20,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (int(limits["cpu_s"]) + 1,) * 2)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # a test's prints cannot reach the channel
        os.dup2(null, fd)
    tests = [str(t) for t in job["tests"]]
    passed = 0
    try:
        answer = CHANNEL.read()
        if "names" in answer:
            names = decode({"d": [[k, v] for k, v in answer["names"].items()]}, Remote)
            shadowing = set(dir(builtins))  # an answer's `abs = lambda v: 0` must not answer the tests' own `abs(...)`
            bound = {str(k): v for k, v in names.items() if str(k) not in shadowing}
            passed = _passed(tests, {**bound, "__name__": "__main__"})
    except BaseException:
        passed = 0
    CHANNEL.requests.write(dumps({"passed": passed, "total": len(tests)}))
    os._exit(0)


main()
