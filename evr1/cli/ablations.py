"""Run the variants of `evr1/experiments/ablations.py` and plot their held-out accuracy per step.

    python -m evr1.cli.ablations --out runs/ablations --plot docs/ablations.png [--steps N] [--set path=value ...]

Every variant trains with the same seed in `OUT/<variant>/` (a normal run directory), then one
figure puts their validation accuracies side by side (one panel per validation file) and
`OUT/summary.md` tabulates them. A validation file holding more than one modality is split into
`OUT/val_splits/<its folder>/<stem>_<modality>.jsonl` (e.g. `quickstart/val.jsonl` into
`quickstart/val_video.jsonl` and `quickstart/val_image.jsonl`), which the variants validate on
instead: nothing outside OUT is written. `--reuse` reads the variants already trained with the same
config instead of training them again.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError
from evr1.run_dir import FINAL_MODEL

if TYPE_CHECKING:
    from evr1.data.records import Record

VARIANTS = ("mixed", "on_policy", "video_only", "joint", "threshold", "decay")
SPLITS = "val_splits"  # OUT's folder of per-modality validation files
Curves = dict[str, list[dict[str, Any]]]


def split_by_modality(val_files: Sequence[str], out: Path, data_root: str | None) -> tuple[str, ...]:
    """The validation files to use: each of `val_files` holding several modalities is replaced by one
    file per modality, written to `out/<its folder name>/<stem>_<modality>.jsonl` (video+image
    records count as video); single-modality files are kept as they are.

    Only `out` is written. Relative media paths are rewritten to resolve from the new folder, unless
    `data_root` is set (every file resolves against it then). Raises when two of the resulting
    files would log under the same validation name (`<folder>/<stem>`).
    """
    from evr1.data.records import read_records, write_records
    from evr1.data.samplers import modality_of

    result: list[str] = []
    for given in val_files:
        file = Path(given)
        by_modality: dict[str, list[Record]] = {}
        for record in read_records(file):
            by_modality.setdefault(modality_of(record.modality), []).append(record)
        if len(by_modality) < 2:
            result.append(given)
            continue
        folder = out / file.resolve().parent.name
        for modality in sorted(by_modality, key=("video", "image", "text").index):
            records = by_modality[modality]
            if data_root is None:
                records = [_rerooted(r, file.parent, folder) for r in records]
            target = folder / f"{file.stem}_{modality}{file.suffix}"
            write_records(records, target)
            result.append(str(target))
    names: dict[str, str] = {}
    for path in result:
        name = f"{Path(path).parent.name}/{Path(path).stem}"  # as evr1.runner.loop.datasets.val_splits names it
        if name in names:
            raise ConfigError(f"validation files {names[name]} and {path} would both log as val/{name}: rename one")
        names[name] = path
    return tuple(result)


def _rerooted(record: Record, source: Path, target: Path) -> Record:
    """`record` with its media paths relative to folder `source` made relative to folder `target`."""

    def moved(path: str) -> str:
        return path if Path(path).is_absolute() else os.path.relpath(source.resolve() / path, target.resolve())

    return record.model_copy(update={"media": [m.model_copy(update={"path": moved(m.path)}) for m in record.media]})


def finished_rows(run_dir: Path, exp: Any) -> list[dict[str, Any]] | None:
    """The metric rows of a complete run of `exp` in `run_dir` (same settings, new defaults aside), else None."""
    from evr1.run_dir import CONFIG_FILE, load_experiment, read_metrics

    if not (run_dir / CONFIG_FILE).is_file() or load_experiment(run_dir) != exp:
        return None
    rows = read_metrics(run_dir)
    done = bool(rows) and rows[-1]["step"] == exp.trainer.steps and (run_dir / FINAL_MODEL).is_dir()
    return rows if done else None


def run_variant(variant: str, out: Path, overrides: Sequence[str], *, reuse: bool = False) -> list[dict[str, Any]]:
    """Train `ablations:<variant>` (with `overrides`) from scratch in `out/<variant>`; its metric rows.

    Validation files holding several modalities are split into `out/val_splits` first (`split_by_modality`).
    With `reuse`, a finished run of the same config already there is read instead (runs are
    deterministic on CPU: retraining would repeat it).
    """
    from evr1.experiment import apply_overrides, build_experiment
    from evr1.experiment_files import load_config
    from evr1.run_dir import write_run_dir
    from evr1.runner.loop.datasets import ensure_synthetic
    from evr1.runner.loop.train import train

    cfg, source = load_config(f"ablations:{variant}")
    applied = apply_overrides(cfg, overrides)
    exp = build_experiment(cfg)
    if exp.data.synth is not None:
        ensure_synthetic(exp.data.synth)
    val = split_by_modality(exp.data.val, out / SPLITS, exp.data.data_root)
    if val != exp.data.val:  # an override like any other: run.json records it
        applied += apply_overrides(cfg, [f"data.val={val!r}"])
        exp = build_experiment(cfg)
    target = out / variant
    if reuse and (rows := finished_rows(target, exp)) is not None:
        print(f"{variant}: reusing the finished run in {target}")
        return rows
    if target.exists():
        shutil.rmtree(target)  # a fresh run: never resume or mix with an older one
    target.mkdir(parents=True)
    write_run_dir(target, exp, source, applied)
    return train(exp, target)


def val_keys(curves: Curves) -> list[str]:
    """The held-out accuracy metrics logged by any variant."""
    return sorted({k for rows in curves.values() for r in rows for k in r if k.startswith("val/") and k.endswith("/accuracy")})


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = [(int(r["step"]), float(r[key])) for r in rows if key in r]
    return [s for s, _ in points], [v for _, v in points]


def plot(curves: Curves, path: Path, title: str) -> Path:
    """One panel per validation file, one line per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = val_keys(curves)
    if not keys:
        raise ConfigError("no variant logged a validation accuracy (set trainer.val_every)")
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 3.8), dpi=120, squeeze=False)
    for ax, key in zip(axes[0], keys):
        for i, (variant, rows) in enumerate(curves.items()):  # dashed every other: identical runs stay visible
            ax.plot(*_series(rows, key), marker="o", markersize=3, linestyle="-" if i % 2 == 0 else "--", label=variant)
        ax.axhline(0.25, color="grey", linestyle=":", linewidth=1, label="chance (4 options)")
        ax.set(xlabel="step", ylabel="held-out accuracy", title=key.removeprefix("val/").removesuffix("/accuracy"), ylim=(-0.02, 1.02))
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def summary(curves: Curves) -> str:
    """A Markdown table per variant and validation file: first, last, best accuracy, the first step at
    >= 0.9, and the mean step time (n/a, and a note under the table, for a variant that logged none)."""
    lines = ["| variant | validation | step 0 | last | best | first step >= 0.9 | s/step |", "|---|---|---|---|---|---|---|"]
    untimed = False
    for variant, rows in curves.items():
        _, times = _series(rows, "timing/step")
        pace = f"{sum(times) / len(times):.2f}" if times else "n/a"
        untimed = untimed or not times
        for key in val_keys(curves):
            steps, values = _series(rows, key)
            if values:
                name = key.removeprefix("val/").removesuffix("/accuracy")
                reached = next((str(s) for s, v in zip(steps, values) if v >= 0.9), "never")
                lines.append(
                    f"| {variant} | {name} | {values[0]:.3f} | {values[-1]:.3f} (step {steps[-1]}) | {max(values):.3f}"
                    f" | {reached} | {pace} |"
                )
    if untimed:
        lines += ["", "s/step n/a: the variant's metrics hold no step time (no training step was logged)."]
    return "\n".join(lines) + "\n"


