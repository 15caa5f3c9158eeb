"""Resuming an evaluation under other settings is refused, naming the settings that differ; the settings are
kept beside the samples (`settings.json`), or read from `results.json` in a folder written before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.errors import Evr1Error
from evr1.eval.api import evaluate
from evr1.eval.responders import ScriptedResponder
from evr1.eval.samples import settings_changes, settings_id
from evr1.specs import EvalSpec, VideoSpec


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"max_response_tokens": 64}, {"max_response_tokens": 128}, ["max_response_tokens: 64 -> 128"]),
        ({"video": {"fps": 2.0, "max_frames": 8}}, {"video": {"fps": 1.0, "max_frames": 8}}, ["video.fps: 2.0 -> 1.0"]),
        ({"a": 1}, {"a": 1, "b": "x"}, ["b: '-' -> 'x'"]),
        ({"a": 1, "b": "x"}, {"a": 1}, ["b: 'x' -> '-'"]),
        ({"size": (2, 3)}, {"size": [2, 3]}, []),  # as JSON stores them: the same
        ({"a": 1, "z": True}, {"a": 2, "z": False}, ["a: 1 -> 2", "z: True -> False"]),
    ],
)
def test_settings_changes(old: dict, new: dict, expected: list[str]) -> None:
    assert settings_changes(old, new) == expected


def test_resume_under_other_settings_names_them(bench_root: Path, tmp_path: Path) -> None:
    evaluate(EvalSpec(max_response_tokens=64), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    recorded = json.loads((tmp_path / "minerva" / "settings.json").read_text())
    assert recorded["max_response_tokens"] == 64 and recorded["benchmark"] == "minerva"
    samples = (tmp_path / "minerva" / "samples.jsonl").read_bytes()
    with pytest.raises(Evr1Error, match=r"other settings \(max_response_tokens: 64 -> 128\)"):
        evaluate(EvalSpec(max_response_tokens=128), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    with pytest.raises(Evr1Error, match=r"other settings \(video.fps: 2.0 -> 1.0; video.max_frames: 768 -> 16\)"):
        evaluate(EvalSpec(max_response_tokens=64, video=VideoSpec(fps=1.0, max_frames=16)), ScriptedResponder({}), tmp_path,
                 benchmarks=["minerva"], data_root=bench_root)
    assert (tmp_path / "minerva" / "samples.jsonl").read_bytes() == samples
    assert json.loads((tmp_path / "minerva" / "settings.json").read_text()) == recorded  # refused: not rewritten


def test_a_folder_without_settings_json_is_diffed_against_its_results(bench_root: Path, tmp_path: Path) -> None:
    evaluate(EvalSpec(max_response_tokens=64), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    (tmp_path / "minerva" / "settings.json").unlink()  # as written before settings.json existed
    with pytest.raises(Evr1Error, match=r"other settings \(max_response_tokens: 64 -> 128\)"):
        evaluate(EvalSpec(max_response_tokens=128), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    (tmp_path / "minerva" / "results.json").unlink()  # nothing says what they were: the samples' hash decides
    with pytest.raises(Evr1Error, match="was made with other settings"):
        evaluate(EvalSpec(max_response_tokens=128), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    assert not (tmp_path / "minerva" / "settings.json").exists()  # never recorded over samples of unknown settings
    evaluate(EvalSpec(max_response_tokens=64), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    recorded = json.loads((tmp_path / "minerva" / "settings.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "minerva" / "samples.jsonl").read_text().splitlines()]
    assert {r["settings_id"] for r in rows} == {settings_id(recorded)}


@pytest.mark.parametrize(("content", "why"), [(b"", "is empty"), (b'{"max_response_tokens": 6', "is not valid JSON"),
                                              (b"[1, 2]", "does not hold a JSON object")])
def test_an_unreadable_settings_json_is_refused_naming_it(bench_root: Path, tmp_path: Path, content: bytes, why: str) -> None:
    evaluate(EvalSpec(max_response_tokens=64), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    settings = tmp_path / "minerva" / "settings.json"
    settings.write_bytes(content)  # a torn write (or a hand edit)
    for tokens in (64, 128):  # under the same settings or others: what the samples were made with is unknown
        with pytest.raises(Evr1Error) as info:
            evaluate(EvalSpec(max_response_tokens=tokens), ScriptedResponder({}), tmp_path, benchmarks=["minerva"],
                     data_root=bench_root)
        assert str(info.value).startswith(f"{settings} {why}") and "delete it to resume" in str(info.value)
    assert settings.read_bytes() == content  # never rewritten over
    settings.unlink()  # as the message says: other settings are still refused (here through results.json)
    with pytest.raises(Evr1Error, match=r"other settings \(max_response_tokens: 64 -> 128\)"):
        evaluate(EvalSpec(max_response_tokens=128), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)


def test_settings_and_results_are_written_whole(bench_root: Path, tmp_path: Path) -> None:
    (tmp_path / "minerva").mkdir()
    (tmp_path / "minerva" / "settings.json.tmp").write_text("left by a killed run")
    evaluate(EvalSpec(max_response_tokens=64), ScriptedResponder({}), tmp_path, benchmarks=["minerva"], data_root=bench_root)
    assert sorted(p.name for p in (tmp_path / "minerva").iterdir()) == ["results.json", "samples.jsonl", "settings.json"]
    assert json.loads((tmp_path / "minerva" / "settings.json").read_text())["max_response_tokens"] == 64
    assert json.loads((tmp_path / "minerva" / "results.json").read_text())["benchmark"] == "minerva"


@pytest.mark.parametrize(("params", "decoding"), [
    ({"greedy": True, "max_tokens": 8}, {"greedy": True, "max_tokens": 8}),
    ({"temperature": 0.0, "max_tokens": 8}, {"greedy": True, "max_tokens": 8}),  # temperature 0 is greedy
    ({"temperature": 0.7, "top_p": 0.9, "max_tokens": 8},
     {"greedy": False, "temperature": 0.7, "top_p": 0.9, "top_k": -1, "max_tokens": 8}),
])
def test_the_decoding_settings_name_only_what_decoding_uses(params: dict, decoding: dict) -> None:
    from evr1.engines.base import SamplingParams
    from evr1.eval.responders import EngineResponder
    from evr1.models import load_processor
    from evr1.specs import ModelSpec

    processor = load_processor(ModelSpec(name="tiny-qwen2.5-vl"))
    responder = EngineResponder(object(), processor, None, SamplingParams(**params), model="m")
    assert responder.describe()["decoding"] == decoding
