"""Run-level reports: `results.json`, `results.md` (a table per benchmark and sub-category, both protocols side by
side), compare (under one protocol).

Each benchmark keeps the settings it was evaluated under; the run's `settings` are those common to all of them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evr1.errors import Evr1Error
from evr1.eval.protocols import Protocol, protocol_block

COUNTERS = ("n: samples counted; failed: no answer scored (preparation, generation or scoring failed, or no response given);"
            " unparsed: answered without an answer of the problem type's form; dropped: left out of the denominators."
            " strict: evr1's rules (failed and unparsed score 0 and count in n, nothing dropped); official: the benchmark"
            " authors' scorer (what it drops or counts: docs/benchmarks.md). n/a: no such number (a protocol that"
            " cannot score the benchmark here, which its notes say why; a metric that one protocol alone reports).")
MISSING = "n/a"  # a number the results do not hold: never a blank cell, which reads as a gap in the data
NOT_RUN = "not run"  # compare: the run did not evaluate the benchmark


def _settings_lines(settings: Mapping[str, Any]) -> list[str]:
    return [f"- {key}: `{json.dumps(value, sort_keys=True, default=str)}`" for key, value in sorted(settings.items())]


def common_settings(benchmarks: Mapping[str, Any]) -> dict[str, Any]:
    """The settings every benchmark of a run was evaluated under (each keeps all of its own in `settings`)."""
    own = [r.get("settings", {}) for r in benchmarks.values()]
    if not own:
        return {}
    return {k: v for k, v in own[0].items() if k != "benchmark" and all(k in s and s[k] == v for s in own[1:])}


def _blocks(result: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A benchmark result's protocol blocks; a result written before protocols is its strict block alone."""
    return dict(result["protocols"]) if "protocols" in result else {"strict": result}


def _fmt(value: Any) -> str:
    return MISSING if value is None else f"{value:.2f}"


def _metric_rows(blocks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    names = list(dict.fromkeys(m for b in blocks.values() for m in b["metrics"]))
    head = " | ".join(blocks)
    lines = [f"| metric | {head} |", "|---|" + "---:|" * len(blocks)]
    return lines + [f"| {m} | " + " | ".join(_fmt(b["metrics"].get(m)) for b in blocks.values()) + " |" for m in names]


def _breakdown_rows(blocks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for key in dict.fromkeys(k for b in blocks.values() for k in b["breakdowns"]):
        tables = {p: b["breakdowns"].get(key, {}) for p, b in blocks.items()}
        labels = list(dict.fromkeys(label for t in tables.values() for label in t))
        lines += ["", f"| {key} | " + " | ".join(f"{p} | n" for p in tables) + " |", "|---|" + "---:|---:|" * len(tables)]
        for label in labels:
            cells = [(t.get(label) or {}) for t in tables.values()]
            lines.append(f"| {label} | " + " | ".join(f"{_fmt(c.get('score'))} | {c.get('n', MISSING)}" for c in cells) + " |")
    return lines


def markdown(results: Mapping[str, Any]) -> str:
    """A Markdown report: the common settings, a summary table (both protocols side by side, the headline protocol's
    metric), then each benchmark with its own settings (those not common to all), the notes of its loading, its
    errors, its metrics and breakdowns under both protocols."""
    common = results["settings"]
    lines = ["# Evaluation results", "", "## Settings (of every benchmark)", "", *_settings_lines(common), "",
             "## Summary", "", COUNTERS, "",
             ("| benchmark | headline | official | strict | metric (headline) | n (official / strict) | failed"
              " | unparsed (official / strict) | dropped (official) |"),
             "|---|---|---:|---:|---|---:|---:|---:|---:|"]
    benches = results["benchmarks"]
    for name, r in benches.items():
        b = _blocks(r)
        off, st = b.get("official", {}), b.get("strict", {})
        lines.append(f"| {r['title']} | {r.get('protocol', 'strict')} | {_fmt(off.get('score'))} | {_fmt(st.get('score'))}"
                     f" | {r['metric']} | {off.get('n', MISSING)} / {st.get('n', MISSING)} | {r['failed']}"
                     f" | {off.get('unparsed', MISSING)} / {st.get('unparsed', MISSING)} | {off.get('dropped', MISSING)} |")
    for name, r in benches.items():
        lines += ["", f"## {r['title']} (`{name}`)", ""]
        own = {k: v for k, v in r.get("settings", {}).items() if k != "benchmark" and k not in common}
        if own:
            lines += ["Settings of this benchmark:", "", *_settings_lines(own), ""]
        b = _blocks(r)
        lines += [f"- {p}: {blk['metric']}" for p, blk in b.items() if "metric" in blk]
        lines += [f"- note: {note}" for note in r.get("notes", [])]
        lines += [f"- failed: {error}" for error in r.get("errors", [])]
        lines.append("")
        lines += _metric_rows(b)
        lines += _breakdown_rows(b)
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


def compare(a: Mapping[str, Any], b: Mapping[str, Any], protocol: Protocol = "official",
            names: tuple[str, str] = ("A", "B")) -> list[tuple[str, str, float | None, float | None]]:
    """(benchmark, metric, value in A, value in B) for the headline score and every metric of either run under
    `protocol` (`protocol_block`: a run scored before protocols has strict numbers only; `names` name the runs)."""
    rows = []
    for name in sorted(set(a["benchmarks"]) | set(b["benchmarks"])):
        ra, rb = (protocol_block(run["benchmarks"][name], protocol, where) if name in run["benchmarks"] else {}
                  for run, where in zip((a, b), names))
        rows.append((name, "score", ra.get("score"), rb.get("score")))
        for metric in sorted(set(ra.get("metrics", {})) | set(rb.get("metrics", {}))):
            rows.append((name, metric, ra.get("metrics", {}).get(metric), rb.get("metrics", {}).get(metric)))
    return rows


def compare_table(a: Mapping[str, Any], b: Mapping[str, Any], protocol: Protocol = "official",
                  names: tuple[str, str] = ("A", "B")) -> str:
    """A Markdown table of `compare` under `protocol` with deltas (B - A); a cell without a number says why (`NOT_RUN`,
    `MISSING`), and a legend under the table says what each means."""
    lines = [f"protocol: {protocol}; A: {names[0]}, B: {names[1]}", "", "| benchmark | metric | A | B | delta |",
             "|---|---|---:|---:|---:|"]
    for name, metric, va, vb in compare(a, b, protocol, names):
        cells = [_fmt(v) if name in run["benchmarks"] else NOT_RUN for v, run in ((va, a), (vb, b))]
        delta = MISSING if va is None or vb is None else f"{vb - va:+.2f}"
        lines.append(f"| {name} | {metric} | {cells[0]} | {cells[1]} | {delta} |")
    legend = (f"{NOT_RUN}: the run did not evaluate the benchmark; {MISSING}: the run holds no such number under this"
              " protocol (a metric of the other run only, or a protocol that could not score it: see its results.md);"
              f" delta: B - A, {MISSING} unless both have a number.")
    lines += ["", legend]
    return "\n".join(lines)
