"""`evr1 cache build | info | verify | prune`: the LMDB tensor cache of prepared media."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from evr1.errors import ConfigError

app = typer.Typer(help="Build, inspect, verify and prune the tensor cache.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)

Opt = typer.Option


def _settings(experiment: str, data: list[Path] | None, overrides: list[str] | None, options: dict[str, Any]):
    """(splits, video, image, cache specs, processor factory) from an experiment and/or options.

    An experiment's data are its training split and each validation file, every one with its own
    media root, as training reads them; `--data` files are one split under one root.
    """
    from evr1.runner.loop.datasets import Split, ensure_synthetic, train_split, val_splits
    from evr1.specs import DataSpec, ImageSpec, VideoSpec

    model = None
    if experiment:
        from evr1.experiment import apply_overrides, build_experiment
        from evr1.experiment_files import load_config

        cfg, _ = load_config(experiment)
        apply_overrides(cfg, overrides or [])
        exp = build_experiment(cfg)
        spec, model = exp.data, exp.model
    elif overrides:
        raise ConfigError("--set needs an EXPERIMENT")
    else:
        spec = DataSpec()
    video = _updated(spec.video, VideoSpec, options, "video_")
    image = _updated(spec.image, ImageSpec, options, "image_")
    cache = spec.cache.model_copy(update={k: v for k, v in (("path", options["cache"]), ("storage", options["storage"])) if v is not None})
    if cache.path is None:
        raise ConfigError("no cache path: set data.cache.path in the experiment or pass --cache DIR")
    if data:
        from evr1.data.records import read_records, record_files

        record_files(data)  # missing data files are reported before any heavy set-up
        root = options["data_root"] or spec.data_root or Path(data[0]).parent
        splits = [Split("data", tuple(read_records(list(data), spec.columns)), Path(root))]
    else:
        if not (spec.train or spec.val):
            raise ConfigError("no data: pass an EXPERIMENT with data.train/data.val, or --data FILE")
        if options["data_root"] is not None:
            spec = spec.model_copy(update={"data_root": str(options["data_root"])})
        if spec.synth is not None:
            ensure_synthetic(spec.synth)  # as `evr1 run` does
        splits = ([train_split(spec)] if spec.train else []) + val_splits(spec)
    return splits, video, image, cache, lambda: _processor(options["family"], model)


def _processor(family: str | None, model):
    """The experiment model's processor, or the default processors of `family`."""
    from evr1.data.loader import family_processors

    if family is None and model is not None:
        from evr1.models.loading import load_processor

        return load_processor(model)
    return family_processors(family or "qwen2.5-vl")


def _updated(spec, cls, options: dict[str, Any], prefix: str):
    changes = {k.removeprefix(prefix): v for k, v in options.items() if k.startswith(prefix) and v is not None}
    for one, other in (("nframes", "fps"), ("fps", "nframes")):  # setting one of the pair unsets the other
        if one in changes and other not in changes and other in cls.model_fields:
            changes[other] = None
    try:
        return cls(**{**spec.model_dump(), **changes})
    except ValueError as exc:
        raise ConfigError(f"{prefix.rstrip('_')} settings: {exc}") from None


@app.command()
def build(
    experiment: Annotated[str, typer.Argument(help="NAME[:VARIANT] of an experiment (its data, specs, cache and model).")] = "",
    data: Annotated[list[Path] | None, Opt("--data", help="Record files/folders (instead of the experiment's). Repeatable.")] = None,
    data_root: Annotated[Path | None, Opt(help="Media paths are relative to this (default: data.data_root, else each experiment data file's folder, or the first --data file's).")] = None,
    cache: Annotated[str | None, Opt(help="Cache directory (default: data.cache.path).")] = None,
    family: Annotated[str | None, Opt(help="Use the default processors of a family: qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5 (default: the experiment's model).")] = None,
    storage: Annotated[str | None, Opt(help="uint8 (default, exact) or bfloat16.")] = None,
    fps: Annotated[float | None, Opt(help="Video: frames sampled per second.")] = None,
    nframes: Annotated[int | None, Opt(help="Video: a fixed frame count (instead of fps).")] = None,
    min_frames: Annotated[int | None, Opt()] = None,
    max_frames: Annotated[int | None, Opt()] = None,
    min_pixels: Annotated[int | None, Opt(help="Video: per-frame minimum pixels.")] = None,
    max_pixels: Annotated[int | None, Opt(help="Video: per-frame maximum pixels.")] = None,
    total_pixels: Annotated[int | None, Opt(help="Video: pixel budget shared by all frames.")] = None,
    image_min_pixels: Annotated[int | None, Opt()] = None,
    image_max_pixels: Annotated[int | None, Opt()] = None,
    overrides: Annotated[list[str] | None, Opt("--set", "-s", help="Override an experiment field: PATH=VALUE.")] = None,
    workers: Annotated[int | None, Opt(help="Worker processes (0: prepare in this process; default: 2, or this process "
                                            "when the files to prepare total under 64 MB).")] = None,
    failures: Annotated[Path | None, Opt(help="Failure report JSONL (default: CACHE/failures.jsonl).")] = None,
    strict: Annotated[bool, Opt(help="Exit with status 1 when any media file failed.")] = False,
    progress: Annotated[bool, Opt(help="Show a progress bar.")] = True,
    replace_damaged: Annotated[
        bool, Opt(help="A damaged cache file (truncated, unreadable) is deleted and built anew.")
    ] = False,
) -> None:
    """Prepare every video and image of a dataset once and store the model-ready pixels. Resumable.

    An experiment's training and validation files are built split by split, each against its own
    media root, as training reads them. One failure report lists every split's failures.
    """
    options = {
        "cache": cache, "storage": storage, "data_root": data_root, "family": family,
        "video_fps": fps, "video_nframes": nframes, "video_min_frames": min_frames, "video_max_frames": max_frames,
        "video_min_pixels": min_pixels, "video_max_pixels": max_pixels, "video_total_pixels": total_pixels,
        "image_min_pixels": image_min_pixels, "image_max_pixels": image_max_pixels,
    }
    splits, video, image, cache_spec, processor = _settings(experiment, data, overrides, options)
    from evr1.data.cache_build import build_cache

    proc = processor()
    failed = []
    for split in splits:
        report = build_cache(
            split.records, video=video, image=image, cache=cache_spec, processor=proc, data_root=split.root,
            workers=workers, failures_path=failures, progress=progress, split=split.name,
            replace_damaged=replace_damaged,
        )
        replace_damaged = False  # a file replaced for the first split is the new one
        damaged = f" ({report.damaged} of them damaged entries built again)" if report.damaged else ""
        console.print(
            f"cache {cache_spec.path} ({split.name}): {report.media} media, {report.built} built{damaged}, "
            f"{report.skipped} already present, {report.failed} failed ({report.seconds:.1f} s)"
        )
        for item in report.failures[:10]:
            console.print(f"failed: record {item['record']!r} {item['file']}: {item['reason']}: {item['detail']}", markup=False)
        failed += report.failures
    if failed:
        console.print(f"failure report: {report.failures_path} ({len(failed)} lines from this build)")
        if strict:
            raise typer.Exit(1)


