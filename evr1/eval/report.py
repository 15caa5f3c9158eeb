"""Run-level reports: `results.json`, `results.md` (a table per benchmark and sub-category), compare.

Each benchmark keeps the settings it was evaluated under; the run's `settings` are those common to all of them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evr1.errors import Evr1Error

COUNTERS = ("n: samples; failed: no answer scored (preparation, generation or scoring failed, or no response given);"
            " unparsed: answered without an answer of the problem type's form. Both score 0 and count in n.")


def _settings_lines(settings: Mapping[str, Any]) -> list[str]:
    return [f"- {key}: `{json.dumps(value, sort_keys=True, default=str)}`" for key, value in sorted(settings.items())]


def common_settings(benchmarks: Mapping[str, Any]) -> dict[str, Any]:
    """The settings every benchmark of a run was evaluated under (each keeps all of its own in `settings`)."""
    own = [r.get("settings", {}) for r in benchmarks.values()]
    if not own:
        return {}
    return {k: v for k, v in own[0].items() if k != "benchmark" and all(k in s and s[k] == v for s in own[1:])}


def markdown(results: Mapping[str, Any]) -> str:
    """A Markdown report: the common settings, a summary table, then each benchmark with its own settings (those not
    common to all), the notes of its loading, its errors and breakdowns."""
    common = results["settings"]
    lines = ["# Evaluation results", "", "## Settings (of every benchmark)", "", *_settings_lines(common), "",
             "## Summary", "", COUNTERS, "", "| benchmark | score | metric | n | failed | unparsed |", "|---|---:|---|---:|---:|---:|"]
    benches = results["benchmarks"]
    for name, r in benches.items():
        lines.append(f"| {r['title']} | {r['score']:.2f} | {r['metric']} | {r['n']} | {r['failed']} | {r['unparsed']} |")
    for name, r in benches.items():
        lines += ["", f"## {r['title']} (`{name}`)", ""]
        own = {k: v for k, v in r.get("settings", {}).items() if k != "benchmark" and k not in common}
        if own:
            lines += ["Settings of this benchmark:", "", *_settings_lines(own), ""]
        lines += [f"- note: {note}" for note in r.get("notes", [])]
        lines += [f"- failed: {error}" for error in r.get("errors", [])]
        if r.get("notes") or r.get("errors"):
            lines.append("")
        lines += ["| metric | value |", "|---|---:|", *(f"| {k} | {v:.2f} |" for k, v in r["metrics"].items())]
        for key, cats in r["breakdowns"].items():
            lines += ["", f"| {key} | score | n |", "|---|---:|---:|"]
            lines += [f"| {label} | {c['score']:.2f} | {c['n']} |" for label, c in cats.items()]
    return "\n".join(lines) + "\n"


def write_run(run_dir: str | Path, benchmarks: Mapping[str, Any]) -> dict[str, Any]:
    """Merge these benchmark results into the run's `results.json` (its `settings`: those common to all of its
    benchmarks) and rewrite `results.md`."""
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    previous = json.loads(path.read_text()) if path.exists() else {"benchmarks": {}}
    merged = {**previous.get("benchmarks", {}), **benchmarks}
    results = {"settings": common_settings(merged), "benchmarks": merged}
    path.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    (run_dir / "results.md").write_text(markdown(results), encoding="utf-8")
    return results


def load_results(run: str | Path) -> dict[str, Any]:
    """A run's results (`RUN/results.json`, or the file itself)."""
    path = Path(run)
    path = path / "results.json" if path.is_dir() else path
    if not path.is_file():
        raise Evr1Error(f"{run}: no results.json found (is it an `evr1 eval` output directory?)")
    return json.loads(path.read_text(encoding="utf-8"))


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str, float | None, float | None]]:
    """(benchmark, metric, value in A, value in B) for the headline score and every metric of either run."""
    rows = []
    for name in sorted(set(a["benchmarks"]) | set(b["benchmarks"])):
        ra, rb = a["benchmarks"].get(name, {}), b["benchmarks"].get(name, {})
        rows.append((name, "score", ra.get("score"), rb.get("score")))
        for metric in sorted(set(ra.get("metrics", {})) | set(rb.get("metrics", {}))):
            rows.append((name, metric, ra.get("metrics", {}).get(metric), rb.get("metrics", {}).get(metric)))
    return rows


def compare_table(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """A Markdown table of `compare` with deltas (B - A)."""
    lines = ["| benchmark | metric | A | B | delta |", "|---|---|---:|---:|---:|"]
    for name, metric, va, vb in compare(a, b):
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        delta = "-" if va is None or vb is None else f"{vb - va:+.2f}"
        lines.append(f"| {name} | {metric} | {fmt(va)} | {fmt(vb)} | {delta} |")
    return "\n".join(lines)
