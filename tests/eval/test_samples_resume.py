"""Robustness of the evaluation loop: failed samples retried on resume, one bad sample failing alone, a broken
engine stopping the run, the judge in the settings, each benchmark's own settings and load notes in the reports,
and counters that mean what they say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.data.records import Record
from evr1.errors import Evr1Error
from evr1.eval.api import evaluate
from evr1.eval.responders import ScriptedResponder
from evr1.eval.samples import RunOptions, parsed_answer, read_samples, run_samples
from evr1.registry import BENCHMARKS
from evr1.rewards import RewardRouter
from evr1.specs import EvalSpec, JudgeSpec, RewardSpec, VideoSpec

from .verdict_judge import verdict_requests


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class FailsOn(ScriptedResponder):
    """Raises (as an engine running out of memory would) whenever a batch holds one of `bad`."""

    def __init__(self, responses: dict[str, str], bad: set[str]) -> None:
        super().__init__(responses)
        self.bad, self.calls = bad, 0

    def respond(self, batch):  # type: ignore[no-untyped-def]
        self.calls += 1
        if any(p.record.id in self.bad for p in batch):
            raise RuntimeError("CUDA out of memory")
        return super().respond(batch)


def test_failed_scoring_is_retried_on_resume_without_generating(bench_root: Path, tmp_path: Path, judge) -> None:
    judge.reply, judge.fail_first = "correct", 1  # down for the first run's one request
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j", retries=0), protocol="strict")  # evr1's judge
    answers = {"mmvu/mu1": "B", "mmvu/mu2": "combustion"}
    first = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]["mmvu"]
    assert (first["score"], first["failed"]) == (50.0, 1) and "mmvu/mu2: " in first["errors"][0]
    again = ScriptedResponder(answers)
    second = evaluate(spec, again, tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]["mmvu"]
    assert (second["score"], second["failed"], second["errors"]) == (100.0, 0, [])
    assert again.asked == []  # scored again on the stored response, not generated again
    assert len(verdict_requests(judge)) == 2  # the failed request, then the retry
    assert [r["id"] for r in _rows(tmp_path / "mmvu" / "samples.jsonl")] == ["mmvu/mu1", "mmvu/mu2"]


def test_media_error_fixed_later_is_generated_again(bench_root: Path, tmp_path: Path) -> None:
    class Broken(ScriptedResponder):
        def prepare(self, record):  # type: ignore[no-untyped-def]
            prepared = super().prepare(record)
            prepared.error = "MediaError: corrupt video" if record.id == "minerva/mi1" else None
            return prepared

    answers = {"minerva/mi1": "D", "minerva/mi2": "B"}  # mi1 right, mi2 wrong
    first = evaluate(EvalSpec(), Broken(answers), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    assert first["benchmarks"]["minerva"]["failed"] == 1
    fixed = ScriptedResponder(answers)
    second = evaluate(EvalSpec(), fixed, tmp_path, benchmarks=["minerva"], data_root=bench_root)["benchmarks"]["minerva"]
    assert fixed.asked == ["minerva/mi1"]
    assert (second["score"], second["n"], second["failed"]) == (50.0, 2, 0)
    rows = _rows(tmp_path / "minerva" / "samples.jsonl")
    assert [(r["id"], r["score"], r["error"]) for r in rows] == [("minerva/mi1", 1.0, None), ("minerva/mi2", 0.0, None)]


def test_one_failing_sample_fails_alone_and_is_retried(bench_root: Path, tmp_path: Path) -> None:
    answers = {"videomme/001-1": "A", "videomme/001-2": "B", "videomme/002-1": "B"}  # right, wrong, right
    oom = FailsOn(answers, bad={"videomme/001-2"})
    spec = EvalSpec(batch_size=3, protocol="strict")
    got = evaluate(spec, oom, tmp_path, benchmarks=["videomme"], data_root=bench_root)["benchmarks"]["videomme"]
    assert oom.calls == 4  # the batch of 3, then each sample alone
    assert oom.asked == ["videomme/001-1", "videomme/002-1"]
    assert (got["score"], got["n"], got["failed"], got["unparsed"]) == (pytest.approx(200 / 3), 3, 1, 0)
    official = got["protocols"]["official"]  # Video-MME's script drops the answer without a letter
    assert (official["score"], official["n"], official["failed"], official["dropped"]) == (100.0, 2, 0, 1)
    assert got["errors"] == ["videomme/001-2: generation failed: RuntimeError: CUDA out of memory"]
    assert (tmp_path / "results.json").exists()
    retry = ScriptedResponder(answers)
    again = evaluate(spec, retry, tmp_path, benchmarks=["videomme"], data_root=bench_root)["benchmarks"]["videomme"]
    assert retry.asked == ["videomme/001-2"]
    assert (again["score"], again["failed"]) == (pytest.approx(200 / 3), 0)
    assert [r["id"] for r in _rows(tmp_path / "videomme" / "samples.jsonl")] == list(answers)


def test_a_broken_engine_stops_the_run(bench_root: Path, tmp_path: Path) -> None:
    bench = BENCHMARKS.get("videomme_v2")
    records = bench.load(bench_root)  # 8 records
    dead = FailsOn({}, bad={r.id for r in records})
    router = RewardRouter(RewardSpec(format="none"))
    samples = tmp_path / "samples.jsonl"
    with pytest.raises(Evr1Error, match=r"generation failed for 4 samples in a row \(last: videomme_v2/g1-4: generation"
                                        r" failed: RuntimeError: CUDA out of memory\); the engine looks broken"):
        run_samples(bench, records, dead, samples, "sid", router, RunOptions(batch_size=2, max_failures_in_row=3))
    assert [r["id"] for r in _rows(samples)] == [f"videomme_v2/g1-{i}" for i in range(1, 5)]  # the rows so far stay
    # Failures that are not in a row do not stop it: every other sample fails, 4 of 8.
    odd = FailsOn({}, bad={r.id for r in records[::2]})
    rows = run_samples(bench, records, odd, tmp_path / "odd.jsonl", "sid", router, RunOptions(batch_size=2, max_failures_in_row=3))
    assert sum(bool(r["error"]) for r in rows.values()) == 4 and len(rows) == 8


def test_judge_settings_are_recorded_and_checked(bench_root: Path, tmp_path: Path, judge) -> None:
    judge.reply = "correct"
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j1"), protocol="strict")  # evr1's verdicts
    answers = {"mmvu/mu1": "B", "mmvu/mu2": "combustion", "minerva/mi1": "D"}
    results = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu", "minerva"], data_root=bench_root)
    assert results["benchmarks"]["mmvu"]["settings"]["judge"] == {"base_url": judge.url, "model": "j1", "max_tokens": 16}
    assert "judge" not in results["benchmarks"]["minerva"]["settings"] and "judge" not in results["settings"]
    md = (tmp_path / "results.md").read_text()
    mmvu_section = md.split("## MMVU")[1].split("\n## ")[0]
    assert f'- judge: `{{"base_url": "{judge.url}", "max_tokens": 16, "model": "j1"}}`' in mmvu_section
    slower = spec.model_copy(update={"judge": spec.judge.model_copy(update={"retries": 5, "timeout_s": 60.0})})
    evaluate(slower, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)  # same verdicts
    assert results["benchmarks"]["mmvu"]["score"] == 100.0
    judge.reply = "incorrect"
    other = spec.model_copy(update={"judge": spec.judge.model_copy(update={"model": "j2"})})
    asked = ScriptedResponder(answers)
    again = evaluate(other, asked, tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]["mmvu"]
    assert asked.asked == []  # another judge scores the stored responses again; nothing is generated
    assert again["score"] == 50.0 and again["settings"]["judge"]["model"] == "j2"  # mu1 (MC) right, mu2 now judged wrong
    assert len(_rows(tmp_path / "mmvu" / "samples.jsonl")) == 2  # one row per id


def test_a_limited_run_then_the_full_run_resume_into_one_folder(bench_root: Path, tmp_path: Path, judge) -> None:
    """MMVU's first item is multiple choice, its second open-ended: whether a judge is needed must not change
    the settings the first item's response was made under (the official scorer judges multiple choice too)."""
    judge.reply = "correct"
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j"), protocol="strict")
    answers = {"mmvu/mu1": "B", "mmvu/mu2": "combustion"}
    first = evaluate(spec.model_copy(update={"limit": 1}), ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"],
                     data_root=bench_root)["benchmarks"]["mmvu"]
    assert first["n"] == 1 and first["settings"]["judge"]["model"] == "j"  # the official judge step needs it
    asked = ScriptedResponder(answers)
    full = evaluate(spec, asked, tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]["mmvu"]
    assert asked.asked == ["mmvu/mu2"] and full["n"] == 2 and full["score"] == 100.0