@app.command()
def info(path: Annotated[Path, typer.Argument(help="Cache directory.")]) -> None:
    """Entries, bytes, and the settings of every build into this cache."""
    from evr1.data.cache import TensorCache

    store = TensorCache(path)
    stats = store.stats()
    console.print(f"cache {path}: {stats.entries} entries, {stats.payload_bytes / 1e6:.1f} MB in entries, {stats.file_bytes / 1e6:.1f} MB file")
    for b in store.builds():
        console.print(
            f"build {b['name'][:19]}{' (' + b['split'] + ')' if b.get('split') else ''}: {b['media']} media, {b['built']} built, {b['skipped']} already present, "
            f"{b['failed']} failed, storage {b['storage']}, data root {b['data_root']}"
        )
        console.print("  video: " + _fields(b["video"]))
        console.print("  image: " + _fields(b["image"]))
        for kind, proc in sorted(b["processor"].items()):
            g = proc["geometry"]
            console.print(f"  {kind} processor: {proc['class']} (patch {g['patch_size']}, merge {g['merge_size']}, temporal {g['temporal_patch_size']}, {g['resample']})")


def _fields(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items() if v is not None)


@app.command()
def verify(
    path: Annotated[Path, typer.Argument(help="Cache directory.")],
    sample: Annotated[int, Opt(help="Check a random sample of N entries (default 0: every entry).")] = 0,
    decode: Annotated[bool, Opt(help="Also prepare the source again and compare the bytes.")] = False,
    seed: Annotated[int, Opt()] = 0,
) -> None:
    """Check every entry's digest and source file (or a sample; optionally re-decode the sources); exit 1 on any
    damaged or stale entry.

    Entries of an older cache schema are never read (they are rebuilt); they are counted apart,
    not as bad: remove them with `evr1 cache prune`.
    """
    from evr1.data.cache_verify import verify_cache

    result = verify_cache(path, sample=sample, decode=decode, seed=seed)
    for problem in result.problems:
        console.print(f"[red]bad[/red] {escape(str(problem))}")
    for note in result.stale:
        console.print(f"[yellow]stale[/yellow] {escape(str(note))}")
    console.print(
        f"{'sampled' if result.sampled else 'checked'} {result.checked} of {result.entries} entries: "
        f"{len(result.problems)} bad, "
        f"{len(result.stale)} with a changed"
        f" or missing source, {len(result.old_schema)} of an older schema"
        + (f", {len(result.newer_schema)} of a newer evr1's schema (kept)" if result.newer_schema else "")
    )
    if result.old_schema:
        console.print(f"entries of an older schema are never read: remove them with `evr1 cache prune {escape(str(path))}`")
    if result.problems or result.stale:
        raise typer.Exit(1)


@app.command()
def prune(path: Annotated[Path, typer.Argument(help="Cache directory.")]) -> None:
    """Remove every entry of an older cache schema (never read by this evr1), and the recorded source files no entry
    refers to any more. The file keeps its size; later builds reuse the freed space."""
    from evr1.data.cache_verify import prune_cache

    done = prune_cache(path)
    console.print(f"cache {path}: removed {done.entries_removed} of {done.entries} entries (older schema) and"
                  f" {done.sources_removed} of {done.sources} source records (no entry refers to them)")
