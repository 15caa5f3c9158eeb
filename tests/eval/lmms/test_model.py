"""The `evr1` lmms-eval model: registration, prompts equal to evr1's own evaluator, resume, failures.

A probe task is made in a temporary `evals/` folder (evr1's own messages, `evr1.eval.lmms.scoring`,
and a metric of whether anything was answered), bound to the benchmark fixtures and run through
real lmms-eval.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.eval.lmms.model import Evr1Chat, ScriptedChat, _video_source, cut_at_stops
from evr1.eval.lmms.tasks import bind

MODEL_ARGS = {"model": "tiny-qwen2.5-vl", "fps": 1.0, "max_frames": 4, "max_pixels": 56 * 56, "min_pixels": 28 * 28,
              "max_new_tokens": 6}
TEMPLATE = """\
task: t_{name}
output_type: generate_until
doc_to_messages: !function evr1.eval.lmms.scoring.doc_to_messages
doc_to_text: !function evr1.eval.lmms.scoring.doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 5
  temperature: 0
  until: ["\\n\\n"]
process_results: !function t_utils.results
metric_list:
  - metric: answered
    aggregation: mean
    higher_is_better: true
"""
MULTI_ROUND = """\
task: t_rounds_{name}
output_type: generate_until_multi_round
doc_to_text: !function t_utils.rounds
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 4
  temperature: 0
process_results: !function t_utils.round_results
metric_list:
  - metric: rounds
    aggregation: mean
    higher_is_better: true
  - metric: chained
    aggregation: mean
    higher_is_better: true
"""
PIL_TEMPLATE = """\
task: t_pil_{name}
output_type: generate_until
doc_to_messages: !function t_utils.pil_messages
doc_to_text: evr1_id
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 4
  temperature: 0
process_results: !function t_utils.results
metric_list:
  - metric: answered
    aggregation: mean
    higher_is_better: true
"""
UTILS = """\
from PIL import Image

from evr1.eval.lmms.tasks import doc_to_visual


def pil_messages(doc):
    \"\"\"An in-memory image, as image benchmarks give them (same pixels for every document).\"\"\"
    image = Image.new("RGB", (56, 42), (200, 30, 30))
    return [{"role": "user", "content": [{"type": "image", "url": image}, {"type": "text", "text": "Colour?"}]}]


def results(doc, results):
    return {"answered": float(bool(results[0]))}


def rounds(doc, lmms_eval_specific_kwargs=None, round_idx=None, previous_output=None, previous_round_info=None):
    \"\"\"Three rounds; each prompt quotes how many answers came before (checked by round_results).\"\"\"
    if round_idx is None:
        return "Round 0: what colour is the square?"
    if round_idx == 3:
        return None, None, True, previous_output, None
    return doc_to_visual(doc), f"Round {round_idx} after {len(previous_output)} answers.", False, previous_output, None


def round_results(doc, results):
    outputs = results[0]
    return {"rounds": float(len(outputs)), "chained": float(all(isinstance(o, str) for o in outputs))}