class DropsLast(ScriptedResponder):
    """A broken responder: one answer short for every batch of more than one."""

    def respond(self, batch):
        answers = super().respond(batch)
        return answers[:-1] if len(answers) > 1 else answers


def test_a_short_answer_list_fails_no_sample_silently(bench_root: Path, tmp_path: Path) -> None:
    bench = BENCHMARKS.get("minerva")
    records = bench.load(bench_root)
    router = RewardRouter(RewardSpec())
    answers = {r.id: "A" for r in records}
    rows = run_samples(bench, records, DropsLast(answers), tmp_path / "s.jsonl", "sid", router, RunOptions(batch_size=2))
    assert all(r["response"] == "A" and not r["error"] for r in rows.values())  # retried one at a time, each answered


def test_each_benchmark_keeps_its_own_settings_in_the_reports(bench_root: Path, tmp_path: Path) -> None:
    evaluate(EvalSpec(video=VideoSpec(fps=1.0)), ScriptedResponder({}), tmp_path, benchmarks=["videomme"], data_root=bench_root)
    evaluate(EvalSpec(video=VideoSpec(fps=4.0)), ScriptedResponder({}), tmp_path, benchmarks=["mvbench"], data_root=bench_root)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["benchmarks"]["videomme"]["settings"]["video"]["fps"] == 1.0
    assert results["benchmarks"]["mvbench"]["settings"]["video"]["fps"] == 4.0
    assert "video" not in results["settings"] and results["settings"]["prompt_mode"] == "direct"  # common: kept on top
    sections = {s.split("\n")[0]: s for s in (tmp_path / "results.md").read_text().split("\n## ")}
    assert '"fps": 1.0' in sections["Video-MME (`videomme`)"] and '"fps": 4.0' not in sections["Video-MME (`videomme`)"]
    assert '"fps": 4.0' in sections["MVBench (`mvbench`)"] and '"fps": 1.0' not in sections["MVBench (`mvbench`)"]
    assert '"fps"' not in sections["Settings (of every benchmark)"] and "prompt_mode" in sections["Settings (of every benchmark)"]


