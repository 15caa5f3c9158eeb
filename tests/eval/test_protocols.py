"""Both protocols on every evaluation: the headline chosen by EvalSpec.protocol / --protocol, both blocks in
results.json and results.md, compare under either (old results files: strict only), the lmms-eval path official."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_inproc import evr1 as run_evr1
from pydantic import ValidationError

from evr1.errors import Evr1Error
from evr1.eval.api import evaluate
from evr1.eval.lmms import scoring
from evr1.eval.protocols import BLOCK_KEYS, protocol_block
from evr1.eval.report import compare_table, load_results
from evr1.eval.responders import ScriptedResponder
from evr1.specs import EvalSpec

from .benchmarks.test_vsibench import _vsi_table

# MVBench fixture (expected.py): action_sequence 1 of 2 right, object_shuffle 2 of 3 (one answer unparsed).
MVBENCH = ["A", "B", "B", "(A)", "Z"]
OFFICIAL, STRICT = 60.0, 100 * (1 / 2 + 2 / 3) / 2


def _answers(bench_root: Path) -> dict[str, str]:
    from evr1.registry import BENCHMARKS

    return {r.id: text for r, text in zip(BENCHMARKS.get("mvbench").load(bench_root), MVBENCH)}


@pytest.mark.parametrize(("protocol", "headline"), [("official", OFFICIAL), ("strict", STRICT)])
def test_headline_is_the_chosen_protocol_and_both_blocks_are_kept(bench_root: Path, tmp_path: Path, protocol: str,
                                                                  headline: float) -> None:
    results = evaluate(EvalSpec(protocol=protocol), ScriptedResponder(_answers(bench_root)), tmp_path,
                       benchmarks=["mvbench"], data_root=bench_root)
    got = results["benchmarks"]["mvbench"]
    assert got["protocol"] == protocol and got["score"] == pytest.approx(headline)
    assert got["protocols"]["official"]["score"] == pytest.approx(OFFICIAL)
    assert got["protocols"]["strict"]["score"] == pytest.approx(STRICT)
    for name, blk in got["protocols"].items():
        assert set(blk) == set(BLOCK_KEYS), name
        assert (blk["n"], blk["failed"], blk["unparsed"], blk["dropped"]) == (5, 0, 1, 0), name
    assert got["protocols"]["official"]["metrics"] == pytest.approx({"Avg": 60.0})
    on_disk = json.loads((tmp_path / "mvbench" / "results.json").read_text())
    assert on_disk["protocols"]["official"]["score"] == pytest.approx(OFFICIAL)
    md = (tmp_path / "results.md").read_text()
    assert f"| MVBench | {protocol} | 60.00 | 58.33 |" in md
    assert "| object_shuffle | 66.67 | 3 | 66.67 | 3 |" in md and "| Avg | 60.00 | n/a |" in md


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(ValidationError, match="protocol"):
        EvalSpec(protocol="leaderboard")


def _run(bench_root: Path, out: Path, answers: dict[str, str]) -> dict:
    return evaluate(EvalSpec(), ScriptedResponder(answers), out, benchmarks=["mvbench"], data_root=bench_root)


def test_compare_under_either_protocol_and_old_results_files(bench_root: Path, tmp_path: Path) -> None:
    answers = _answers(bench_root)
    _run(bench_root, tmp_path / "a", answers)
    _run(bench_root, tmp_path / "b", {**answers, next(iter(answers)): "B"})  # action_sequence's right answer made wrong
    a, b = load_results(tmp_path / "a"), load_results(tmp_path / "b")
    official = compare_table(a, b)
    assert "protocol: official" in official and "| mvbench | score | 60.00 | 40.00 | -20.00 |" in official
    strict = compare_table(a, b, "strict")
    assert "| mvbench | score | 58.33 | 33.33 | -25.00 |" in strict
    # a results.json written before protocols: its numbers are strict ones
    old = {**a, "benchmarks": {"mvbench": {k: v for k, v in a["benchmarks"]["mvbench"].items()
                                           if k not in ("protocols", "protocol", "dropped")}}}
    old["benchmarks"]["mvbench"].update(score=STRICT, metrics={"task_mean": STRICT})
    assert "| mvbench | score | 58.33 | 33.33 | -25.00 |" in compare_table(old, b, "strict")
    with pytest.raises(Evr1Error, match=r"old/results.json: mvbench was scored before .* --protocol strict"):
        compare_table(old, b, "official", ("old/results.json", "b"))
    with pytest.raises(Evr1Error, match="unknown protocol"):
        protocol_block(a["benchmarks"]["mvbench"], "leaderboard", "a")  # type: ignore[arg-type]


def test_cli_run_official_with_strict_beside_it_and_compare_strict(bench_root: Path, tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": i, "response": t}) + "\n" for i, t in _answers(bench_root).items()))

    def evr1(*args: str) -> subprocess.CompletedProcess[str]:
        return run_evr1("eval", *args, cwd=tmp_path)

    done = evr1("run", "--responses", str(answers), "--benchmarks", "mvbench", "--data-root", str(bench_root),
                "--out", str(tmp_path / "o"), "--protocol", "official")
    assert done.returncode == 0, done.stderr
    assert "mvbench: 60.00 official (Avg: correct / total over all items" in done.stdout
    assert "; strict 58.33 (n=5)" in done.stdout
    diff = evr1("compare", str(tmp_path / "o"), str(tmp_path / "o"), "--protocol", "strict")
    assert diff.returncode == 0, diff.stderr
    assert "| mvbench | score | 58.33 | 58.33 | +0.00 |" in diff.stdout


def test_lmms_eval_path_aggregates_the_official_protocol() -> None:
    rows = [{**r, "benchmark": "vsibench"} for r in _vsi_table()]
    from evr1.eval.protocols import block
    from evr1.registry import BENCHMARKS

    official, strict = (block(BENCHMARKS.get("vsibench"), rows, p)["score"] for p in ("official", "strict"))
    assert scoring.aggregate(rows) == pytest.approx(official) and official != pytest.approx(strict)


def test_a_compare_cell_without_a_number_says_why() -> None:
    def result(score: float | None, metrics: dict[str, float]) -> dict:
        return {"protocols": {"official": {"score": score, "metrics": metrics}}}

    a = {"benchmarks": {"x": result(50.0, {"m1": 1.0})}}
    b = {"benchmarks": {"x": result(None, {}), "y": result(20.0, {})}}  # x unavailable officially; y not run in a
    table = compare_table(a, b, "official", ("runs/a", "runs/b")).splitlines()
    assert table[0] == "protocol: official; A: runs/a, B: runs/b"
    assert table[4:7] == ["| x | score | 50.00 | n/a | n/a |", "| x | m1 | 1.00 | n/a | n/a |",
                          "| y | score | not run | 20.00 | n/a |"]
    assert table[-1].startswith("not run: the run did not evaluate the benchmark; n/a: the run holds no such number")
