"""Every evr1 exception survives the pickle round trip that carries it out of a Ray worker or a pool."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import sys

import pytest

import evr1
from evr1.data.prompting import MediaFailure, MediaLoadError
from evr1.errors import CrossesProcesses

# vLLM cannot be installed here (the module defines no exception); the two sandbox scripts run as their own
# processes (`python -c SOURCE`, never imported): their exceptions never leave them.
_NOT_IMPORTABLE = {"evr1.engines.vllm", "evr1.rewards.code_harness", "evr1.rewards.sandbox_runner"}


def _evr1_exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(evr1.__path__, "evr1."):
        if info.name in _NOT_IMPORTABLE or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            # A private class (`_NotRead`) is control flow caught inside its own module: it never leaves it.
            public = not value.__name__.startswith("_")
            if public and issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


EXCEPTIONS = _evr1_exception_classes()


def test_the_walk_finds_the_exceptions_known_to_cross_workers() -> None:
    names = {cls.__name__ for cls in EXCEPTIONS}
    assert {"MediaLoadError", "MediaError", "CacheError", "RecordError", "TrainingError", "FieldError"} <= names


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_an_exception_with_its_own_init_is_rebuilt_without_calling_it(cls: type[BaseException]) -> None:
    """A class whose __init__ differs from BaseException's is unpicklable unless it crosses processes."""
    own_init = any("__init__" in vars(base) for base in cls.__mro__ if base.__module__.startswith("evr1"))
    if own_init:
        assert issubclass(cls, CrossesProcesses), f"{cls.__qualname__} has its own __init__: use CrossesProcesses"
    exc = cls.__new__(cls, "message")
    exc.args = ("message",)
    exc.evr1_step = 7
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls
    assert back.args == ("message",)
    assert back.evr1_step == 7


def _media_load_error() -> MediaLoadError:
    return MediaLoadError(MediaFailure("r1", "clips/a.mp4", "video", "missing", "no such file"))


def test_media_load_error_keeps_its_failure_and_message() -> None:
    exc = _media_load_error()
    back = pickle.loads(pickle.dumps(exc))
    assert back.failure == exc.failure
    assert str(back) == "record 'r1': video 'clips/a.mp4' cannot be loaded: no such file"


def test_a_media_failure_raised_in_a_ray_worker_reaches_the_driver_as_itself() -> None:
    import ray  # a dependency of evr1: never skipped for want of it
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the worker cannot import a test module
    ray.init(address="local", num_cpus=1, include_dashboard=False, object_store_memory=80 * 1024**2, log_to_driver=False)
    try:
        with pytest.raises(MediaLoadError) as caught:
            ray.get(ray.remote(lambda: _raise(_media_load_error())).remote())
    finally:
        ray.shutdown()
    assert caught.value.failure == _media_load_error().failure


def _raise(exc: BaseException) -> None:
    raise exc