def run_ablations(
    out: Path,
    *,
    variants: Sequence[str] = VARIANTS,
    overrides: Sequence[str] = (),
    plot_path: Path | None = None,
    reuse: bool = False,
) -> Curves:
    """Train every variant, then write the figure (`plot_path`, default `out/ablations.png`) and `out/summary.md`."""
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ConfigError(f"unknown ablation variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    out = Path(out)
    curves = {v: run_variant(v, out, overrides, reuse=reuse) for v in variants}
    figure = plot(curves, plot_path or out / "ablations.png", f"ablations of the quickstart ({', '.join(overrides) or 'defaults'})")
    (out / "summary.md").write_text(summary(curves))
    print(f"figure: {figure}\nsummary: {out / 'summary.md'}")
    return curves


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evr1.cli.ablations", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the runs, the summary and (by default) the figure")
    parser.add_argument("--plot", type=Path, default=None, help="where to write the figure (default OUT/ablations.png)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {', '.join(VARIANTS)}")
    parser.add_argument("--steps", type=int, default=None, help="training steps per variant (trainer.steps)")
    parser.add_argument("--val-every", type=int, default=None, help="validation interval (trainer.val_every)")
    parser.add_argument("--reuse", action="store_true", help="read finished runs of the same config in OUT instead of retraining")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE", help="config override")
    args = parser.parse_args(argv)
    overrides = [f"trainer.steps={args.steps}"] if args.steps is not None else []
    overrides += [f"trainer.val_every={args.val_every}"] if args.val_every is not None else []
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    from evr1.errors import Evr1Error

    try:
        run_ablations(args.out, variants=variants, overrides=[*overrides, *args.overrides], plot_path=args.plot, reuse=args.reuse)
    except Evr1Error as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
    gc.freeze()  # as `evr1` does: no last collection of the torch heap on the way out
