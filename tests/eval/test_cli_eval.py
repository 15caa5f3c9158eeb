"""`evr1 eval` run as a user would: fixtures, scoring given responses, compare, list, errors."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from cli_inproc import evr1 as run_evr1


def evr1(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_evr1("eval", *args, cwd=cwd)


@pytest.mark.slow
def test_fixtures_run_compare(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = evr1("fixtures", "--out", str(data), "--benchmarks", "minerva,charades_sta", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "wrote 5 items of 2 benchmarks" in made.stdout
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(r) for r in [
        {"id": "minerva/mi1", "response": "D"}, {"id": "charades_sta/c1", "response": "1 - 3"},
    ]) + "\n")
    first = evr1("run", "--benchmarks", "minerva,charades_sta", "--data-root", str(data),
                 "--out", str(tmp_path / "a"), "--responses", str(answers), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "minerva: 50.00" in first.stdout and "charades_sta: 33.33" in first.stdout
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["benchmarks"]["charades_sta"]["metrics"]["R@0.7"] == pytest.approx(100 / 3)
    answers.write_text(json.dumps({"id": "minerva/mi1", "response": "A"}) + "\n")
    second = evr1("run", "--benchmarks", "minerva", "--data-root", str(data),
                  "--out", str(tmp_path / "b"), "--responses", str(answers), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    diff = evr1("compare", str(tmp_path / "a"), str(tmp_path / "b"), cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    assert "| minerva | score | 50.00 | 0.00 | -50.00 |" in diff.stdout
    assert "| charades_sta | mIoU | 33.33 | not run | n/a |" in diff.stdout  # b evaluated minerva only
    assert "not run: the run did not evaluate the benchmark; n/a: the run holds no such number" in diff.stdout


def test_user_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    missing = evr1("run", "--benchmarks", "minerva", "--data-root", str(tmp_path), "--out", str(tmp_path / "o"),
                   "--responses", str(tmp_path / "none.jsonl"), cwd=tmp_path)
    assert missing.returncode == 2 and "none.jsonl does not exist" in missing.stderr
    (tmp_path / "r.jsonl").write_text("")
    no_data = evr1("run", "--benchmarks", "minerva", "--data-root", str(tmp_path), "--out", str(tmp_path / "o"),
                   "--responses", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert no_data.returncode == 2 and "Traceback" not in no_data.stderr
    assert "benchmark 'minerva': no annotations found" in no_data.stderr
    unknown = evr1("run", "--benchmarks", "videomm", "--data-root", str(tmp_path), "--out", str(tmp_path / "o"),
                   "--responses", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean 'videomme'" in unknown.stderr.lower()
    listed = evr1("list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.count("\n") == 22 and "vsibench: VSI-Bench" in listed.stdout
    assert "[lmms-eval: evr1_vsibench, extends stock vsibench]" in listed.stdout
    assert "[lmms-eval: evr1_stvg, scored by evr1]" in listed.stdout


def _answers(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_responses_with_official_ids_are_an_error_naming_the_prefix(bench_root: Path, tmp_path: Path) -> None:
    answers = _answers(tmp_path / "r.jsonl", [{"id": i, "response": "A"} for i in ("001-1", "001-2", "002-1")])
    done = evr1("run", "--benchmarks", "videomme", "--data-root", str(bench_root), "--out", str(tmp_path / "o"),
                "--responses", str(answers), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "3 response id(s) match no record of videomme: '001-1', '001-2', '002-1'" in done.stderr
    assert "record ids are '<benchmark>/<id>', e.g. 'videomme/001-1'" in done.stderr
    assert not (tmp_path / "o").exists()


def test_responses_missing_records_fail_and_the_file_is_the_setting(bench_root: Path, tmp_path: Path) -> None:
    # videomme/001-1 right; 001-2 null and 002-1 absent: failed, not unparsed. minerva's id is another benchmark's.
    answers = _answers(tmp_path / "r.jsonl", [{"id": "videomme/001-1", "response": "A"},
                                              {"id": "videomme/001-2", "response": None},
                                              {"id": "minerva/mi1", "response": "D"}])
    done = evr1("run", "--benchmarks", "videomme", "--data-root", str(bench_root), "--out", str(tmp_path / "o"),
                "--responses", str(answers), "--protocol", "strict", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # strict counts the two failures; Video-MME's official script drops answers without a letter (n=1)
    assert ("videomme: 33.33 strict (accuracy (w/o subtitles), by duration and task type; n=3, failed=2, unparsed=0,"
            " dropped=0); official 100.00 (n=1)") in done.stdout
    assert "  failed: videomme/001-2: no response given" in done.stdout
    settings = json.loads((tmp_path / "o" / "results.json").read_text())["benchmarks"]["videomme"]["settings"]
    assert settings == {"responses": {"path": str(answers.resolve()), "sha256": hashlib.sha256(answers.read_bytes()).hexdigest()},
                        "benchmark": "videomme"}


def test_responses_and_target_shape(tmp_path: Path) -> None:
    answers = _answers(tmp_path / "r.jsonl", [])
    both = evr1("run", "tiny-qwen2.5-vl", "--benchmarks", "minerva", "--responses", str(answers), cwd=tmp_path)
    assert both.returncode == 2 and "TARGET 'tiny-qwen2.5-vl' would not be used" in both.stderr
    unused = evr1("run", "--benchmarks", "minerva", "--responses", str(answers), "--fps", "2", "--max-tokens", "9", cwd=tmp_path)
    assert unused.returncode == 2 and "--fps, --max-tokens would not be used" in unused.stderr
    neither = evr1("run", "--benchmarks", "minerva", cwd=tmp_path)
    assert neither.returncode == 2 and "give TARGET" in neither.stderr
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"id": "minerva/mi1", "response": "A"}\n{"id": "minerva/mi2"}\n')
    shape = evr1("run", "--benchmarks", "minerva", "--responses", str(bad_line), cwd=tmp_path)
    assert shape.returncode == 2 and f"{bad_line}:2: expected" in shape.stderr


@pytest.mark.parametrize(("option", "message"), [
    (("--limit", "0"), "eval.limit: Input should be greater than 0 (got 0)"),
    (("--max-pixels", "1000"),
     "eval.video: max_pixels (1000) < the default min_pixels (100352 for Qwen2/2.5-VL, 131072 for Qwen3-VL): set min_pixels too"),
    (("--prompt-mode", "think"), "eval.prompt_mode: Input should be 'direct' or 'reason' (got 'think')"),
])
def test_bad_options_are_one_line_errors(tmp_path: Path, option: tuple[str, str], message: str) -> None:
    done = evr1("run", "tiny-qwen2.5-vl", "--benchmarks", "minerva", *option, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"error: {message}"


def test_judge_options_update_the_experiments_judge() -> None:
    from evr1.cli.eval import with_options
    from evr1.specs import EvalSpec, JudgeSpec

    spec = EvalSpec(judge=JudgeSpec(base_url="http://a/v1", model="m", api_key_env="KEY", retries=5, concurrency=2))
    url_only = with_options(spec, video={}, judge={"base_url": "http://b/v1", "model": None})
    assert url_only.judge == JudgeSpec(base_url="http://b/v1", model="m", api_key_env="KEY", retries=5, concurrency=2)
    model_only = with_options(spec, video={"fps": 2.0}, judge={"model": "n"}, limit=3)
    assert model_only.judge == spec.judge.model_copy(update={"model": "n"})
    assert (model_only.video.fps, model_only.video.max_frames, model_only.limit) == (2.0, spec.video.max_frames, 3)
