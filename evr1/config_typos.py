"""A misspelt field in an experiment file, said in one line.

Fiddle refuses a field a spec does not have where the experiment's code writes it: `cfg.trainer.val_evry = 10`
raises an `AttributeError` from `fdl.Config.__setattr__`, `fdl.Config(TrainerSpec, step=10)` a `TypeError` from
its constructor, each with Fiddle's own frames on top. `misspelt_field` turns such an error into a `ConfigError`
naming the file, the line and its code, the spec and the field, with a did-you-mean and the spec's fields (as an
unknown `--set` path is reported); any other error is not one of these (None).
"""

from __future__ import annotations

import difflib
import inspect
import linecache
from pathlib import Path
from types import FrameType, TracebackType

import fiddle

from evr1.errors import ConfigError

_FIDDLE = Path(fiddle.__file__).resolve().parent


def _in_fiddle(frame: FrameType) -> bool:
    return Path(frame.f_code.co_filename).resolve().is_relative_to(_FIDDLE)


def _frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    found = []
    while tb is not None:
        found.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return found


def _unknown_names(fiddle_frames: list[FrameType]) -> tuple[object, list[str]] | None:
    """The configured class or function and the names it was given but has no parameter for, read from the Fiddle
    frame that refused them: `validate_param_name(name, fn_or_cls)` (an attribute set) or `signature_binding(fn_or_cls,
    *args, **kwargs)` (keywords given to `fdl.Config`)."""
    for frame in reversed(fiddle_frames):
        local = frame.f_locals
        target = local.get("fn_or_cls")
        if target is None:
            continue
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            return None
        if frame.f_code.co_name == "validate_param_name" and isinstance(local.get("name"), str):
            return target, [local["name"]] if local["name"] not in params else []
        if frame.f_code.co_name == "signature_binding" and isinstance(local.get("kwargs"), dict):
            return target, [k for k in local["kwargs"] if k not in params]
    return None


def misspelt_field(exc: BaseException) -> ConfigError | None:
    """A one-line `ConfigError` for a field name Fiddle refused (see the module docstring), else None."""
    if not isinstance(exc, (AttributeError, TypeError)):
        return None
    frames = _frames(exc.__traceback__)
    inside = [i for i, (frame, _) in enumerate(frames) if _in_fiddle(frame)]
    if not inside or inside[0] == 0:
        return None
    found = _unknown_names([frame for frame, _ in frames[inside[0]:]])
    if found is None or not found[1]:
        return None
    target, names = found
    caller, line = frames[inside[0] - 1]
    file = caller.f_code.co_filename
    code = linecache.getline(file, line).strip()
    fields = list(inspect.signature(target).parameters)  # type: ignore[arg-type]  # a class or function Fiddle configures
    owner = getattr(target, "__name__", repr(target))
    which = ", ".join(repr(n) for n in names)
    close = [m for n in names for m in difflib.get_close_matches(n, fields, n=1, cutoff=0.6)]
    hints = f" Did you mean {', '.join(repr(m) for m in close)}?" if close else ""
    where = f"{file}, line {line}" + (f" ({code})" if code else "")
    return ConfigError(f"{where}: {owner} has no field{'s' if len(names) > 1 else ''} {which}.{hints}"
                       f" Fields: {', '.join(fields)}")
