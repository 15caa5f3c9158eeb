"""Learner passes: packed micro-batches vs one sample per pass, and the grouped forward vs per-row.

1. The obvious alternative to packing is a forward/backward per sample (no padding at all, but
   no batching either). Both give the same update; the ratio of their step times is printed.
2. The grouped forward (each group's video prompt once per pass, responses on its KV cache) vs
   forwarding every prompt + response row whole (`TrainerSpec.grouped_forward=False`), on a
   random-init model large enough that compute dominates (hidden 256, 4 layers, a 4-layer vision
   tower), video prompts of 1,000-4,000 visual tokens, n = 8 responses of 32-128 tokens per group.
   The update pass and the log-prob pass are timed (wall clock, and the process's CPU time, the
   fairer figure on a shared machine), each variant in a fresh process so that its peak resident
   memory (`ru_maxrss`, above the process's memory when the pass starts) is its own. Printed:
   both times and their ratios, the ratio the token counts predict
   (n (P + R) against P + n R, summed over groups), and both peaks.
   Run: `python benchmarks/bench_learner.py [--family qwen2.5-vl] [--visual 1000 2000 4000]`.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest
import torch

from evr1.models import build_prompt, load_processor
from evr1.models.testing import process_video, random_frames, tiny_spec, video_prompts
from evr1.models.tiny import TinyModel
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, ModelSpec, OptimSpec, TrainerSpec

FAMILY = "qwen2.5-vl"
GROUPS, GROUP_SIZE = 4, 4


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    spec = tiny_spec(FAMILY, tmp_path_factory.mktemp("models"))
    prompts = video_prompts(load_processor(spec), FAMILY, [f"question {i}" for i in range(GROUPS)])
    g = torch.Generator().manual_seed(0)
    samples = []
    for i in range(GROUPS * GROUP_SIZE):
        length = int(torch.randint(8, 33, (), generator=g))
        response = torch.randint(20, 300, (length,), generator=g)
        samples.append(
            Sample(prompts[i // GROUP_SIZE], response, torch.randn(length, generator=g), group_id=i // GROUP_SIZE)
        )
    return spec, samples


def _step_time(spec, samples, budget: int, rounds: int = 3) -> float:
    learner = Learner.from_spec(spec, AlgoSpec(), OptimSpec(lr=1e-4), TrainerSpec(micro_batch_tokens=budget))
    learner.update(samples)  # warm-up
    start = time.perf_counter()
    for _ in range(rounds):
        learner.update(samples)
    return (time.perf_counter() - start) / rounds


def test_packed_micro_batches_vs_one_sample_per_pass(benchmark, setup) -> None:
    spec, samples = setup
    packed = benchmark.pedantic(lambda: _step_time(spec, samples, 2048), rounds=1, iterations=1)
    single = _step_time(spec, samples, 1)
    print(
        f"\nlearner step ({len(samples)} samples): packed {packed:.3f} s, one per pass {single:.3f} s, "
        f"ratio {single / packed:.2f}x"
    )


# -- grouped forward vs per-row ----------------------------------------------------------------
N, RESPONSES, FRAMES = 8, (32, 128), 20  # 20 frames: 10 temporal patches


def _model(family: str, cache: Path) -> ModelSpec:
    tiny = TinyModel(name=f"bench-{family}", family=family, hidden=256, layers=4, heads=4, vision_width=256,
                     vision_depth=4, max_patches=4096)
    return ModelSpec(name=str(tiny.materialize(cache)), dtype="float32")


def _groups(spec: ModelSpec, family: str, visual: list[int]) -> list[Sample]:
    """One video group of N responses per entry of `visual` (its visual tokens: 10 temporal patches x
    rows x cols cells, a cell being one merged token)."""
    processor = load_processor(spec)
    g = torch.Generator().manual_seed(0)
    samples = []
    for group, tokens in enumerate(visual):
        cells = tokens // (FRAMES // 2)
        rows = int(cells**0.5)
        frames = random_frames(family, group, frames=FRAMES, cells=(rows, cells // rows))
        prompt = build_prompt(processor, "what happens in this video, step by step?", [process_video(processor, frames)])
        for _ in range(N):
            length = int(torch.randint(RESPONSES[0], RESPONSES[1] + 1, (), generator=g))
            response = torch.randint(20, 300, (length,), generator=g)
            samples.append(Sample(prompt, response, torch.randn(length, generator=g), group_id=group))
    return samples


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _pass(spec: ModelSpec, samples_path: str, grouped: bool, which: str) -> tuple[float, float, float]:
    """In a fresh process: one `which` pass ("update" or "logprobs"); its wall and CPU seconds, and its
    peak MB above its start."""
    torch.set_num_threads(2)
    samples = torch.load(samples_path, weights_only=False)
    trainer = TrainerSpec(grouped_forward=grouped)
    learner = Learner.from_spec(spec, AlgoSpec(), OptimSpec(lr=1e-5), trainer)
    with open("/proc/self/statm") as f:
        start_mb = int(f.read().split()[1]) * resource.getpagesize() / 2**20
    start, cpu = time.perf_counter(), _cpu_s()
    if which == "update":
        learner.update(samples)
    else:
        learner.compute_logprobs(samples)
    seconds, cpu = time.perf_counter() - start, _cpu_s() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return seconds, cpu, peak_mb - start_mb


def _isolated(*args) -> tuple[float, float, float]:
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_pass, *args).result()


def compare(family: str, visual: list[int], work: Path) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Times and peaks of both passes, grouped and per-row; prints them with the ratios."""
    spec = _model(family, work / "models")
    samples = _groups(spec, family, visual)
    path = work / f"samples-{family}.pt"
    torch.save(samples, path)
    prompts = sorted({s.group_id: s.prompt_tokens for s in samples}.items())
    per_row_tokens = sum(s.prompt_tokens + s.response_tokens for s in samples)
    grouped_tokens = sum(p for _, p in prompts) + sum(s.response_tokens for s in samples)
    print(f"\n{family}: {len(prompts)} groups of n={N}, prompts {[p for _, p in prompts]} tokens, responses "
          f"{RESPONSES[0]}-{RESPONSES[1]}; token-count ratio n(P+R)/(P+nR) = {per_row_tokens / grouped_tokens:.2f}x")
    out: dict[str, dict[str, tuple[float, float, float]]] = {}
    for which in ("update", "logprobs"):
        out[which] = {name: _isolated(spec, str(path), name == "grouped", which) for name in ("grouped", "per_row")}
        (tg, cg, mg), (tr, cr, mr) = out[which]["grouped"], out[which]["per_row"]
        print(f"  {which:8s}: wall grouped {tg:7.2f} s, per-row {tr:7.2f} s, {tr / tg:.2f}x faster; CPU grouped "
              f"{cg:7.2f} s, per-row {cr:7.2f} s, {cr / cg:.2f}x less; peak memory grouped {mg:6.0f} MB, "
              f"per-row {mr:6.0f} MB, {mr / max(mg, 1e-9):.2f}x lower")
    return out


def test_grouped_forward_vs_per_row(benchmark, tmp_path) -> None:
    benchmark.pedantic(lambda: compare("qwen2.5-vl", [1000], tmp_path), rounds=1, iterations=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="qwen2.5-vl", choices=["qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5"])
    parser.add_argument("--visual", type=int, nargs="+", default=[1000, 2000, 4000], help="visual tokens per group")
    args = parser.parse_args()
    compare(args.family, args.visual, Path(tempfile.gettempdir()) / "evr1-bench-learner")
