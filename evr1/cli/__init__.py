"""The `evr1` command line: `run | show | list | cache | data | eval`.

User errors (`Evr1Error`) print one short message and exit with status 2, never a traceback.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys

import typer

from evr1.errors import Evr1Error

app = typer.Typer(
    name="evr1",
    help="RL from verifiable rewards for video-language models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Sub-command groups live in their own modules (each exposes `app`); built ones are added here.
_GROUPS = {"cache": "evr1.cli.cache", "data": "evr1.cli.data", "eval": "evr1.cli.eval", "rewards": "evr1.cli.rewards"}


def _assemble() -> None:
    from evr1.cli import experiments

    experiments.register(app)
    for name, module in _GROUPS.items():
        if importlib.util.find_spec(module) is not None:
            app.add_typer(importlib.import_module(module).app, name=name)


_assemble()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `evr1` script; returns the exit status."""
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="evr1", standalone_mode=True)  # usage errors: exit 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Evr1Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def entry() -> None:
    status = main()
    gc.freeze()  # no last collection of the whole heap (torch, transformers) on the way out: seconds per command
    sys.exit(status)
