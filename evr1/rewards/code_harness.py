"""Runs untrusted Python in a child process (`python -I -S code_harness.py`); stdlib only.

Reads a JSON job from stdin: {"nonce", "code", "tests" (assert snippets) or "cases" (stdin/
expected stdout pairs), "memory_mb", "cpu_s"}. It limits memory, CPU time, file size and open
files, leaves the network (a new user + network namespace where the kernel allows it, and the
`socket` module disabled in any case), runs the tests and prints `nonce + JSON result` last.

Asserts are rewritten before they run: each operand of a value comparison (`==`, `!=`, `<`,
`in`, ...) must be plain builtin data (exact `bool`, `int`, `float`, `complex`, `str`, `bytes`,
`None`, and lists, tuples, sets, frozensets and dicts of them), so the comparison runs builtin
code only; the tested values of `assert`, `not`, `and`/`or` and `x if c else y` must be plain
too, or have builtin `__bool__`/`__len__` (a `re.Match`). An object that overrides `__eq__`,
`__bool__`, `__lt__`, ... (the always-equal hack) thus fails the test; `is`/`is not` are left
as they are. Compared results of other types (an `Enum`, a `Fraction`) fail even when equal.

This is a guard against accidents and the usual reward hacks, not a security boundary against a
determined attacker. Known limits: the solution runs in this process, so it can reach the
harness through `sys.modules["__main__"]`, `sys._getframe` or `gc` (patch the checks, or read
the nonce and print a forged result line before exiting), and stdin/stdout cases compare printed
text only.
"""

import ast
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


PLAIN = frozenset({bool, int, float, complex, str, bytes, type(None), list, tuple, set, frozenset, dict})
CHECK = "__evr1_checks__"
BUILTIN_SLOTS = (type(int.__bool__), type(str.join))  # methods written in C


def plain(value: object) -> object:
    """`value` itself when it is plain builtin data all the way down; else AssertionError."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind not in PLAIN:
            raise AssertionError(f"a test compared a {kind.__name__}, not plain builtin data")
        if kind in (list, tuple, set, frozenset, dict) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item.items() if kind is dict else item)
    return value


def truth(value: object) -> object:
    """`plain(value)`, or a value whose truth is builtin (a `re.Match`); else AssertionError."""
    kind = type(value)
    if kind in PLAIN:
        return plain(value)
    for name in ("__bool__", "__len__"):
        if type(getattr(kind, name, None)) not in (*BUILTIN_SLOTS, type(None)):
            raise AssertionError(f"a test asserted a {kind.__name__} whose truth is not builtin")
    return value


class _Guard(ast.NodeTransformer):
    """Routes compared and asserted values through `plain`/`truth` (held in the test namespace)."""

    def _wrap(self, node: ast.expr, name: str = "plain") -> ast.expr:
        check = ast.Subscript(ast.Name(CHECK, ast.Load()), ast.Constant(name), ast.Load())
        return ast.Call(check, [node], [])

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if any(not isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            node.left, node.comparators = self._wrap(node.left), [self._wrap(c) for c in node.comparators]
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            node.operand = self._wrap(node.operand, "truth")
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        node.values = [self._wrap(v, "truth") for v in node.values]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        node.test = self._wrap(node.test, "truth")
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.generic_visit(node)
        node.test = self._wrap(node.test, "truth")
        return node


def guarded(test: str) -> object:
    """The test compiled with its comparisons and asserts checked."""
    tree = ast.fix_missing_locations(_Guard().visit(ast.parse(test, "<test>", "exec")))
    return compile(tree, "<test>", "exec")


def _run_asserts(code: str, tests: list) -> int:
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(code, "<solution>", "exec"), namespace)
    except BaseException:
        return 0
    passed = 0
    for test in tests:
        try:
            compiled = guarded(test)
            namespace[CHECK] = {"plain": plain, "truth": truth}  # restored: the solution may have bound the name
            exec(compiled, namespace)
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
