"""`evr1 ARGS` run inside the test process: the CLI's own `main()`, its output captured, its exit status returned.

A subprocess pays a fresh import of torch and transformers (seconds under load) for every command. Tests that
check what a command prints and the status it returns, not how it behaves as a process (signals, a kill,
worker processes outliving it, a crash such as SIGBUS), call it here. Output is what a user sees when stdout and
stderr are pipes: log records reach stderr as Python's last-resort handler prints them (the test runner's own
log handlers are set aside meanwhile), and warnings are shown under Python's default filters. An exception the
CLI lets through (a bug: the process would print a traceback) propagates to the test.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

from evr1.cli import main

# Python's default warning filters, outermost last (`python -W` none, not a development build).
_DEFAULT_FILTERS = [("ignore", ResourceWarning), ("ignore", ImportWarning), ("ignore", PendingDeprecationWarning),
                    ("ignore", DeprecationWarning)]


@contextlib.contextmanager
def _as_a_process(err: io.StringIO) -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    last_resort = logging.lastResort
    logging.lastResort = logging.StreamHandler(err)
    logging.lastResort.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category in _DEFAULT_FILTERS:
                warnings.simplefilter(action, category)
            warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]  # to sys.stderr
            yield
    finally:
        logging.lastResort = last_resort
        root.handlers[:] = handlers
        root.setLevel(level)


def evr1(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `evr1 *args` (in `cwd` when given) here; its exit status, stdout and stderr."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or os.getcwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _as_a_process(err):
        status = main(argv)
    return subprocess.CompletedProcess(["evr1", *argv], status, out.getvalue(), err.getvalue())
