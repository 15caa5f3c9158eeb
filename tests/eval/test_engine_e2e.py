"""A few benchmarks end to end with the real tiny model through the HF engine: scores are ~0,
but media are decoded, prompts built with the model's processor, and every sample is counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.eval.api import engine_responder, evaluate
from evr1.specs import EvalSpec, ModelSpec, VideoSpec

BENCHES = ["mvbench", "charades_sta", "video_mmmu"]  # clipped videos, grounding, video + image


@pytest.mark.slow
def test_tiny_model_runs_every_sample(bench_root: Path, tmp_path: Path) -> None:
    video = VideoSpec(fps=1.0, min_frames=2, max_frames=4, min_pixels=28 * 28, max_pixels=56 * 56)
    spec = EvalSpec(video=video, max_response_tokens=6, batch_size=2, media_workers=2, prefetch=3)
    responder = engine_responder(ModelSpec(name="tiny-qwen2.5-vl", dtype="float32"), spec, data_root=bench_root)
    results = evaluate(spec, responder, tmp_path, benchmarks=BENCHES, data_root=bench_root)
    for name, expected_n in (("mvbench", 5), ("charades_sta", 3), ("video_mmmu", 3)):
        got = results["benchmarks"][name]
        assert got["n"] == expected_n and got["failed"] == 0, got["errors"]
        assert 0.0 <= got["score"] <= 100.0
        rows = [json.loads(line) for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
        assert len(rows) == expected_n and all(isinstance(r["response"], str) for r in rows)
        assert all(r["cache_hits"] == 0 for r in rows)  # no cache configured: decoded live
    settings = results["settings"]
    assert settings["model"] == "tiny-qwen2.5-vl" and settings["decoding"]["greedy"] is True
    assert settings["decoding"]["max_tokens"] == 6 and settings["video"]["max_frames"] == 4
