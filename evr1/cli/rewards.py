"""`evr1 rewards score FILE`, `evr1 rewards describe NAME` and `evr1 rewards routes`."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from evr1.errors import ConfigError

app = typer.Typer(help="Score responses and inspect reward functions.", no_args_is_help=True)
console = Console(highlight=False, width=max(120, shutil.get_terminal_size().columns))
err_console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
MAX_ERRORS_SHOWN = 10


ExperimentOption = Annotated[
    str | None,
    typer.Option(
        "--experiment", "-e",
        help="NAME[:VARIANT] or a .py file, found as `evr1 run` finds it: imported first (so the rewards it registers"
        " exist) and its reward settings are the defaults.",
    ),
]  # fmt: skip


def _root(reward: Any) -> Any:
    """The root `--set reward.PATH=VALUE` paths start from (only ever a Fiddle config, never called)."""
    return reward


def build_spec(settings: list[str], routes: list[str], experiment: str | None = None):
    """A RewardSpec from `[reward.]path=value` settings (dotted for sub-specs) and `type=reward` routes,
    on top of experiment `experiment`'s reward settings when one is named (defaults otherwise).

    Settings are applied as `evr1 run --set` applies them: unknown fields get a "Did you mean"."""
    import fiddle as fdl

    from evr1.experiment import apply_overrides, build, share_instances
    from evr1.specs import RewardSpec

    reward: Any = fdl.Config(RewardSpec)
    if experiment is not None:
        from evr1.experiment_files import load_config

        cfg, _ = load_config(experiment)  # imports the experiment file: its plugins register
        reward = cfg.__arguments__.get("reward", reward)
    root = fdl.Config(_root, reward=reward)
    share_instances(root)  # a RewardSpec instance in the experiment becomes an editable Config
    for item in settings:
        given = item.strip()
        path = given if given.startswith("reward.") else f"reward.{given}"
        try:
            apply_overrides(root, [path])
        except ConfigError as exc:  # echo the setting as typed, not with the prefix added here
            user_path = given.partition("=")[0].strip()
            raise ConfigError(str(exc).replace(f"reward.{user_path}", user_path) if path != given else str(exc)) from None
    if routes:
        table = dict(root.reward.__arguments__.get("routes", {}))
        for item in routes:
            problem_type, sep, name = item.partition("=")
            if not sep or not problem_type.strip() or not name.strip():
                raise ConfigError(f"--route expects TYPE=REWARD, got {item!r}")
            table[problem_type.strip()] = name.strip()
        root.reward.routes = table
    try:
        return build(root)
    except ConfigError as exc:
        raise ConfigError(f"{exc}{_experiment_hint(str(exc), experiment)}") from None


def _experiment_hint(message: str, experiment: str | None) -> str:
    """A pointer to `--experiment` for an unknown reward name, when no experiment was imported."""
    if experiment is None and "unknown rewards name" in message:
        return "\n(a reward registered in an experiment file exists only once that file is imported: pass --experiment NAME)"
    return ""


def import_experiment(name: str) -> None:
    """Import experiment NAME[:VARIANT] (a file, a registered experiment, a module) as `evr1 run` finds it,
    so that the components it registers exist in this process."""
    from evr1.experiment_files import resolve

    resolve(name)


@app.command()
def score(
    file: Annotated[Path, typer.Argument(help="JSONL/JSON of {response, record} pairs (or records with a 'response').")],
    settings: Annotated[list[str] | None, typer.Option("--set", "-s", help="RewardSpec field: [reward.]PATH=VALUE, e.g. format=partial, judge.base_url=...")] = None,
    routes: Annotated[list[str] | None, typer.Option("--route", help="TYPE=REWARD, e.g. open_ended=open_ended_judge.")] = None,
    experiment: ExperimentOption = None,
    out: Annotated[Path | None, typer.Option(help="Write one JSON line per sample (score, components, error, note).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON instead of a table.")] = False,
) -> None:
    """Score a file of (response, record) pairs and print a per-type summary.

    Every readable line is scored; every unreadable one is reported (file:line, field, record) and
    makes the exit status 2. When every sample failed to score (a broken reward), the status is 1."""
    from evr1.rewards.router import RewardRouter, RewardScoringError

    spec = build_spec(settings or [], routes or [], experiment)
    from evr1.rewards.jsonl import read_pairs

    inputs, problems = read_pairs(file)
    if not inputs and not problems:
        raise ConfigError(f"{file}: holds no (response, record) pairs (the file is empty)")
    try:
        with _router_log_silenced(), _cli_setting_names():
            router = RewardRouter(spec)
            outputs = router.score(inputs) if inputs else []
    except RewardScoringError as exc:
        err_console.print(str(exc))
        raise typer.Exit(1) from None
    if inputs:
        _report(router, inputs, outputs, out, as_json)
    for problem in problems:
        err_console.print(str(problem))
    if problems:
        lines = len({(p.file, p.line) for p in problems})
        err_console.print(f"{lines} line(s) of {file} could not be read" + (" and were not scored" if inputs else "; nothing was scored"))
        raise typer.Exit(2)
    if inputs and all(o.error for o in outputs):
        err_console.print(f"all {len(outputs)} sample(s) failed to score")
        raise typer.Exit(1)


def _report(router: Any, inputs: list[Any], outputs: list[Any], out: Path | None, as_json: bool) -> None:
    """The metrics (table or JSON), the per-sample rows (`out`), and the scorers' errors."""
    if out is not None:
        with out.open("w", encoding="utf-8") as f:
            for inp, o in zip(inputs, outputs):
                row = {"sample_id": inp.sample_id, "problem_type": inp.problem_type.value, "score": o.score,
                       "components": o.components, "error": o.error, "applicable": o.applicable, "note": o.note}  # fmt: skip
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    metrics = router.metrics(inputs, outputs)
    if as_json:
        print(json.dumps(metrics, indent=2, sort_keys=True))
    else:
        routes = {t.value: router.route(t) for t in {inp.problem_type for inp in inputs}}
        console.print(summary_table(metrics, routes, router.extra))
    for what, said in (("errors", [o.error for o in outputs if o.error]),
                       ("notes", [f"sample {i.sample_id}: {o.note}" for i, o in zip(inputs, outputs) if o.note])):  # fmt: skip
        for line in said[:MAX_ERRORS_SHOWN]:
            err_console.print(line)
        if len(said) > MAX_ERRORS_SHOWN:
            err_console.print(f"... and {len(said) - MAX_ERRORS_SHOWN} more {what}" + (f" (all in {out})" if out else " (--out writes all)"))


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