def test_load_notes_reach_the_reports(bench_root: Path, tmp_path: Path) -> None:
    results = evaluate(EvalSpec(), ScriptedResponder({}), tmp_path, benchmarks=["mlvu", "minerva"], data_root=bench_root)
    notes = results["benchmarks"]["mlvu"]["notes"]
    assert len(notes) == 1 and notes[0].startswith("MLVU 8_sub_scene.json: skipping its open-ended")
    assert results["benchmarks"]["minerva"]["notes"] == []
    assert json.loads((tmp_path / "mlvu" / "results.json").read_text())["notes"] == notes
    assert f"- note: {notes[0]}" in (tmp_path / "results.md").read_text()
    assert BENCHMARKS.get("mlvu").load_noted(bench_root)[1] == notes  # and again on a second load


def _record(problem_type: str, answer: object, **extra: object) -> Record:
    return Record(id="r", problem="?", problem_type=problem_type, answer=answer, **extra)


@pytest.mark.parametrize(("record", "response", "parsed"), [
    (_record("multiple_choice", "B", options=["A. x", "B. y"]), "<answer>B</answer>", "B"),
    (_record("multiple_choice", "B", options=["A. x", "B. y"]), "C", None),  # no such option
    (_record("numerical", 4), "4 cars", "4 cars"),
    (_record("numerical", 4), "a few", None),  # no number
    (_record("regression", 2.5), "2.5 m", "2.5 m"),
    (_record("boolean", "yes"), "No.", "No."),
    (_record("boolean", "yes"), "maybe", None),
    (_record("temporal_grounding", [1, 3]), "[1, 3]", "[1, 3]"),
    (_record("temporal_grounding", [1, 3]), "at the start", None),
    (_record("open_ended", "combustion"), "combustion", "combustion"),
    (_record("open_ended", "combustion"), "<answer> </answer>", None),
])
def test_parsed_answer_is_an_answer_of_the_problem_types_form(record: Record, response: str, parsed: str | None) -> None:
    assert parsed_answer(record, response) == parsed


def test_unparsed_and_failed_are_told_apart(bench_root: Path, tmp_path: Path) -> None:
    # VSI-Bench: sample 1 counts "a few" (no number: unparsed), 3 says "E" (no such option: unparsed), 4 answers
    # right, the other 5 are not answered (failed).
    responder = ScriptedResponder({"vsibench/1": "a few", "vsibench/3": "E", "vsibench/4": "D"}, default=None)
    got = evaluate(EvalSpec(), responder, tmp_path, benchmarks=["vsibench"], data_root=bench_root)["benchmarks"]["vsibench"]
    assert (got["n"], got["unparsed"], got["failed"]) == (8, 2, 5)
    assert got["errors"][0] == "vsibench/2: no response given"


def test_a_retried_row_replaces_the_failed_one(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    failed = {"id": "b/1", "score": 0.0, "error": "JudgeUnavailable", "settings_id": "s"}
    other = {"id": "b/2", "score": 1.0, "error": None, "settings_id": "s"}
    retried = {**failed, "score": 1.0, "error": None}
    samples.write_text("".join(json.dumps(r) + "\n" for r in (failed, other, retried)))  # as a killed retry leaves it
    assert read_samples(samples, "s") == {"b/1": retried, "b/2": other}
    assert _rows(samples) == [retried, other]  # one row per id, in the order of first appearance
