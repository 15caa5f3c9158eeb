"""`evr1 data check | synth | import`: validate datasets, make synthetic ones, bring existing ones."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Check, synthesise and import datasets.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)
errors_out = Console(stderr=True, highlight=False, soft_wrap=True)

_MODALITIES = ("video", "image", "video+image", "text")
FilesArg = Annotated[list[Path], typer.Argument(help="Record files (JSON, JSONL, Parquet), saved datasets folders, or folders of them.")]
MaxShown = Annotated[int, typer.Option(help="Show at most this many problems of each kind.")]


def _report_errors(errors: list, max_shown: int) -> None:
    for error in errors[:max_shown]:
        errors_out.print(f"error: {error}", markup=False)
    if len(errors) > max_shown:
        errors_out.print(f"... and {len(errors) - max_shown} more errors")


@app.command()
def check(
    files: FilesArg,
    data_root: Annotated[Path | None, typer.Option(help="Media paths are relative to this (default: each record file's folder).")] = None,
    max_shown: MaxShown = 20,
    probe: Annotated[bool, typer.Option("--probe/--no-probe", help="Open every media file (video header and first frame, images) to find unreadable ones.")] = True,
    out: Annotated[Path | None, typer.Option("--out", help="Write every problem to this report (.json or .md).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
    decoder: Annotated[str, typer.Option(help="Open videos with this decoder (pyav, decord or torchcodec): the experiment's video.decoder.")] = "pyav",
    experiment: Annotated[str | None, typer.Option("--experiment", "-e", help="NAME[:VARIANT]: warn about prompts over its"
                          " rollout.max_prompt_tokens, with its model's tokenizer and its prompt settings; read the files"
                          " with its data.columns.")] = None,
    column: Annotated[list[str] | None, typer.Option("--column", help="FIELD=COLUMN: the files' name for a record field"
                      " (as data.columns). Repeatable.")] = None,
) -> None:
    """Validate records, their reference answers (as their rewards read them), curated answers and their
    media; print counts by problem type and modality. Exit 1 on any error or missing/unreadable media file."""
    from tqdm import tqdm

    from evr1.data.check import check_data, check_report_path, write_report
    from evr1.data.decode import check_decoder
    from evr1.errors import ConfigError

    if out is not None:
        check_report_path(out)
    try:
        check_decoder(decoder)
    except ValueError as exc:
        raise ConfigError(f"--decoder: {exc}") from None

    def bar(total: int) -> tqdm:
        return tqdm(total=total, unit="file", desc="probing media", disable=None if total >= 50 else True, dynamic_ncols=True)

    lengths, limit, columns = _prompt_lengths(experiment) if experiment is not None else (None, None, {})
    for item in column or []:
        field, sep, name = item.partition("=")
        if not sep or not field or not name:
            raise ConfigError(f"--column {item!r}: expected FIELD=COLUMN, e.g. problem=question")
        columns[field] = name
    from evr1.specs import DataSpec

    try:
        columns = DataSpec(columns=columns).columns  # the fields checked as the spec checks them
    except ValueError as exc:
        raise ConfigError(f"--column: {exc}") from None
    result = check_data(files, data_root, probe=probe, progress=bar, decoder=decoder, prompt_tokens=lengths,
                        max_prompt_tokens=limit, columns=columns)
    errors, warnings = result.of("error"), result.of("warning")
    shown: Counter[str] = Counter()
    for problem in result.problems:  # in file and line order, at most max_shown of each severity
        shown[problem.severity] += 1
        if shown[problem.severity] <= max_shown:
            errors_out.print(f"{problem.severity}: {problem}", markup=False)
    for severity, items in (("errors", errors), ("warnings", warnings)):
        if len(items) > max_shown:
            errors_out.print(f"... and {len(items) - max_shown} more {severity}" + (f" (all in {out})" if out else ""))
    console.print(_summary(result.counts))
    unread = sum(p.field == "answer" and "cannot read this reference" in p.message or "empty reference" in p.message for p in errors)
    unread_note = f" ({unread} reference answers their reward cannot read)" if unread else ""
    missing, unreadable = result.media_of(True), result.media_of(False)
    probed = f", {len(unreadable)} unreadable media files" if probe else " (not opened: --no-probe)"
    console.print(f"{result.valid} valid records, {len(errors)} problems{unread_note}, {len(missing)} missing media files{probed},"
                  f" {len(warnings)} warnings")
    shown.clear()
    for item in result.media:  # in the order of the first record using each file
        kind = "missing" if item.reason == "missing" else "unreadable"
        shown[kind] += 1
        if shown[kind] <= max_shown:
            console.print(str(item), markup=False)
    for kind, items in (("missing", missing), ("unreadable", unreadable)):
        if len(items) > max_shown:
            console.print(f"... and {len(items) - max_shown} more {kind} media files")
    if out is not None:
        console.print(f"report: {write_report(result, out)}")
    if errors or result.media or (strict and warnings):
        raise typer.Exit(1)


def _prompt_lengths(name: str):
    """A record's prompt length without its media tokens as the experiment `name` builds it, its limit, and the
    experiment's `data.columns`."""
    from evr1.data.prompting import load_chat_template, training_question_text
    from evr1.experiment import build_experiment
    from evr1.experiment_files import load_config
    from evr1.models import load_processor
    from evr1.models.prompts import build_prompt, chat_messages

    exp = build_experiment(load_config(name)[0])
    processor, spec = load_processor(exp.model), exp.data.prompt
    template = load_chat_template(spec)

    def length(record) -> int:
        messages = chat_messages(training_question_text(record, spec), [], spec.system)
        return len(build_prompt(processor, messages, chat_template=template))

    return length, exp.rollout.max_prompt_tokens, dict(exp.data.columns)


