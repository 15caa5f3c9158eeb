"""Running rewards in worker processes (`RewardSpec.isolation = "processes"`), each call under a hard time limit.

Threads cannot stop a reward that holds the GIL (a catastrophic regular expression, a C extension in a
loop) nor survive one that crashes its process. Here every sample of a `@per_sample` reward (every batch
of another reward, under `timeout_s × batch size`) is one call to a pool of `RewardSpec.process_workers`
processes (`evr1.rewards.process_pool`):
- a call past its limit has its process killed; its samples score 0, timed out, and say so;
- a process that dies during a call (a crash, kill -9, the OOM killer) is replaced and the call is made
  again on the new process; dying a second time fails that call's samples with the reason.
Inside a worker an exception is that sample's failure, as in the threads mode. A worker imports the modules that define the rewards it runs (a plugin, an
experiment file), so the rewards must be registered at import time of a module, not inside a function.
Inputs and values cross as JSON.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.rewards.contract import RewardFn, RewardInput, RewardOutput, checked_batch, sample_function, warm_up_of
from evr1.rewards.execution import Failure, failure_of, run_all
from evr1.rewards.process_pool import WorkerCrashed, WorkerPool, shared_pool

if TYPE_CHECKING:
    from evr1.specs import RewardSpec

logger = logging.getLogger("evr1.rewards")

_MAIN = "__evr1_main__"  # the name a worker gives a reward module that was its parent's `__main__` (a script)


def run_in_processes(jobs: Sequence[tuple[str, RewardFn, Sequence[RewardInput]]], spec: RewardSpec) -> list[list[Any]]:
    """As `run_all` for (reward name, function, inputs) jobs: per input a scorer value or a `Failure`."""
    names = sorted({name for name, _, _ in jobs})
    pool = shared_pool(f"{__name__}:score", spec.process_workers, warm_up=f"{__name__}:prepare",
                       warm_up_args=(reward_modules(names), spec.model_dump_json(), names))
    calls = []  # (job, indices of its inputs, time limit)
    for j, (_, fn, inputs) in enumerate(jobs):
        if sample_function(fn) is not None:
            calls += [(j, [i], spec.timeout_s) for i in range(len(inputs))]
        elif inputs:
            calls.append((j, list(range(len(inputs))), spec.timeout_s * len(inputs)))

    def call(job: int, indices: list[int], limit: float) -> list[Any]:
        name, _, inputs = jobs[job]
        return _call(pool, name, [inputs[i] for i in indices], limit)

    results: list[list[Any]] = [[None] * len(inputs) for _, _, inputs in jobs]
    with ThreadPoolExecutor(spec.process_workers, thread_name_prefix="evr1-reward-call") as threads:
        for (job, indices, _), values in zip(calls, threads.map(lambda c: call(*c), calls)):
            for i, value in zip(indices, values):
                results[job][i] = value
    return results


def _call(pool: WorkerPool, name: str, inputs: list[RewardInput], limit: float) -> list[Any]:
    """The values of `name` on `inputs` from one worker call: made again once on a new worker when its worker dies."""
    encoded = [encode_input(i) for i in inputs]
    for attempt in (1, 2):
        try:
            return [decode_value(v) for v in pool.call(name, encoded, timeout=limit)]
        except TimeoutError:
            return [Failure(f"timed out after {limit:g} s (its worker process was stopped)", True)] * len(inputs)
        except WorkerCrashed as exc:
            if attempt == 2:
                return [Failure(f"its worker process died twice ({exc})")] * len(inputs)
            shown = ", ".join(str(i.sample_id) for i in inputs)
            logger.warning("reward %r: worker process died (%s) on sample(s) %s; scoring them again on a new one",
                           name, exc, shown)
        except RuntimeError as exc:  # the worker answered with an error: the reward could not be found or set up
            return [Failure(str(exc))] * len(inputs)
    raise AssertionError("unreachable")


def reward_modules(names: Sequence[str]) -> list[tuple[str, str | None]]:
    """(module, file) of each module outside evr1 that defines one of the rewards `names` (a worker imports them)."""
    from evr1.registry import REWARDS

    found: dict[str, str | None] = {}
    for name in names:
        module = getattr(REWARDS.get(name), "__module__", None) or ""
        if module and module != "evr1" and not module.startswith("evr1."):
            found[module] = getattr(sys.modules.get(module), "__file__", None)
    return sorted(found.items())


# -- in the worker process ----------------------------------------------------------------------
_SPEC: list[RewardSpec] = []


def prepare(modules: list[list[Any]], spec_json: str, names: list[str]) -> None:
    """A worker's start: import the reward `modules` ([module, file]), read the spec, warm the rewards `names` up."""
    from evr1.registry import REWARDS
    from evr1.specs import RewardSpec

    for module, file in modules:
        _import(module, file)
    _SPEC.append(RewardSpec.model_validate_json(spec_json))
    for name in names:
        warm = warm_up_of(REWARDS.get(name))
        if warm is not None:
            warm()


def score(name: str, inputs: list[dict[str, Any]]) -> list[Any]:
    """The reward `name`'s values on `inputs` (encoded), encoded. A `@per_sample` function runs in this thread:
    the parent's time limit kills this process, and no thread is left running behind a sample that overran."""
    from evr1.registry import REWARDS

    fn, batch = checked_batch(name, REWARDS.get(name)), [RewardInput(**i) for i in inputs]
    if sample_function(fn) is not None:
        values = [failure_of(v) if isinstance(v, BaseException) else v for v in fn(batch, _SPEC[-1])]
    else:
        values = run_all([(fn, batch)], _SPEC[-1])[0]
    return [encode_value(v) for v in values]


def _import(module: str, file: str | None) -> None:
    """Import `module` by name, else (an experiment file, a script) from `file`, with its folder on `sys.path`."""
    if module != "__main__":
        try:
            importlib.import_module(module)
            return
        except ModuleNotFoundError:
            if file is None:
                raise
    if file is None:
        raise ModuleNotFoundError(f"the rewards' module {module!r} has no file a worker process could import")
    sys.path.insert(0, str(Path(file).parent))
    name = _MAIN if module == "__main__" else module
    found = importlib.util.spec_from_file_location(name, file)
    loaded = importlib.util.module_from_spec(found)  # type: ignore[arg-type]
    sys.modules[name] = loaded
    found.loader.exec_module(loaded)  # type: ignore[union-attr]


# -- crossing as JSON ---------------------------------------------------------------------------
def encode_input(inp: RewardInput) -> dict[str, Any]:
    fields = {f.name: getattr(inp, f.name) for f in dataclasses.fields(inp)}
    return fields | {"problem_type": inp.problem_type.value, "meta": dict(inp.meta)}


def encode_value(value: Any) -> dict[str, Any]:
    if isinstance(value, Failure):
        return {"failure": value.message, "timed_out": value.timed_out}
    if isinstance(value, RewardOutput):
        return {"output": dataclasses.asdict(value)}
    if value is None or isinstance(value, (bool, int, float)):
        return {"value": value}
    return {"value": repr(value)}  # not a reward value: the router says what it returned


def decode_value(encoded: dict[str, Any]) -> Any:
    if "failure" in encoded:
        return Failure(encoded["failure"], encoded["timed_out"])
    if "output" in encoded:
        return RewardOutput(**encoded["output"])
    return encoded["value"]
