"""`evr1 run`, `evr1 show` and `evr1 list`."""

from __future__ import annotations

import importlib.util
import inspect
import re
import textwrap
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from evr1.errors import ConfigError

console = Console(highlight=False)

SetOption = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="Override a field: PATH=VALUE (a Python literal, text, or @registry:name). Repeatable."),
]


def _resolve(name: str, overrides: list[str] | None):
    from evr1.experiment import apply_overrides, build_experiment
    from evr1.experiment_files import load_config

    cfg, source = load_config(name)
    applied = apply_overrides(cfg, overrides or [])
    return cfg, source, applied, build_experiment(cfg)


def show(
    name: Annotated[str, typer.Argument(help="NAME[:VARIANT]: a .py file, experiments/NAME.py, a registered experiment or a module.")],
    overrides: SetOption = None,
) -> None:
    """Print the flattened, validated config, marking values set on the command line."""
    from evr1.experiment import flatten, provenance

    cfg, source, applied, experiment = _resolve(name, overrides)
    marks = provenance(cfg, applied)
    console.print(f"[bold]{source.label}[/bold]  ({source.origin}: {source.location})")
    if experiment.description:
        print(readable(experiment.description) + "\n")
    rows = [(path, value) for path, value in flatten(experiment) if path != "description"]  # printed above
    width = max(len(path) for path, _ in rows)
    for path, value in rows:  # plain lines, never wrapped: easy to grep and to copy into --set
        mark = f"  # {marks[path]}" if path in marks else ""
        print(f"{path:<{width}}  {value!r}{mark}")


def missing_data_file(data) -> str | None:
    """The first train/val file of `data` (a `DataSpec`) that neither exists nor is written by `data.synth`."""
    made: set[Path] = set()
    if data.synth is not None:
        outs = [Path(data.synth.out)] + ([Path(f"{data.synth.out}-blank")] if data.synth.blank_control else [])
        made = {(out / name).resolve() for out in outs for name in ("", "train.jsonl", "val.jsonl")}
    for split, files in (("train", data.train), ("val", data.val)):
        for file in files:
            if not Path(file).exists() and Path(file).resolve() not in made:
                generated = f" (data.synth writes {data.synth.out}/train.jsonl and val.jsonl)" if data.synth else ""
                return f"data.{split}: {file} does not exist{generated}"
    return None


def readable(text: str, width: int = 100) -> str:
    """Prose (a docstring) re-wrapped to `width`: paragraphs and "- " list items kept, runs of spaces
    (e.g. from `\\` line continuations) collapsed."""
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        items = re.split(r"\n(?=\s*[-*] )", paragraph.strip())  # list items stay on lines of their own
        wrapped = [textwrap.fill(" ".join(i.split()), width, subsequent_indent="  " * (i.lstrip()[:2] in ("- ", "* "))) for i in items]
        paragraphs.append("\n".join(wrapped))
    return "\n\n".join(paragraphs)


def _lora(lora) -> str:
    if lora is None:
        return "off (full fine-tuning)"
    return f"rank {lora.rank}, alpha {lora.alpha:g}, targets {', '.join(lora.target_modules)}, vision {lora.vision}"


