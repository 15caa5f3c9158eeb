"""The end-of-run report: a Markdown table and a PNG of reward and accuracy per step, and the engine–learner mismatch.

The training figures are those of the sampled (online) responses; curated offline rows have their
own (`reward/offline_score`). Reward errors and records dropped for unloadable media come first.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evr1.runner.loop.data_failures import FAILURES_FILE
from evr1.runner.loop.validation import accuracy_notes, type_of_key

REPORT_FILE = "report.md"
PLOT_FILE = "curves.png"


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
    return [p[0] for p in points], [float(p[1]) for p in points]


def curve_keys(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The sampled responses' score and per-type accuracies, the curated rows' score, and every validation
    accuracy that was logged, per problem type too where a split holds several (`reward/score`, every row's mean,
    only for runs that logged no online score)."""
    keys = {k for r in rows for k in r}
    train = [k for k in ("reward/online_score",) if k in keys] or [k for k in ("reward/score",) if k in keys]
    train += sorted(k for k in keys if k.startswith("reward/") and k.endswith("/accuracy") and k.count("/") == 2)
    train += [k for k in ("reward/offline_score",) if k in keys]
    val = [k for k in keys if k.startswith("val/") and k.endswith("/accuracy")]
    splits = Counter(k.rsplit("/", 2)[0] for k in val if type_of_key(k) is not None)  # split -> its problem types
    return train + sorted(k for k in val if type_of_key(k) is None or splits[k.rsplit("/", 2)[0]] > 1)


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
    offline = _total(rows, "reward/offline_errors")
    curated = f" {offline} curated (offline) rows failed too." if offline else ""
    return [
        f"**Reward errors: {errors} of {scored or '?'} training rewards{share} failed and scored 0{timed}** ({by_type}).{curated}",
        ("A reference answer its reward cannot read fails every sample of its record: run `evr1 data check` on the"
         " training data; each error is logged with its sample id."),
    ]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def data_failures(run_dir: Path, rows: Sequence[dict[str, Any]]) -> list[str]:
    """Report lines on the records whose media could not be loaded (from `data_failures.jsonl`); none when none failed."""
    path = Path(run_dir) / FAILURES_FILE
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    by_split = Counter(json.loads(line)["split"] for line in lines if line)
    if not by_split:
        return []
    train = by_split.pop("train", 0)
    dropped = _total(rows, "data/dropped_records")
    parts = [f"{_count(train, 'training record')} (dropped {_count(dropped, 'time')} from a step's batch)"] if train else []
    parts += [f"{_count(n, 'record')} of {split} (counted as wrong)" for split, n in sorted(by_split.items())]
    return [
        f"**Data failures: the media of {', '.join(parts)} could not be loaded.**",
        (f"Each is listed once in `{FAILURES_FILE}` (records file and line, media file, reason) and skipped for the rest"
         " of the run: run `evr1 data check` on the data to find every missing or unreadable file."),
    ]


def mismatch_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per engine: its mismatch with the learner, averaged over the steps that measured it."""
    engines = sorted({k.split("/")[1] for r in rows for k in r if k.startswith("mismatch/") and k.endswith("/k3")
                      and k.count("/") == 2})  # fmt: skip
    lines = []
    for engine in engines:
        _, k3 = _series(rows, f"mismatch/{engine}/k3")
        _, mean = _series(rows, f"mismatch/{engine}/abs_diff_mean")
        _, top = _series(rows, f"mismatch/{engine}/abs_diff_max")
        lines.append(
            f"Engine-learner mismatch ({engine}, {len(k3)} steps): mean per-token k3 {sum(k3) / len(k3):.3g}, "
            f"mean |log p difference| {sum(mean) / max(len(mean), 1):.3g}, largest {max(top, default=0.0):.3g}."
        )
    return lines


def write_report(run_dir: Path, rows: Sequence[dict[str, Any]], title: str) -> Path:
    """`report.md`: reward errors and data failures (if any), first, last and best value of each curve, what
    accuracy means for the problem types whose accuracy is no share of right answers, the mean step time, and
    the plot."""
    errors = [*reward_errors(rows), *data_failures(run_dir, rows)]
    lines = [f"# {title}", "", *errors, *([""] if errors else []), "| metric | first | last | best |", "|---|---|---|---|"]
    for key in curve_keys(rows):
        _, values = _series(rows, key)
        if values:
            lines.append(f"| {key} | {values[0]:.3f} | {values[-1]:.3f} | {max(values):.3f} |")
    if notes := accuracy_notes(sorted({k for r in rows for k in r})):
        lines += ["", " ".join(notes)]
    _, step_times = _series(rows, "timing/step")
    if step_times:
        lines += ["", f"{len(step_times)} steps, {sum(step_times) / len(step_times):.2f} s/step on average."]
    mismatch = mismatch_lines(rows)
    if mismatch:
        lines += ["", *mismatch]
    if rows:
        lines += ["", f"![curves]({plot(run_dir, rows, title).name})"]
    path = Path(run_dir) / REPORT_FILE
    path.write_text("\n".join(lines) + "\n")
    return path
