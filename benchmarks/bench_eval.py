"""Evaluation throughput (samples/s) on the fixtures with the tiny model through the HF engine:
our path (LMDB tensor cache + media prefetched in threads while the engine generates) against a
sequential decode-then-generate loop (live decode, one sample at a time, no overlap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.eval.api import engine_responder, evaluate
from evr1.eval.fixtures import write_fixtures
from evr1.registry import BENCHMARKS
from evr1.specs import CacheSpec, EvalSpec, ModelSpec, VideoSpec

BENCHES = ["mvbench", "videomme_v2", "ovobench"]
VIDEO = VideoSpec(fps=2.0, min_frames=2, max_frames=8, min_pixels=28 * 28, max_pixels=56 * 56)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    from evr1.data.cache_build import build_cache
    from evr1.models import load_processor

    root = tmp_path_factory.mktemp("bench-eval")
    write_fixtures(root, BENCHES)
    model = ModelSpec(name="tiny-qwen2.5-vl", dtype="float32")
    records = [r for name in BENCHES for r in BENCHMARKS.get(name).load(root)]
    cache = CacheSpec(path=str(root / "cache.lmdb"), map_size_gb=1)
    spec = EvalSpec(video=VIDEO, max_response_tokens=4)
    build_cache(records, video=VIDEO, image=spec.image, cache=cache, processor=load_processor(model), data_root=root, progress=False)
    return root, model, records, spec, cache


def test_eval_throughput(benchmark, setup, tmp_path: Path) -> None:
    root, model, records, spec, cache = setup
    ours_spec = spec.model_copy(update={"cache": cache, "batch_size": 4, "media_workers": 2, "prefetch": 8})
    ours = engine_responder(model, ours_spec, data_root=root)
    plain = engine_responder(model, spec, data_root=root)
    runs = iter(range(10**6))

    def pipelined() -> None:
        evaluate(ours_spec, ours, tmp_path / f"run{next(runs)}", benchmarks=BENCHES, data_root=root)

    def sequential() -> None:
        for record in records:
            prepared = plain.prepare(record)
            plain.respond([prepared])

    import time

    start = time.perf_counter()
    sequential()
    seq_s = time.perf_counter() - start
    benchmark.pedantic(pipelined, rounds=3, iterations=1)
    ours_s = benchmark.stats.stats.mean
    print(f"\n{len(records)} samples: pipelined+cache {len(records) / ours_s:.1f}/s, "
          f"sequential live {len(records) / seq_s:.1f}/s, ratio {seq_s / ours_s:.2f}x")
