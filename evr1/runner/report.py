"""The end-of-run report: a Markdown table and a PNG of reward and accuracy per step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPORT_FILE = "report.md"
PLOT_FILE = "curves.png"


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
    return [p[0] for p in points], [float(p[1]) for p in points]


def curve_keys(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Training score/accuracy and every validation accuracy that was logged."""
    keys = {k for r in rows for k in r}
    train = [k for k in ("reward/score",) if k in keys]
    train += sorted(k for k in keys if k.startswith("reward/") and k.endswith("/accuracy"))
    return train + sorted(k for k in keys if k.startswith("val/") and k.endswith("/accuracy"))


def plot(run_dir: Path, rows: Sequence[dict[str, Any]], title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for key in curve_keys(rows):
        steps, values = _series(rows, key)
        ax.plot(steps, values, marker="o" if key.startswith("val/") else None, markersize=3, label=key)
    ax.set(xlabel="step", ylabel="value", title=title, ylim=(-0.02, 1.02))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = Path(run_dir) / PLOT_FILE
    fig.savefig(path)
    plt.close(fig)
    return path


def _total(rows: Sequence[dict[str, Any]], key: str) -> int:
    return int(sum(_series(rows, key)[1]))


def reward_errors(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Report lines on the training rewards that failed (scored 0), by problem type; none when all scored."""
    errors = _total(rows, "reward/errors")
    if not errors:
        return []
    types = sorted({k.split("/")[1] for r in rows for k in r if k.startswith("reward/") and k.count("/") == 2})
    counts = {t: (_total(rows, f"reward/{t}/errors"), _total(rows, f"reward/{t}/count")) for t in types}
    scored = sum(n for _, n in counts.values())
    share = f" ({errors / scored:.0%})" if scored else ""
    by_type = ", ".join(f"{t} {e} of {n}" for t, (e, n) in counts.items() if e)
    timeouts = _total(rows, "reward/timeouts")
    timed = f", {timeouts} of them timeouts" if timeouts else ""
    return [
        f"**Reward errors: {errors} of {scored or '?'} training rewards{share} failed and scored 0{timed}** ({by_type}).",
        ("A reference answer its reward cannot read fails every sample of its record: run `evr1 data check` on the"
         " training data; each error is logged with its sample id."),
    ]


def write_report(run_dir: Path, rows: Sequence[dict[str, Any]], title: str) -> Path:
    """`report.md`: reward errors (if any), first, last and best value of each curve, the mean step time, and the plot."""
    errors = reward_errors(rows)
    lines = [f"# {title}", "", *errors, *([""] if errors else []), "| metric | first | last | best |", "|---|---|---|---|"]
    for key in curve_keys(rows):
        _, values = _series(rows, key)
        if values:
            lines.append(f"| {key} | {values[0]:.3f} | {values[-1]:.3f} | {max(values):.3f} |")
    _, step_times = _series(rows, "timing/step")
    if step_times:
        lines += ["", f"{len(step_times)} steps, {sum(step_times) / len(step_times):.2f} s/step on average."]
    if rows:
        lines += ["", f"![curves]({plot(run_dir, rows, title).name})"]
    path = Path(run_dir) / REPORT_FILE
    path.write_text("\n".join(lines) + "\n")
    return path
