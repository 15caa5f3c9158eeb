"""User-facing errors: the CLI prints these as one short message, never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class Evr1Error(Exception):
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
