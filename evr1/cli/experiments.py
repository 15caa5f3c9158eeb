"""`evr1 run`, `evr1 show` and `evr1 list`."""

from __future__ import annotations

import enum
import importlib.util
import inspect
import re
import textwrap
import traceback
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from evr1.errors import ConfigError, Evr1Error

console = Console(highlight=False)

SetOption = Annotated[
    list[str] | None,
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
    """Print the experiment function's docstring, the experiment's description and the flattened, validated config,
    marking values set on the command line."""
    from evr1.experiment import flatten, provenance
    from evr1.experiment_files import resolve

    cfg, source, applied, experiment = _resolve(name, overrides)
    marks = provenance(cfg, applied)
    console.print(f"[bold]{source.label}[/bold]  ({source.origin}: {source.location})", soft_wrap=True)
    doc = inspect.getdoc(resolve(name)[0])
    for text in dict.fromkeys(t for t in (doc, experiment.description) if t):  # each once: the description may be it
        print(readable(text) + "\n")
    rows = [(path, value) for path, value in flatten(experiment) if path != "description"]  # printed above
    width = max(len(path) for path, _ in rows)
    for path, value in rows:  # plain lines, never wrapped: easy to grep and to copy into --set
        mark = f"  # {marks[path]}" if path in marks else ""
        print(f"{path:<{width}}  {plain(value)!r}{mark}")


def plain(value):
    """`value` with enums replaced by their values, inside dicts, lists and tuples too: what `--set` takes."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(plain(v) for v in value)
    return value


def missing_file(experiment) -> str | None:
    """The first input file of `experiment` that does not exist: a data file (see `missing_data_file`),
    the chat template of `data.prompt.chat_template` or the curated responses of `mixer.file`."""
    if (missing := missing_data_file(experiment.data)) is not None:
        return missing
    template = experiment.data.prompt.chat_template
    if template is not None and not Path(template).is_file():
        return f"data.prompt.chat_template {template} does not exist"
    file = experiment.mixer.file
    return f"mixer.file {file} does not exist" if file is not None and not Path(file).is_file() else None


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


def _mixer(mixer, n: int) -> str:
    if mixer.name is None:
        return "off (on-policy only)"
    given = {"file": mixer.file, "threshold": mixer.threshold, "decay over": mixer.decay_steps}
    return ", ".join([f"{mixer.name}, k={mixer.k} of n={n}", *(f"{k} {v}" for k, v in given.items() if v is not None)])


def _sampler(data) -> str:
    name = data.sampler or ("modality" if data.modality_ratio else "uniform")  # the runner's default
    ratios = ", ".join(f"{k} {v:g}" for k, v in (data.modality_ratio or {}).items())
    return f"{name}" + (f" ({ratios})" if ratios else "")


def _rewards(reward) -> str:
    """The score's parts and their weights: the accuracy of each type's route, the format, the extra rewards."""
    routes = "".join(f"{plain(t)} -> {name}, " for t, name in reward.routes.items())
    extra = "".join(f"; extra {name} (weight {weight:g})" for name, weight in reward.extra.items())
    return (f"accuracy (weight {reward.accuracy_weight:g}): {routes}{'others' if routes else 'every type'} by default"
            f" route; format {reward.format} (weight {reward.format_weight:g}){extra}")


def _plan(experiment, variant: str) -> Table:
    from evr1.run_dir import run_label

    table = Table(title=f"plan: {run_label(experiment, variant)}", show_header=False, box=None)
    d, r, a, t = experiment.data, experiment.rollout, experiment.algo, experiment.trainer
    rows = {
        "model": f"{experiment.model.name} ({experiment.model.dtype}, {experiment.model.attn_implementation})",
        "lora": _lora(experiment.model.lora),
        "data": f"train {list(d.train) or '-'}, val {list(d.val) or '-'}, cache {d.cache.mode} at {d.cache.path or '-'}",
        "video": f"fps {d.video.fps}, frames {d.video.min_frames}-{d.video.max_frames}, pixels {d.video.min_pixels}-{d.video.max_pixels}",
        "image": f"pixels {d.image.min_pixels}-{d.image.max_pixels}",
        "sampler": _sampler(d),
        "rollout": f"{r.engine or 'auto'} engine, n={r.n}, temperature {r.temperature}, max {r.max_response_tokens} response tokens",
        "mixer": _mixer(experiment.mixer, r.n),
        "rewards": _rewards(experiment.reward),
        "algorithm": f"{a.advantage} + {a.policy_loss} (clip {a.clip_low}/{a.clip_high}, {a.loss_agg}), KL {'on' if a.kl.enabled else 'off'}",
        "training": f"{t.steps} steps x {t.prompts_per_step} prompts, lr {experiment.optim.lr}, seed {t.seed}",
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table


def run(
    name: Annotated[str, typer.Argument(help="NAME[:VARIANT] of the experiment.")] = "",
    overrides: SetOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate (the config, model name, data files, curated answers),"
                                          " write nothing, do not train.")] = False,
    prepare: Annotated[bool, typer.Option("--prepare", help="Validate and write the run directory, do not train: start it"
                                          " later with --resume RUN_DIR.")] = False,
    run_dir: Annotated[
        Path | None, typer.Option(help="Run directory (default: <run_root>/<name>/<timestamp>); one holding a run is refused.")
    ] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue the run in this directory with its recorded config.")] = None,
    update_code: Annotated[
        bool, typer.Option("--update-code", help="With --resume: replace the run's copies of its experiment files (experiment.py,"
                           " and experiment_deps/ for the experiments it builds on) by the current files, restoring a"
                           " missing copy (an old copy is kept as NAME.py.N; config.json stays as recorded).")
    ] = False,
) -> None:
    """Validate an experiment, write its run directory, and train."""
    from evr1.models.loading import check_model_name
    from evr1.run_dir import check_unused, new_run_dir, write_run_dir
    from evr1.runner.ray.cluster import outside_job_copy

    if update_code and resume is None:
        raise ConfigError("--update-code goes with --resume RUN_DIR: a new run copies the current experiment file anyway")
    if prepare and (dry_run or resume is not None):
        raise ConfigError("--prepare writes a new run directory: do not pass --dry-run or --resume with it")
    if resume is not None:
        if name or overrides:
            raise ConfigError("--resume takes the run's recorded config; do not pass a NAME or --set with it")
        if run_dir is not None:
            raise ConfigError(f"--resume continues the run in its own directory {resume}; do not pass --run-dir with it")
        loaded = _resume(resume, update_code, dry_run)
        if loaded is None:
            return
        (experiment, source), target = loaded, resume
    else:
        if not name:
            raise ConfigError("evr1 run needs an experiment NAME (see `evr1 list experiments`)")
        _, source, applied, experiment = _resolve(name, overrides)
        _note_project_root(source)
        model = check_model_name(experiment.model)
        for missing in (model[1] if model and model[0] == "missing" else None, missing_file(experiment)):
            if missing is None:
                continue
            if not (dry_run or prepare):  # a recipe may be checked (or prepared) for a machine that has its files
                raise ConfigError(missing)
            typer.echo(f"warning: {missing}; a real run stops here", err=True)
        if dry_run:
            if run_dir is not None:
                check_unused(run_dir)
            _dry_run_warnings(experiment, model[1] if model and model[0] == "note" else None)
            console.print(_plan(experiment, source.variant))
            console.print("dry run: config validated; nothing written, not training.")
            return
        outside_job_copy(run_dir if run_dir is not None else Path(experiment.trainer.run_root))  # a Ray job's cwd
        target = run_dir if run_dir is not None else new_run_dir(experiment, variant=source.variant)
        target.mkdir(parents=True, exist_ok=True)
        write_run_dir(target, experiment, source, applied)
    console.print(_plan(experiment, source.variant))
    console.print(f"run directory: {target}")
    if dry_run or prepare:
        done = "the recorded config is valid; nothing written" if dry_run else "run directory written"
        console.print(f"{'dry run' if dry_run else 'prepared'}: {done}; not training."
                      + (f" Start it with `evr1 run --resume {target}`." if prepare else ""))
        return
    if importlib.util.find_spec("evr1.runner.loop.train") is None:
        console.print("[yellow]the training loop is not built yet (issue #6): the plan above is what it will run.[/yellow]")
        return
    _train(experiment, target, resume is not None, source)


def _dry_run_warnings(experiment, model_note: str | None) -> None:
    from evr1.cli.run_checks import long_offline_answers

    if model_note is not None:
        typer.echo(f"note: {model_note}", err=True)
    if (long := long_offline_answers(experiment)) is not None:
        typer.echo(f"warning: {long}", err=True)


def _note_project_root(source) -> None:
    """Say so when the experiment was found in a parent folder's `experiments/`: its relative paths
    (data, cache, runs/) still resolve from the current folder."""
    from evr1.experiment_files import project_root

    root, here = project_root(), Path.cwd().resolve()
    if root is not None and root != here and source.file is not None and source.file.parent == root / "experiments":
        typer.echo(f"note: found {source.file} in the project folder {root}; its relative paths (data, cache, runs/) resolve"
                   f" from the current folder {here}: run from {root} if they are meant from there", err=True)


def _resume(target: Path, update_code: bool, dry_run: bool):
    """The experiment and source of the run in `target`, after the checks and notes a resume needs (another
    process runs it; it failed or was killed before; it started in another folder; its experiment files changed
    since), with the run's copies of its experiment files replaced by the current ones when `update_code`.
    None when the run is finished."""
    from evr1.run_dir import finished, last_failure, load_run, read_info

    info = read_info(target)
    _check_previous_process(target, dry_run)
    if (failure := last_failure(target)) is not None:
        where = f"at step {failure['step']}" if failure.get("step") else "before step 1"
        typer.echo(f"note: this run failed {where} ({failure.get('error')})", err=True)
    if info.get("cwd") and Path(info["cwd"]).resolve() != Path.cwd().resolve():
        typer.echo(f"note: this run started in {info['cwd']}; its relative paths resolve from the current folder {Path.cwd()}",
                   err=True)
    changed = _check_code(target, info, update_code)
    experiment, source = load_run(target, use=changed if update_code else None)
    if finished(target, experiment.trainer.steps):
        console.print(f"{target} already finished all {experiment.trainer.steps} steps (final model in {target / 'final_model'});"
                      " nothing to do")
        return None
    if (missing := missing_file(experiment)) is not None:
        raise ConfigError(missing)
    if update_code and changed:
        _update_code(target, changed, dry_run)
    return experiment, source


def _check_code(target: Path, info: dict, update_code: bool) -> dict[str, Path]:
    """The run's copies of experiment files (by name) whose file changed since or that are missing, with the current
    file; says so, or refuses: a missing copy without `update_code`, a main file gone with it."""
    from evr1.run_dir import SOURCE_FILE, code_changed, recorded_files

    files, changed = recorded_files(target), code_changed(target)
    if not update_code:
        for name, _, current in files:
            if not (target / name).is_file():
                restore = f"add --update-code to restore it from {current}" if current else "its original no longer exists either"
                raise ConfigError(f"{target / name}, the run's copy of an experiment file, is missing: {restore}")
        for name, current in changed.items():
            typer.echo(f"note: {current} differs from this run's copy {target / name}, which the resume imports; to run the"
                       f" current file instead, add --update-code (the copy is kept as {Path(name).name}.N; config.json stays"
                       " as recorded)", err=True)
        return changed
    if not files:
        raise ConfigError(f"--update-code: the experiment of {target} comes from {info.get('origin')} {info.get('location')},"
                          " which a resume imports as installed; there is no copy to update")
    for name, location, current in files:
        if current is None and name == SOURCE_FILE:
            raise ConfigError(f"--update-code: the experiment file {location} of {target} no longer exists, nor does"
                              " experiments/<name>.py from the current folder")
        if current is None and (target / name).is_file():
            typer.echo(f"note: {location} no longer exists; the run keeps its copy {target / name}", err=True)
    if not changed:
        copies = ", ".join(str(target / name) for name, _, current in files if current is not None)
        typer.echo(f"note: the run's copies ({copies}) already equal the current files; nothing to update", err=True)
    return changed


def _update_code(target: Path, changed: dict[str, Path], dry_run: bool) -> None:
    """Make the current files the run's copies (`changed`: by copy name), or say what that would do."""
    from evr1.run_dir import replace_code

    for name, current in changed.items():
        if dry_run:
            typer.echo(f"dry run: would replace {target / name} by {current}", err=True)
            continue
        backup = replace_code(target, current, name)
        kept = f"the old copy is {backup}" if backup else "there was no copy"
        typer.echo(f"updated {target / name} from {current} ({kept})", err=True)
    if not dry_run:
        typer.echo("the run keeps its recorded config (config.json): the new code is imported, its experiment function"
                   " is not called again", err=True)


def _check_previous_process(target: Path, dry_run: bool) -> None:
    """Refuse to resume a run another live process is running; note a run killed without a record."""
    from evr1.run_dir import log_event, previous_process

    if (previous := previous_process(target)) is None:
        return
    event, alive = previous
    who = f"process {event['pid']} on {event.get('host')}, " if event.get("pid") is not None else ""
    who += f"started {event.get('time')}"
    if alive:
        raise ConfigError(f"{target} is being run by another process ({who}): wait for it to end or stop it first")
    if alive is None:
        typer.echo(f"note: {target} is recorded as running ({who}); if it still runs there, stop it first", err=True)
    else:
        typer.echo(f"note: the previous run of {target} ({who}) ended without a record (killed?)", err=True)
        if not dry_run:
            log_event(target, "ended without a record", pid=event.get("pid"), host=event.get("host"))


def _train(experiment, target: Path, resume: bool, source) -> None:
    """Train, recording in `run.json` that the run is running, then finished, interrupted or failed; a failure
    ends with one line saying where the run stopped and how to resume it."""
    from evr1.run_dir import SOURCE_FILE, failed_message, log_event, original_source, process_info, stopped_step
    from evr1.runner.loop.preemption import EXIT_STOPPED, Stopped
    from evr1.runner.loop.train import train

    log_event(target, "running", resumed=resume, **process_info())
    try:
        train(experiment, target, resume=resume, source=source)
    except Stopped as exc:  # a signal asked for it: `train` said where it stopped and how to continue
        log_event(target, "interrupted", step=exc.step, signal=exc.signal_name, checkpoint=exc.checkpoint)
        raise typer.Exit(EXIT_STOPPED) from None
    except KeyboardInterrupt as exc:  # `train` said where it stopped and how to continue
        log_event(target, "interrupted", step=getattr(exc, "evr1_step", None) or stopped_step(target))
        raise typer.Exit(130) from None
    except Exception as exc:  # noqa: BLE001 - recorded, reported with a resume hint, and the run exits non-zero
        text = "".join(traceback.format_exception(exc))
        used = [source.file, *(d.file for d in source.deps)] if source else []
        files = [f for f in (*used, original_source(target), target.resolve() / SOURCE_FILE) if f]
        code = next((f for f in files if str(f) in text), None)
        lines = [line for line in str(exc).splitlines() if line.strip()] or [""]
        error = type(exc).__name__ + ": " + (lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1].strip()}")
        step = getattr(exc, "evr1_step", None) or stopped_step(target)  # `train` says which step was running
        if isinstance(exc, ConfigError) and not step and not resume:  # a resume would load the same config again
            _config_refused(target, exc)
        log_event(target, "failed", step=step, error=error, in_experiment_code=code is not None)
        if isinstance(exc, Evr1Error):
            typer.echo(f"error: {exc}", err=True)
        else:
            traceback.print_exception(exc)
        typer.echo(failed_message(target, step, code), err=True)
        raise typer.Exit(2 if isinstance(exc, Evr1Error) else 1) from None
    log_event(target, "finished")


