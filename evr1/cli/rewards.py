"""`evr1 rewards score FILE` and `evr1 rewards describe NAME`."""

from __future__ import annotations

import ast
import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from evr1.errors import ConfigError

app = typer.Typer(help="Score responses and inspect reward functions.", no_args_is_help=True)
console = Console(highlight=False, width=max(120, shutil.get_terminal_size().columns))
err_console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
MAX_ERRORS_SHOWN = 10


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def build_spec(settings: list[str], routes: list[str]):
    """A RewardSpec from `path=value` settings (dotted for sub-specs) and `type=reward` routes."""
    from pydantic import ValidationError

    from evr1.experiment import format_validation_error
    from evr1.specs import RewardSpec

    data: dict[str, Any] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects PATH=VALUE, got {item!r}")
        *parents, leaf = key.strip().split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _literal(value)
    for item in routes:
        problem_type, sep, name = item.partition("=")
        if not sep:
            raise ConfigError(f"--route expects TYPE=REWARD, got {item!r}")
        data.setdefault("routes", {})[problem_type.strip()] = name.strip()
    try:
        return RewardSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, "reward")) from None


@app.command()
def score(
    file: Annotated[Path, typer.Argument(help="JSONL/JSON of {response, record} pairs (or records with a 'response').")],
    settings: Annotated[Optional[list[str]], typer.Option("--set", "-s", help="RewardSpec field: PATH=VALUE, e.g. format=partial, judge.base_url=...")] = None,
    routes: Annotated[Optional[list[str]], typer.Option("--route", help="TYPE=REWARD, e.g. open_ended=open_ended_judge.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write one JSON line per sample (score, components, error).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON instead of a table.")] = False,
) -> None:
    """Score a file of (response, record) pairs and print a per-type summary."""
    from evr1.rewards.jsonl import score_file
    from evr1.rewards.router import RewardScoringError

    spec = build_spec(settings or [], routes or [])
    try:
        with _router_log_silenced(), _cli_setting_names():
            scored = score_file(file, spec)
    except RewardScoringError as exc:
        err_console.print(str(exc))
        raise typer.Exit(1) from None
    if out is not None:
        with out.open("w", encoding="utf-8") as f:
            for inp, o in zip(scored.inputs, scored.outputs):
                row = {"sample_id": inp.sample_id, "problem_type": inp.problem_type.value, "score": o.score,
                       "components": o.components, "error": o.error, "applicable": o.applicable}  # fmt: skip
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if as_json:
        print(json.dumps(scored.metrics, indent=2, sort_keys=True))
    else:
        console.print(summary_table(scored.metrics, scored.routes))
    failed = [o.error for o in scored.outputs if o.error]
    for error in failed[:MAX_ERRORS_SHOWN]:
        err_console.print(error)
    if len(failed) > MAX_ERRORS_SHOWN:
        err_console.print(f"... and {len(failed) - MAX_ERRORS_SHOWN} more errors" + (f" (all in {out})" if out else " (--out writes all)"))


@contextmanager
def _router_log_silenced() -> Iterator[None]:
    """Hold back the router's per-error log lines: this command prints each error once itself."""
    log = logging.getLogger("evr1.rewards")
    quiet = logging.NullHandler()
    log.addHandler(quiet)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(quiet)
        log.propagate = True


@contextmanager
def _cli_setting_names() -> Iterator[None]:
    """Name RewardSpec settings as this command takes them (`--set judge.model=...`), not as an
    experiment does (`reward.judge.model`)."""
    try:
        yield
    except ConfigError as exc:
        message = str(exc).replace("set reward.judge.", "pass --set judge.").replace("reward.judge.", "judge.")
        raise ConfigError(message) from None


def summary_table(metrics: dict[str, float], routes: dict[str, str]) -> Table:
    table = Table(title="rewards", title_justify="left")
    for column in ("type", "reward", "n", "score", "accuracy", "format", "errors", "timeouts", "n/a"):
        table.add_column(column, justify="left" if column in ("type", "reward") else "right")
    for type_name in sorted(routes):
        p = f"reward/{type_name}"

        def cell(key: str, digits: int = 3) -> str:
            value = metrics.get(f"{p}/{key}")
            return "-" if value is None else (f"{value:.{digits}f}" if digits else str(int(value)))

        table.add_row(type_name, routes[type_name], cell("count", 0), cell("score"), cell("accuracy"), cell("format"),
                      cell("errors", 0), cell("timeouts", 0), cell("not_applicable", 0))  # fmt: skip
    total = sum(metrics.get(f"reward/{t}/count", 0) for t in routes)
    table.add_row("all", "", str(int(total)), f"{metrics.get('reward/score', 0.0):.3f}", "", "",
                  str(int(metrics.get("reward/errors", 0))), str(int(metrics.get("reward/timeouts", 0))), "")  # fmt: skip
    return table


@app.command()
def describe(name: Annotated[str, typer.Argument(help="A registered reward, e.g. multiple_choice or acme/st_iou.")]) -> None:
    """Where a reward lives, what it does, and its scoring policy."""
    import inspect

    from evr1.registry import REWARDS

    description = REWARDS.describe(name)
    target = inspect.unwrap(REWARDS.get(name))
    module = inspect.getmodule(target)
    try:
        file = inspect.getsourcefile(target)
    except TypeError:
        file = None
    lines = [f"rewards:{description.name}", f"  {description.module}" + (f" [{file}]" if file else ""),
             f"  origin: {description.origin}", f"  {description.summary}"]  # fmt: skip
    policy = inspect.getdoc(module) if module is not None else None
    if policy:
        lines += ["", f"policy ({module.__name__}):", policy]  # type: ignore[union-attr]
    console.print("\n".join(lines), markup=False)


@app.command("routes")
def show_routes(
    routes: Annotated[Optional[list[str]], typer.Option("--route", help="TYPE=REWARD overrides.")] = None,
) -> None:
    """The reward each problem type is routed to."""
    from evr1.rewards.router import RewardRouter

    router = RewardRouter(build_spec([], routes or []))
    table = Table(show_header=True, box=None)
    table.add_column("problem type")
    table.add_column("reward")
    for problem_type, name in router.routes.items():
        table.add_row(problem_type.value, name)
    console.print(table)
