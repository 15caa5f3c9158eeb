"""Holding a training run at a known step, or a cache build at a known entry, so a test interrupts or kills it
there instead of racing it.

`HOLD_SAMPLER` is experiment-file code registering the sampler `test/held_uniform`: the uniform
sampler, drawing the same records, except that the first draw made once `{checkpoint}` exists (the
start of the step after that checkpoint) creates `{held}` and then waits forever. A resumed run finds
`{held}` and never waits. `HOLD_DRAW` holds the same way at the process's `{draw}`-th draw, but only until
`{release}` exists: the test signals the held run, then lets it go on. `HOLD_BUILD` is experiment-file code for `evr1 cache build FILE`: the build
process stores its first `{entries}` entries, then creates `{held}` and waits forever before the next
one (its workers keep running). `wait_until_held` waits for that file while the process runs.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

HOLD_SAMPLER = '''
import time as _time
from pathlib import Path as _Path

from evr1.data.samplers import UniformSampler
from evr1.registry import SAMPLERS


@SAMPLERS.register("test/held_uniform")
class HeldUniform(UniformSampler):
    """The uniform sampler, held (forever) at the first draw after {checkpoint!r} is saved."""

    def sample(self, n):
        if _Path({checkpoint!r}).exists() and not _Path({held!r}).exists():
            _Path({held!r}).touch()
            while True:
                _time.sleep(1)
        return super().sample(n)
'''

HOLD_DRAW = '''
import time as _time
from pathlib import Path as _Path

from evr1.data.samplers import UniformSampler
from evr1.registry import SAMPLERS


@SAMPLERS.register("test/held_uniform")
class HeldUniform(UniformSampler):
    """The uniform sampler, held at this process's draw number {draw} until {release!r} exists."""

    draws = 0

    def sample(self, n):
        HeldUniform.draws += 1
        if HeldUniform.draws == {draw} and not _Path({held!r}).exists():
            _Path({held!r}).touch()
            while not _Path({release!r}).exists():
                _time.sleep(0.1)
        return super().sample(n)
'''

BASED_ON = '''
from evr1.experiment_files import load_config


def experiment():
    cfg, _ = load_config({base!r})
    cfg.data.sampler = "test/held_uniform"
    return cfg
'''


HOLD_BUILD = '''
import time as _time
from pathlib import Path as _Path

import fiddle as _fdl

from evr1.data.cache import TensorCache as _TensorCache
from evr1.experiment import Experiment

_put, _stored = _TensorCache.put, []


def _held_put(self, key, value):
    """`TensorCache.put`, held (forever) before the entry after the first {entries}."""
    if len(_stored) == {entries}:
        _Path({held!r}).touch()
        while True:
            _time.sleep(1)
    _put(self, key, value)
    _stored.append(key)


_TensorCache.put = _held_put


def experiment():
    return _fdl.Config(Experiment)
'''


def held_build(file: Path, cache: Path, entries: int) -> Path:
    """Write `file`: an experiment of default settings whose `evr1 cache build` into `cache` is held after storing
    `entries` entries (`HOLD_BUILD`; wait for it with `wait_until_held(proc, cache)`)."""
    file.write_text(HOLD_BUILD.format(entries=entries, held=str(held_marker(cache))))
    return file


def hold_code(run_dir: Path, after_step: int) -> str:
    """`HOLD_SAMPLER` for a run in `run_dir`, held at the start of step `after_step + 1`."""
    checkpoint = run_dir / "checkpoints" / f"step_{after_step:06d}" / "trainer.json"
    return HOLD_SAMPLER.format(checkpoint=str(checkpoint), held=str(held_marker(run_dir)))


def held_at_draw(file: Path, base: str, run_dir: Path, draw: int) -> Path:
    """Write `file`: the experiment `base` held at its `draw`-th draw of records until `release_marker(run_dir)`
    exists (`HOLD_DRAW`)."""
    code = HOLD_DRAW.format(draw=draw, held=str(held_marker(run_dir)), release=str(release_marker(run_dir)))
    file.write_text(code + BASED_ON.format(base=base))
    return file


def release_marker(run_dir: Path) -> Path:
    """The file that lets a run held by `held_at_draw` go on."""
    return run_dir.parent / f"{run_dir.name}.release"


def held_marker(run_dir: Path) -> Path:
    """The file a held run (or build) in `run_dir` creates: beside it, never mistaken for its output."""
    return run_dir.parent / f"{run_dir.name}.held"


def held_experiment(file: Path, base: str, run_dir: Path, after_step: int) -> Path:
    """Write `file`: the experiment `base` (a name `load_config` finds), held as `hold_code` says."""
    file.write_text(hold_code(run_dir, after_step) + BASED_ON.format(base=base))
    return file


def wait_until_held(proc: subprocess.Popen, run_dir: Path, timeout_s: float = 900, log: Path | None = None) -> None:
    """Return once the run of `proc` in `run_dir` is held; fail if it ends or `timeout_s` passes first (showing
    the end of `log`, the run's stderr, when given)."""
    deadline = time.monotonic() + timeout_s
    while not held_marker(run_dir).exists():
        assert proc.poll() is None, "the run ended before it was held:\n" + (log.read_text()[-3000:] if log else "")
        assert time.monotonic() < deadline, f"the run was not held within {timeout_s:g} s"
        time.sleep(0.1)
