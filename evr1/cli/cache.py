"""`evr1 cache build | info | verify`: the LMDB tensor cache of prepared media."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from evr1.errors import ConfigError

app = typer.Typer(help="Build, inspect and verify the tensor cache.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)

Opt = typer.Option


def _settings(experiment: str, data: list[Path] | None, overrides: list[str] | None, options: dict[str, Any]):
    """(data files, data root, video, image, cache specs, processor factory) from an experiment and/or options."""
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
    files = list(data) if data else [Path(p) for p in (*spec.train, *spec.val)]
    if not files:
        raise ConfigError("no data: pass an EXPERIMENT with data.train/data.val, or --data FILE")
    video = _updated(spec.video, VideoSpec, options, "video_")
    image = _updated(spec.image, ImageSpec, options, "image_")
    cache = spec.cache.model_copy(update={k: v for k, v in (("path", options["cache"]), ("storage", options["storage"])) if v is not None})
    if cache.path is None:
        raise ConfigError("no cache path: set data.cache.path in the experiment or pass --cache DIR")
    root = options["data_root"] or spec.data_root or files[0].parent
    return files, Path(root), video, image, cache, lambda: _processor(options["family"], model)


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
    data_root: Annotated[Path | None, Opt(help="Media paths are relative to this (default: data.data_root, else the first data file's folder).")] = None,
    cache: Annotated[str | None, Opt(help="Cache directory (default: data.cache.path).")] = None,
    family: Annotated[str | None, Opt(help="Use the default processors of a family: qwen2-vl, qwen2.5-vl, qwen3-vl (default: the experiment's model).")] = None,
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
    workers: Annotated[int, Opt(help="Worker processes (0: prepare in this process).")] = 2,
    failures: Annotated[Path | None, Opt(help="Failure report JSONL (default: CACHE/failures.jsonl).")] = None,
    strict: Annotated[bool, Opt(help="Exit with status 1 when any media file failed.")] = False,
    progress: Annotated[bool, Opt(help="Show a progress bar.")] = True,
) -> None:
    """Prepare every video and image of a dataset once and store the model-ready pixels. Resumable."""
    from evr1.data.records import read_records, record_files

    options = {
        "cache": cache, "storage": storage, "data_root": data_root, "family": family,
        "video_fps": fps, "video_nframes": nframes, "video_min_frames": min_frames, "video_max_frames": max_frames,
        "video_min_pixels": min_pixels, "video_max_pixels": max_pixels, "video_total_pixels": total_pixels,
        "image_min_pixels": image_min_pixels, "image_max_pixels": image_max_pixels,
    }
    files, root, video, image, cache_spec, processor = _settings(experiment, data, overrides, options)
    record_files(files)  # missing data files are reported before any heavy set-up
    from evr1.data.cache_build import build_cache

    report = build_cache(
        read_records(files), video=video, image=image, cache=cache_spec, processor=processor(), data_root=root,
        workers=workers, failures_path=failures, progress=progress,
    )
    console.print(
        f"cache {cache_spec.path}: {report.media} media, {report.built} built, {report.skipped} already present, "
        f"{report.failed} failed ({report.seconds:.1f} s)"
    )
    if report.failures:
        for item in report.failures[:10]:
            console.print(f"failed: record {item['record']!r} {item['file']}: {item['reason']}: {item['detail']}", markup=False)
        console.print(f"failure report: {report.failures_path} ({len(report.failures)} lines)")
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
            f"build {b['name'][:19]}: {b['media']} media, {b['built']} built, {b['skipped']} already present, "
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
    sample: Annotated[int, Opt(help="Entries to check (0: all).")] = 64,
    decode: Annotated[bool, Opt(help="Also prepare the source again and compare the bytes.")] = False,
    seed: Annotated[int, Opt()] = 0,
) -> None:
    """Re-hash a sample of entries (and optionally re-decode their sources); exit 1 on any bad entry."""
    from evr1.data.cache_verify import verify_cache

    result = verify_cache(path, sample=sample, decode=decode, seed=seed)
    for problem in result.problems:
        console.print(f"[red]bad[/red] {escape(str(problem))}")
    for note in result.stale:
        console.print(f"[yellow]stale[/yellow] {escape(str(note))}")
    console.print(f"checked {result.checked} of {result.entries} entries: {len(result.problems)} bad, {len(result.stale)} with a changed or missing source")
    if result.problems:
        raise typer.Exit(1)