def _summary(counts: Counter[tuple[str, str]]) -> Table:
    table = Table(title="records by problem type and modality", title_justify="left")
    table.add_column("problem_type")
    for modality in (*_MODALITIES, "total"):
        table.add_column(modality, justify="right")
    for ptype in sorted({p for p, _ in counts}):
        row = [counts[ptype, m] for m in _MODALITIES]
        table.add_row(ptype, *map(str, row), str(sum(row)))
    totals = [sum(n for (_, modality), n in counts.items() if modality == m) for m in _MODALITIES]
    table.add_row("total", *map(str, totals), str(sum(totals)), style="bold")
    return table


@app.command()
def prompt(
    experiment: Annotated[str | None, typer.Argument(help="NAME[:VARIANT] of the experiment whose model, prompt and media"
                          " settings build it (default: evr1's standard settings; then --records is needed).")] = None,
    records: Annotated[Path | None, typer.Option(help="A JSON/JSONL record file (default: the experiment's first data.train file).")] = None,
    index: Annotated[int, typer.Option(min=0, help="The record's position in the file, from 0.")] = 0,
    record_id: Annotated[str | None, typer.Option("--id", help="The record's id (instead of --index).")] = None,
    overrides: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a field of the experiment: PATH=VALUE.")] = None,
    full: Annotated[bool, typer.Option("--full", help="Print every media placeholder token, not one per run.")] = False,
) -> None:
    """Print the exact prompt the experiment gives a record (chat template, system prompt, options, instruction,
    media placeholders) and its token count: text tokens and media tokens. Without an experiment, the standard
    settings build it (the defaults of every spec: `evr1 show` of an experiment lists them)."""
    import fiddle as fdl

    from evr1.data.prompt_view import prompt_view
    from evr1.errors import ConfigError
    from evr1.experiment import Experiment, apply_overrides, build_experiment
    from evr1.experiment_files import load_config

    if experiment is None and records is None:
        raise ConfigError("evr1 data prompt needs --records FILE, or an EXPERIMENT whose first data.train file is read")
    cfg = load_config(experiment)[0] if experiment is not None else fdl.Config(Experiment)
    apply_overrides(cfg, overrides or [])
    built = build_experiment(cfg)
    view = prompt_view(built, records, index, record_id, collapse=not full)
    if experiment is None:
        spec = built.data.prompt
        system = "the chat template's default" if spec.system is None else repr(spec.system)
        console.print(f"no experiment: evr1's standard settings (model {built.model.name}, system prompt {system},"
                      f" instruction {spec.instruction!r})", markup=False)
    console.print(view.header, markup=False)
    print(view.text)


