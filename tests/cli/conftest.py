"""In-process `evr1` commands (`cli_inproc`) that import a test's experiment files leave no trace in later tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import evr1.experiment_files as ef
from evr1 import registry

REGISTRIES = [r for r in vars(registry).values() if isinstance(r, registry.Registry)]


@pytest.fixture
def experiment_imports_restored(tmp_path: Path) -> Iterator[None]:
    """What importing experiment files in this process leaves (a resume imports the run's copy; a test project's
    file registers a reward) is undone after the test: `evr1.experiment_files`' caches are put back, the modules
    imported from files they did not hold or from under `tmp_path` are dropped, and names registered meanwhile are
    unregistered."""
    caches = [ef._LOADED, ef._DEPS, ef._FAILED, ef._SIBLINGS, ef._IMPORTED]
    saved, modules = [dict(c) for c in caches], set(sys.modules)
    registered = {reg: set(reg.names()) for reg in REGISTRIES}
    yield
    files = {str(f) for f in set(ef._LOADED) - set(saved[0])}
    for name in set(sys.modules) - modules:
        file = getattr(sys.modules[name], "__file__", None) or ""
        if file in files or Path(file).is_relative_to(tmp_path):
            del sys.modules[name]
    for cache, before in zip(caches, saved, strict=True):
        cache.clear()
        cache.update(before)
    for reg, names in registered.items():
        for name in set(reg.names()) - names:
            reg.unregister(name)