def _plan(experiment) -> Table:
    table = Table(title=f"plan: {experiment.name}", show_header=False, box=None)
    d, r, a, t = experiment.data, experiment.rollout, experiment.algo, experiment.trainer
    rows = {
        "model": f"{experiment.model.name} ({experiment.model.dtype}, {experiment.model.attn_implementation})",
        "lora": _lora(experiment.model.lora),
        "data": f"train {list(d.train) or '-'}, val {list(d.val) or '-'}, cache {d.cache.mode} at {d.cache.path or '-'}",
        "video": f"fps {d.video.fps}, frames {d.video.min_frames}-{d.video.max_frames}, pixels {d.video.min_pixels}-{d.video.max_pixels}",
        "image": f"pixels {d.image.min_pixels}-{d.image.max_pixels}",
        "rollout": f"{r.engine or 'auto'} engine, n={r.n}, temperature {r.temperature}, max {r.max_response_tokens} response tokens",
        "algorithm": f"{a.advantage} + {a.policy_loss} (clip {a.clip_low}/{a.clip_high}, {a.loss_agg}), KL {'on' if a.kl.enabled else 'off'}",
        "training": f"{t.steps} steps x {t.prompts_per_step} prompts, lr {experiment.optim.lr}, seed {t.seed}",
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table


def run(
    name: Annotated[str, typer.Argument(help="NAME[:VARIANT] of the experiment.")] = "",
    overrides: SetOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and write the run directory, do not train.")] = False,
    run_dir: Annotated[
        Optional[Path], typer.Option(help="Run directory (default: <run_root>/<name>/<timestamp>); one holding a run is refused.")
    ] = None,
    resume: Annotated[Optional[Path], typer.Option(help="Continue the run in this directory with its recorded config.")] = None,
) -> None:
    """Validate an experiment, write its run directory, and train."""
    from evr1.run_dir import finished, load_run, new_run_dir, write_run_dir

    if resume is not None:
        if name or overrides:
            raise ConfigError("--resume takes the run's recorded config; do not pass a NAME or --set with it")
        (experiment, source), target = load_run(resume), resume
        if finished(target, experiment.trainer.steps):
            console.print(f"{target} already finished all {experiment.trainer.steps} steps (final model in {target / 'final_model'});"
                          " nothing to do")
            return
        if (missing := missing_data_file(experiment.data)) is not None:
            raise ConfigError(missing)
    else:
        if not name:
            raise ConfigError("evr1 run needs an experiment NAME (see `evr1 list experiments`)")
        _, source, applied, experiment = _resolve(name, overrides)
        if (missing := missing_data_file(experiment.data)) is not None:
            if not dry_run:  # a dry run may check a recipe for a machine that has the data
                raise ConfigError(missing)
            typer.echo(f"warning: {missing}; a real run stops here", err=True)
        target = run_dir if run_dir is not None else new_run_dir(experiment)
        target.mkdir(parents=True, exist_ok=True)
        write_run_dir(target, experiment, source, applied)
    console.print(_plan(experiment))
    console.print(f"run directory: {target}")
    if dry_run:
        console.print("dry run: config validated and recorded; not training.")
        return
    if importlib.util.find_spec("evr1.runner.train") is None:
        console.print("[yellow]the training loop is not built yet (issue #6): the plan above is what it will run.[/yellow]")
        return
    from evr1.runner.train import train

    try:
        train(experiment, target, resume=resume is not None, source=source)
    except KeyboardInterrupt:  # `train` said where it stopped and how to continue
        raise typer.Exit(130) from None


def list_components(
    kind: Annotated[Optional[str], typer.Argument(help="A registry (rewards, advantages, ...) or 'experiments'.")] = None,
) -> None:
    """List registered components and experiments with a one-line description."""
    from evr1.errors import known_list, suggest
    from evr1.experiment_files import known_experiments, summary
    from evr1.registry import REGISTRIES, RegistrationError

    kinds = sorted(REGISTRIES)
    if kind is not None and kind not in kinds:
        raise ConfigError(f"unknown kind {kind!r}.{suggest(kind, kinds)} Known: {known_list(kinds)}")
    for registry_name in [kind] if kind else kinds:
        rows: list[tuple[str, str, str]] = []
        if registry_name == "experiments":
            for exp in known_experiments():
                try:
                    found, location = summary(exp)
                    rows.extend((label, text, location if i == 0 else "") for i, (label, text) in enumerate(found))
                except ConfigError as exc:
                    rows.append((exp, f"broken: {exc}", ""))
        else:
            registry = REGISTRIES[registry_name]
            for component in registry.names():
                try:
                    d = registry.describe(component)
                except RegistrationError as exc:  # one broken plugin must not hide the others
                    rows.append((component, f"broken: {exc}", ""))
                    continue
                rows.append((component, d.summary, "" if d.origin == "builtin" else d.origin))
        console.print(f"[bold]{registry_name}[/bold]")
        width = max((len(name) for name, _, _ in rows), default=0)
        for name, text, origin in rows or [("(none)", "", "")]:
            print(f"  {name:<{width}}  {text}" + (f"  [{origin}]" if origin else ""))


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(show)
    app.command("list")(list_components)