def _config_refused(target: Path, exc: ConfigError) -> None:
    """Report a new run's config refused as the run started, before step 1, remove its run directory again and
    exit 2: `--resume` cannot fix it (it reloads the recorded config), so the message says to start a new run."""
    from evr1.run_dir import discard_run_dir

    discard_run_dir(target)
    typer.echo(f"error: {exc}", err=True)
    typer.echo("the config was refused before step 1 (the run directory is removed again): fix it and start a new run",
               err=True)
    raise typer.Exit(2)


def list_components(
    kind: Annotated[str | None, typer.Argument(help="A registry (rewards, advantages, ...) or 'experiments'.")] = None,
    experiment: Annotated[
        str | None,
        typer.Option("--experiment", "-e", help="NAME[:VARIANT] or a .py file: imported first, so the components it registers are listed."),
    ] = None,
) -> None:
    """List registered components and experiments with a one-line description."""
    from evr1.errors import known_list, suggest
    from evr1.experiment_files import known_experiments, resolve, summary
    from evr1.registry import REGISTRIES, RegistrationError

    if experiment is not None:
        resolve(experiment)

    kinds = sorted(REGISTRIES)
    if kind is not None and kind not in kinds:
        raise ConfigError(f"unknown kind {kind!r}.{suggest(kind, kinds)} Known: {known_list(kinds)}")
    for registry_name in [kind] if kind else kinds:
        rows: list[tuple[str, str, str]] = []
        if registry_name == "experiments":
            for exp in known_experiments():
                try:
                    found, location = summary(exp)  # none for a module the experiments import
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
    from evr1.cli.plan import plan

    app.command()(run)
    app.command()(show)
    app.command("list")(list_components)
    app.command()(plan)