@app.command()
def synth(
    out: Annotated[Path, typer.Option("--out", help="Folder for train.jsonl, val.jsonl and media/.")],
    seed: Annotated[int, typer.Option(min=0, help="Same seed, same records and media.")] = 0,
    count: Annotated[int, typer.Option(min=0, help="Training records.")] = 150,
    val_count: Annotated[int, typer.Option(min=0, help="Validation records.")] = 30,
    tasks: Annotated[str, typer.Option(help="Comma-separated task names or groups ('all', 'quickstart').")] = "all",
    width: Annotated[int | None, typer.Option(help="Media width in px (default 64; 56 for quickstart).")] = None,
    height: Annotated[int | None, typer.Option(help="Media height in px (default 64; 56 for quickstart).")] = None,
    fps: Annotated[float | None, typer.Option(help="Video frame rate (default 4).")] = None,
    frames: Annotated[int | None, typer.Option(help="Frames per video (default 8; 4 for quickstart).")] = None,
    blank: Annotated[bool, typer.Option("--blank", help="Write the same records with empty media (a control).")] = False,
) -> None:
    """Generate a synthetic dataset with exact answers for every problem type."""
    from dataclasses import replace

    from evr1.data.synth import QUICKSTART_CANVAS, generate, resolve_tasks
    from evr1.data.synth_render import Canvas
    from evr1.errors import Evr1Error

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    base = QUICKSTART_CANVAS if names == ["quickstart"] else Canvas()
    given = {k: v for k, v in {"width": width, "height": height, "fps": fps, "frames": frames}.items() if v is not None}
    try:
        canvas = replace(base, **given)
    except ValueError as exc:
        raise Evr1Error(str(exc)) from None
    started = time.perf_counter()
    result = generate(out, tasks=resolve_tasks(names), n_train=count, n_val=val_count, seed=seed, canvas=canvas, blank=blank)
    console.print(f"wrote {result.counts['train']} train and {result.counts['val']} val records to {result.root} "
                  f"({canvas.width}x{canvas.height}, {canvas.frames} frames at {canvas.fps:g} fps) "
                  f"in {time.perf_counter() - started:.1f} s")
    console.print(f"train: {result.train}\nval:   {result.val}")


@app.command("import")
def import_(
    sources: Annotated[list[Path], typer.Argument(help="EasyVideoR1 / Video-R1 JSON or JSONL files, or folders of them.")],
    out: Annotated[Path, typer.Option("--out", help="The JSONL file to write.")],
    media_prefix: Annotated[str, typer.Option(help="Put in front of relative media paths (where media lie relative to --out's folder).")] = "",
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Write the valid records even if others fail.")] = False,
    max_shown: MaxShown = 20,
) -> None:
    """Convert EasyVideoR1 / Video-R1 style records to evr1 records. Exit 1 if any record fails."""
    from evr1.data.importers import import_to_file

    report = import_to_file(sources, out, media_prefix=media_prefix, skip_invalid=skip_invalid)
    _report_errors(report.errors, max_shown)
    if report.errors and not skip_invalid:
        errors_out.print(f"{len(report.errors)} problems: nothing written (fix them, or pass --skip-invalid)")
        raise typer.Exit(1)
    skipped = f", skipped {len(report.errors)} invalid" if report.errors else ""
    console.print(f"wrote {report.written} records to {out}{skipped}")
