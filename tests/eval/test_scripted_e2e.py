"""All 22 benchmarks end to end through our evaluation loop with a scripted responder: every
aggregation number checked against hand-computed values; resume, failures and reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.errors import ConfigError, Evr1Error
from evr1.eval.api import evaluate
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec, VideoSpec

from .expected import CASES, VERDICTS
from .verdict_judge import candidate_of, verdict_requests


def _responses(root: Path) -> dict[str, str]:
    table = {}
    for name, case in CASES.items():
        records = BENCHMARKS.get(name).load(root)
        assert len(records) == len(case["responses"]), name
        table.update({r.id: text for r, text in zip(records, case["responses"])})
    return table


def test_every_benchmark_has_a_case() -> None:
    assert sorted(CASES) == BENCHMARKS.names() and len(CASES) == 22


def test_all_22_benchmarks_aggregate_exactly(bench_root: Path, tmp_path: Path, verdict_judge) -> None:
    judge = verdict_judge
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"), batch_size=3, protocol="strict")
    results = evaluate(spec, ScriptedResponder(_responses(bench_root)), tmp_path, benchmarks=sorted(CASES), data_root=bench_root)
    for name, case in CASES.items():
        got = results["benchmarks"][name]  # the strict headline: evr1's rules (expected.py)
        assert got["protocol"] == "strict" and got["protocols"]["strict"]["score"] == got["score"], name
        assert got["score"] == pytest.approx(case["score"]), name
        assert got["n"] == len(case["responses"]) and got["failed"] == 0, name
        assert got["unparsed"] == case.get("unparsed", 0), name
        for metric, value in case.get("metrics", {}).items():
            assert got["metrics"][metric] == pytest.approx(value), (name, metric)
        for key, cats in case.get("breakdowns", {}).items():
            assert set(got["breakdowns"][key]) == set(cats), (name, key)
            for label, (score, n) in cats.items():
                assert got["breakdowns"][key][label]["score"] == pytest.approx(score), (name, key, label)
                assert got["breakdowns"][key][label]["n"] == n, (name, key, label)
    # Only non-empty open-ended answers reach evr1's verdict judge: vcrbench 1, videoreasonbench 1, mmvu 1.
    verdicts = verdict_requests(judge)
    assert sorted(candidate_of(body) for body in verdicts) == sorted(VERDICTS)
    assert all("correct or incorrect" in body["messages"][0]["content"] for body in verdicts)
    # The official judge steps: MMVU asks about every answered item (2), VCR-Bench extracts each answer and, with no
    # interval or box, scores the extraction (2 + 2), then asks its recall and precision steps (2 + 2);
    # VideoReasonBench's answers hold no "Final Answer" (none).
    official = [body for body in judge.requests if body not in verdicts]
    firsts = sorted(b["messages"][0]["content"][:24] for b in official)
    assert firsts == sorted(["Evaluate whether the mod"] * 2 + ["You are an AI assistant w"[:24]] * 4
                            + ["You are an expert system"] * 2 + ["\n# Task Overview\nGiven a"] * 2)
    md = (tmp_path / "results.md").read_text()
    # VSI-Bench: (counting 1 + distance MRA 0.6 + route 0.5 + direction 2/3) / 4 = 0.691666... (expected.py).
    assert "| VSI-Bench | strict | 69.17 | 69.17 |" in md and "| route_planning | 50.00 | 2 | 50.00 | 2 |" in md


def test_samples_and_results_record_settings(bench_root: Path, tmp_path: Path) -> None:
    spec = EvalSpec(video=VideoSpec(fps=1.0, max_frames=8), prompt_mode="reason")
    evaluate(spec, ScriptedResponder({"videomme/001-1": "<think>hm</think><answer>A</answer>"}, mode="reason"), tmp_path,
             benchmarks=["videomme"], data_root=bench_root)
    rows = [json.loads(line) for line in (tmp_path / "videomme" / "samples.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["videomme/001-1", "videomme/001-2", "videomme/002-1"]
    assert rows[0]["parsed"] == "A" and rows[0]["score"] == 1.0 and len(rows[0]["prompt_hash"]) == 16
    assert len({r["settings_id"] for r in rows}) == 1
    for path in (tmp_path / "results.json", tmp_path / "videomme" / "results.json"):
        data = json.loads(path.read_text())
        settings = data["settings"]
        assert settings["video"]["fps"] == 1.0 and settings["video"]["max_frames"] == 8
        assert settings["prompt_mode"] == "reason" and settings["max_response_tokens"] == 128
    md = (tmp_path / "results.md").read_text()
    assert '"fps": 1.0' in md and "prompt_mode" in md


class _Crash(ScriptedResponder):
    def respond(self, batch):  # type: ignore[no-untyped-def]
        if len(self.asked) >= 4:
            raise KeyboardInterrupt("killed")  # the process is stopped (an Exception would fail the sample alone)
        return super().respond(batch)


def test_resume_never_duplicates_or_skips(bench_root: Path, tmp_path: Path) -> None:
    responses = _responses(bench_root)
    spec = EvalSpec(batch_size=2)
    with pytest.raises(KeyboardInterrupt, match="killed"):
        evaluate(spec, _Crash(responses), tmp_path, benchmarks=["videomme_v2"], data_root=bench_root)
    samples = tmp_path / "videomme_v2" / "samples.jsonl"
    assert len(samples.read_text().splitlines()) == 4
    with samples.open("a") as f:  # a write torn by the kill
        f.write('{"id": "videomme_v2/g2-1", "sco')
    second = ScriptedResponder(responses)
    results = evaluate(spec, second, tmp_path, benchmarks=["videomme_v2"], data_root=bench_root)
    ids = [json.loads(line)["id"] for line in samples.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 8
    assert second.asked == [f"videomme_v2/g2-{i}" for i in range(1, 5)]
    assert results["benchmarks"]["videomme_v2"]["score"] == pytest.approx(CASES["videomme_v2"]["score"])
    again = ScriptedResponder(responses)
    evaluate(spec, again, tmp_path, benchmarks=["videomme_v2"], data_root=bench_root)
    assert again.asked == []


def test_resume_with_other_settings_is_refused(bench_root: Path, tmp_path: Path) -> None:
    evaluate(EvalSpec(), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    with pytest.raises(Evr1Error, match="other settings"):
        evaluate(EvalSpec(video=VideoSpec(fps=1.0)), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)


def test_open_ended_benchmark_without_judge_is_a_clear_error(bench_root: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'mmvu' scores open_ended answers with an LLM judge: set eval.judge.base_url"):
        evaluate(EvalSpec(), ScriptedResponder({}), tmp_path, benchmarks=["minerva", "mmvu"], data_root=bench_root)
    assert not (tmp_path / "minerva").exists()  # checked before anything runs


def test_failed_samples_count_as_wrong(bench_root: Path, tmp_path: Path) -> None:
    class Broken(ScriptedResponder):
        def prepare(self, record):  # type: ignore[no-untyped-def]
            prepared = super().prepare(record)
            if record.id.endswith("mi1"):
                prepared.error = "MediaError: corrupt video"
            return prepared

    results = evaluate(EvalSpec(), Broken({"minerva/mi1": "D", "minerva/mi2": "A"}), tmp_path,
                       benchmarks=["minerva"], data_root=bench_root)
    got = results["benchmarks"]["minerva"]
    assert (got["score"], got["n"], got["failed"]) == (50.0, 2, 1)
    assert got["errors"] == ["minerva/mi1: MediaError: corrupt video"]


def test_compare_reports_deltas(bench_root: Path, tmp_path: Path) -> None:
    from evr1.eval.report import compare_table, load_results

    evaluate(EvalSpec(), ScriptedResponder({"minerva/mi1": "D"}), tmp_path / "a", benchmarks=["minerva"], data_root=bench_root)
    evaluate(EvalSpec(), ScriptedResponder({"minerva/mi1": "D", "minerva/mi2": "A"}), tmp_path / "b",
             benchmarks=["minerva"], data_root=bench_root)
    table = compare_table(load_results(tmp_path / "a"), load_results(tmp_path / "b"), "strict")
    assert "| minerva | score | 50.00 | 100.00 | +50.00 |" in table
    # official: mi2's empty answer scores the expected value of lmms-eval's random letter (1/5)
    official = compare_table(load_results(tmp_path / "a"), load_results(tmp_path / "b"))
    assert "| minerva | score | 60.00 | 100.00 | +40.00 |" in official