def summary_table(metrics: dict[str, float], routes: dict[str, str], extra: dict[str, float] | None = None) -> Table:
    """Per problem type: its reward, the samples, their mean score, accuracy, format and extra rewards (a column
    each, `-` where it applied to no sample), and the errors, timeouts and samples it did not apply to."""
    extra = extra or {}
    table = Table(title="rewards", title_justify="left",
                  caption=f"extra rewards: the mean where one applied (weights {_weights(extra)}); -: none applied"
                  if extra else None, caption_justify="left")
    for column in ("type", "reward", "n", "score", "accuracy", "format", *extra, "errors", "timeouts", "n/a"):
        table.add_column(column, justify="left" if column in ("type", "reward") else "right")

    def cell(key: str, digits: int = 3) -> str:
        value = metrics.get(key)
        return "-" if value is None else (f"{value:.{digits}f}" if digits else str(int(value)))

    for type_name in sorted(routes):
        p = f"reward/{type_name}"
        table.add_row(type_name, routes[type_name], cell(f"{p}/count", 0), cell(f"{p}/score"), cell(f"{p}/accuracy"),
                      cell(f"{p}/format"), *(cell(f"{p}/{name}") for name in extra), cell(f"{p}/errors", 0),
                      cell(f"{p}/timeouts", 0), cell(f"{p}/not_applicable", 0))  # fmt: skip
    total = sum(metrics.get(f"reward/{t}/count", 0) for t in routes)
    table.add_row("all", "", str(int(total)), f"{metrics.get('reward/score', 0.0):.3f}", "", "",
                  *(cell(f"reward/extra/{name}/mean") for name in extra),
                  str(int(metrics.get("reward/errors", 0))), str(int(metrics.get("reward/timeouts", 0))), "")  # fmt: skip
    return table


def _weights(extra: dict[str, float]) -> str:
    return ", ".join(f"{name} {weight:g}" for name, weight in extra.items())


@app.command()
def describe(
    name: Annotated[str, typer.Argument(help="A registered reward, e.g. multiple_choice or acme/st_iou.")],
    experiment: ExperimentOption = None,
) -> None:
    """Where a reward lives, what it does, and its scoring policy."""
    import inspect

    from evr1.experiment_files import PACKAGE
    from evr1.registry import REWARDS, UnknownNameError
    from evr1.rewards.contract import status_of

    if experiment is not None:
        import_experiment(experiment)
    try:
        REWARDS.canonical(name)
    except UnknownNameError as exc:
        raise ConfigError(f"{exc}{_experiment_hint(str(exc), experiment)}") from None

    description = REWARDS.describe(name)
    target = inspect.unwrap(REWARDS.get(name))
    module = inspect.getmodule(target)
    try:
        file = inspect.getsourcefile(target)
    except TypeError:
        file = None
    own = (inspect.getdoc(target) or description.summary).splitlines()
    lines = [f"rewards:{description.name}", f"  {description.module}" + (f" [{file}]" if file else ""),
             f"  origin: {description.origin}", *(f"  {line}".rstrip() for line in own)]  # fmt: skip
    about = inspect.getdoc(module) if module is not None and not module.__name__.startswith(f"{PACKAGE}.") else None
    if about:  # the module's account of the rewards it holds (an experiment file's docstring describes the experiment)
        lines += ["", f"module {module.__name__}, which holds it:", about]  # type: ignore[union-attr]
    status = status_of(REWARDS.get(name))
    if status is not None:
        lines += ["", "here:", *(f"  {line}" for line in status(build_spec([], [], experiment)))]
    console.print("\n".join(lines), markup=False)


@app.command("routes")
def show_routes(
    routes: Annotated[list[str] | None, typer.Option("--route", help="TYPE=REWARD overrides.")] = None,
    experiment: ExperimentOption = None,
) -> None:
    """The reward each problem type is routed to."""
    from evr1.rewards.router import RewardRouter

    router = RewardRouter(build_spec([], routes or [], experiment))
    table = Table(show_header=True, box=None)
    table.add_column("problem type")
    table.add_column("reward")
    for problem_type, name in router.routes.items():
        table.add_row(problem_type.value, name)
    console.print(table)
    spec = router.spec
    extra = "".join(f", {name} ({weight:g})" for name, weight in router.extra.items())
    console.print(f"score: the weighted mean of the route's accuracy ({spec.accuracy_weight:g}), the format"
                  f" ({spec.format_weight:g}){extra}" + (", each extra reward where it applies" if extra else ""),
                  soft_wrap=True)