"""


@pytest.fixture(scope="module")
def tasks_dir(bench_root: Path, tmp_path_factory: pytest.TempPathFactory, lmms_env: Path) -> Path:
    """Our probe task bound to two benchmarks: MVBench (clips) and Video-MMMU (a video and an image)."""
    evals = tmp_path_factory.mktemp("evals")
    for name in ("mvbench", "video_mmmu"):
        (evals / name).mkdir()
        (evals / name / "t.yaml").write_text(TEMPLATE.format(name=name))
        (evals / name / "t_rounds.yaml").write_text(MULTI_ROUND.format(name=name))
        (evals / name / "t_pil.yaml").write_text(PIL_TEMPLATE.format(name=name))
        (evals / name / "t_utils.py").write_text(UTILS)
    out = tmp_path_factory.mktemp("bound")
    bind(bench_root, out, ["mvbench", "video_mmmu"], evals)
    return out


def run(model, tasks_dir: Path, tasks: list[str]) -> dict:
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=[str(tasks_dir)], include_defaults=False)
    return simple_evaluate(model=model, tasks=tasks, task_manager=manager, log_samples=True)


def responses(result: dict, task: str) -> dict[str, str]:
    return {s["doc"]["evr1_id"]: s["resps"][0][0] for s in result["samples"][task]}


def test_entry_point_registers_both_models() -> None:
    from lmms_eval.models import get_model

    assert get_model("evr1") is Evr1Chat
    assert get_model("evr1_scripted") is ScriptedChat


@pytest.mark.parametrize(("text", "until", "expected"), [
    ("A. red\n\nmore", ["\n\n"], "A. red"),
    ("A. red\n\nmore", "\n\n", "A. red"),
    ("abc<|im_end|>x</s>", ["</s>", "<|im_end|>"], "abc"),  # the earliest stop wins
    ("no stop here", ["\n\n"], "no stop here"),
    ("text", None, "text"),
    ("text", [""], "text"),  # an empty stop string stops nothing
])
def test_cut_at_stops(text: str, until, expected: str) -> None:
    assert cut_at_stops(text, until) == expected


@pytest.mark.parametrize(("url", "expected"), [
    ("/d/v.mp4", ("/d/v.mp4", None, None)),
    ({"path": "/d/v.mp4", "video_start": 1.0, "video_end": 3.0}, ("/d/v.mp4", 1.0, 3.0)),
    ({"url": "/d/v.mp4", "video_end": 2.5}, ("/d/v.mp4", None, 2.5)),
])
def test_video_sources(url, expected) -> None:
    assert _video_source(url) == expected


def test_remote_video_is_a_clear_error() -> None:
    from evr1.errors import ConfigError

    with pytest.raises(ConfigError, match="remote"):
        _video_source("https://example.com/v.mp4")


def test_bad_model_args_are_a_config_error(lmms_env: Path) -> None:
    from evr1.errors import ConfigError

    with pytest.raises(ConfigError, match="min_pixels"):
        Evr1Chat(model="tiny-qwen2.5-vl", max_pixels=64)


@pytest.mark.slow
def test_answers_equal_evr1_own_evaluator(tasks_dir: Path, bench_root: Path, tmp_path: Path) -> None:
    """Same media pipeline, prompt and greedy decoding: lmms-eval's responses are evr1's, token for token."""
    from evr1.eval.api import engine_responder, evaluate
    from evr1.specs import EvalSpec, ModelSpec, VideoSpec

    model = Evr1Chat(**MODEL_ARGS)
    result = run(model, tasks_dir, ["t_mvbench", "t_video_mmmu"])
    assert model.failures == []
    assert result["config"]["model"].startswith("tiny-qwen2.5-vl (evr1 ")  # the settings are in the results
    assert '"fps": 1.0' in result["config"]["model"] and '"max_frames": 4' in result["config"]["model"]
    video = VideoSpec(fps=1.0, max_frames=4, max_pixels=56 * 56, min_pixels=28 * 28)
    spec = EvalSpec(video=video, max_response_tokens=5, batch_size=1)
    responder = engine_responder(ModelSpec(name="tiny-qwen2.5-vl"), spec, data_root=bench_root)
    ours = evaluate(spec, responder, tmp_path, benchmarks=["mvbench", "video_mmmu"], data_root=bench_root)
    for task, bench, n in (("t_mvbench", "mvbench", 5), ("t_video_mmmu", "video_mmmu", 3)):
        got = responses(result, task)
        rows = [json.loads(line) for line in (tmp_path / bench / "samples.jsonl").read_text().splitlines()]
        assert len(got) == len(rows) == n == ours["benchmarks"][bench]["n"]
        assert got == {r["id"]: cut_at_stops(r["response"], ["\n\n"]) for r in rows}
        assert any(text for text in got.values())  # the tiny model does say something


@pytest.mark.slow
def test_resume_answers_from_the_log_and_regenerates_changed_requests(tasks_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "responses.jsonl"
    first = Evr1Chat(**MODEL_ARGS, responses=str(log))
    before = responses(run(first, tasks_dir, ["t_video_mmmu"]), "t_video_mmmu")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 3 and all(r["settings"]["video"]["max_frames"] == 4 for r in rows)

    again = Evr1Chat(**MODEL_ARGS, responses=str(log))
    calls: list[int] = []
    generate = again.engine.generate
    again.engine.generate = lambda prompts, params: calls.append(len(prompts)) or generate(prompts, params)
    assert responses(run(again, tasks_dir, ["t_video_mmmu"]), "t_video_mmmu") == before
    assert calls == []  # everything came from the log
    assert len(log.read_text().splitlines()) == 3

    other = Evr1Chat(**{**MODEL_ARGS, "fps": 0.5}, responses=str(log))  # new settings: no reuse
    calls.clear()
    generate = other.engine.generate
    other.engine.generate = lambda prompts, params: calls.append(len(prompts)) or generate(prompts, params)
    run(other, tasks_dir, ["t_video_mmmu"])
    assert sum(calls) == 3
    assert len(log.read_text().splitlines()) == 6


@pytest.mark.slow
def test_a_missing_video_fails_its_request_only_and_is_retried(tasks_dir: Path, tmp_path: Path) -> None:
    docs = tasks_dir / "mvbench" / "docs.jsonl"
    rows = [json.loads(line) for line in docs.read_text().splitlines()]
    video = Path(rows[1]["evr1_media"][0]["path"])
    moved = tmp_path / "away.mp4"
    log = tmp_path / "responses.jsonl"
    video.rename(moved)
    try:
        model = Evr1Chat(**MODEL_ARGS, responses=str(log))
        result = run(model, tasks_dir, ["t_mvbench"])
    finally:
        moved.rename(video)
    failed = {r["evr1_id"] for r in rows if r["evr1_media"][0]["path"] == str(video)}  # the clip serves 2 documents
    got = responses(result, "t_mvbench")
    assert len(got) == 5 and len(failed) == 2 and all(got[i] == "" for i in failed)
    assert len(model.failures) == 2 and all(video.name in error for _, error in model.failures)
    assert result["results"]["t_mvbench"]["answered,none"] <= 0.6  # the failed ones are in the denominator
    again = Evr1Chat(**MODEL_ARGS, responses=str(log))  # the video is back: only the failed requests run
    calls: list[int] = []
    generate = again.engine.generate
    again.engine.generate = lambda prompts, params: calls.append(len(prompts)) or generate(prompts, params)
    retried = responses(run(again, tasks_dir, ["t_mvbench"]), "t_mvbench")
    assert sum(calls) == 2 and again.failures == []
    assert {k: v for k, v in retried.items() if k not in failed} == {k: v for k, v in got.items() if k not in failed}


@pytest.mark.slow
def test_in_memory_images_are_answered_logged_and_released(tasks_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "responses.jsonl"
    model = Evr1Chat(**MODEL_ARGS, responses=str(log))
    answered: list = []
    answer = model._answer
    model._answer = lambda batch, indices: answered.extend(batch) or answer(batch, indices)
    result = run(model, tasks_dir, ["t_pil_video_mmmu"])
    assert model.failures == [] and len(answered) == 3
    assert all(request.prompt is None for request in answered)  # pixels released once answered
    digests = {json.loads(line)["digest"] for line in log.read_text().splitlines()}
    assert len(digests) == 1  # the same image and text in every document
    again = Evr1Chat(**MODEL_ARGS, responses=str(log))
    again.engine.generate = lambda prompts, params: pytest.fail("a logged request was generated again")
    assert responses(run(again, tasks_dir, ["t_pil_video_mmmu"]), "t_pil_video_mmmu") == responses(result, "t_pil_video_mmmu")


@pytest.mark.slow
def test_multi_round_tasks_run_each_round_with_the_previous_answers(tasks_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "responses.jsonl"
    model = Evr1Chat(**MODEL_ARGS, responses=str(log))
    asked: list[tuple[str, str]] = []
    prepare = model._prepare
    model._prepare = lambda r: asked.append((r.key, r.chat.messages[-1].content[-1].text)) or prepare(r)
    result = run(model, tasks_dir, ["t_rounds_video_mmmu"])
    assert dict(asked)["t_rounds_video_mmmu/test/1#0"] == "Round 0: what colour is the square?"
    assert dict(asked)["t_rounds_video_mmmu/test/1#2"] == "Round 2 after 2 answers."
    assert result["results"]["t_rounds_video_mmmu"]["rounds,none"] == 3.0
    assert result["results"]["t_rounds_video_mmmu"]["chained,none"] == 1.0
    keys = [json.loads(line)["key"] for line in log.read_text().splitlines()]
    assert sorted(keys) == sorted(f"t_rounds_video_mmmu/test/{d}#{r}" for d in range(3) for r in range(3))
    again = Evr1Chat(**MODEL_ARGS, responses=str(log))
    again.engine.generate = lambda prompts, params: pytest.fail("a logged round was generated again")
    assert run(again, tasks_dir, ["t_rounds_video_mmmu"])["results"]["t_rounds_video_mmmu"]["rounds,none"] == 3.0


@pytest.mark.slow
def test_lmms_eval_command_line_runs_the_evr1_model(tasks_dir: Path, tmp_path: Path, lmms_env: Path) -> None:
    """`lmms-eval --model evr1 ...` finds our model through the entry point and writes its results."""
    args = ",".join(f"{k}={v}" for k, v in MODEL_ARGS.items())
    cmd = [sys.executable, "-m", "lmms_eval", "--model", "evr1", "--model_args", args, "--tasks", "t_video_mmmu",
           "--include_path", str(tasks_dir), "--output_path", str(tmp_path / "out"), "--log_samples"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), timeout=600, check=False)
    found = list((tmp_path / "out").rglob("*results*.json"))
    assert found, proc.stdout[-3000:] + proc.stderr[-3000:]  # lmms-eval may exit 0 on errors: check its files
    results = json.loads(found[0].read_text())
    samples = [json.loads(line) for f in (tmp_path / "out").rglob("*samples_t_video_mmmu*.jsonl") for line in f.read_text().splitlines()]
    assert len(samples) == results["n-samples"]["t_video_mmmu"]["effective"] == 3
    answered = sum(bool(s["filtered_resps"]) for s in samples) / 3
    assert results["results"]["t_video_mmmu"]["answered,none"] == pytest.approx(answered)
