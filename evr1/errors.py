"""User-facing errors: the CLI prints these as one short message, never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class CrossesProcesses:
    """Mixin for exceptions that cross a process boundary (Ray workers, process pools).

    Python unpickles an exception as `cls(*exc.args)`, which breaks any subclass whose `__init__` takes
    other arguments than its message (Ray then hands the driver an `UnserializableException`). This one
    is rebuilt without calling `__init__`: same class, same `args`, same attributes.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        assert isinstance(self, BaseException)
        return _rebuilt, (type(self), self.args, dict(self.__dict__))


class Evr1Error(CrossesProcesses, Exception):
    """An error caused by user input (config, data, names); shown without a traceback."""


class ConfigError(Evr1Error):
    """An experiment or override that cannot be resolved or validated."""


def suggest(name: str, known: Iterable[str]) -> str:
    """' Did you mean 'x'?' for the closest known name, or '' when nothing is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def known_list(known: Iterable[str], limit: int = 30) -> str:
    """A short comma-separated list of names for error messages."""
    names = sorted(known)
    shown = ", ".join(names[:limit])
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return (shown + more) if names else "(none)"
