"""Peak memory and step time against video length, log-probs through the head in chunks vs the whole logits.

A random-init Qwen2.5-VL-shaped model (hidden 128, 4 layers, a 2-block vision tower) with Qwen's
vocabulary size (151,936 rows in the head, as the 7B has), a generated video prompt of 16 to 128
frames at 112x112 px (16 merged tokens a frame pair), n = 8 responses of 128 tokens, the grouped
forward. Each point is one learner micro-step (`evr1.plan.measure.measure_step`: forward, log-probs,
loss, backward, AdamW): its peak tensor bytes (`PeakMemory`, parameters and AdamW moments included)
and its wall and CPU seconds, with log-prob chunks of 256 tokens and without (the whole
`[tokens, vocab]` logits), side by side, with their ratio and the planner's prediction.
Sequence-parallel rows come with sequence parallelism (issue #31, item 1).

Run: `python benchmarks/bench_long_video.py [--frames 16 64 128]` (or pytest ... -s --benchmark-only).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pytest
import torch

from evr1.models import build_prompt, load_model, load_processor
from evr1.models.testing import process_video, random_frames
from evr1.models.tiny import TinyModel
from evr1.plan.architecture import from_config
from evr1.plan.measure import measure_step
from evr1.plan.memory import Workload, estimate
from evr1.specs import ModelSpec

VOCAB, N, RESPONSE_TOKENS, FRAMES = 151_936, 8, 128, (16, 64, 128)
CHUNK = 256  # of the 1,024 response tokens (the default, 1,024, would be one chunk here)
MODEL = TinyModel(name="bench-long-video", family="qwen2.5-vl", hidden=128, layers=4, heads=4, seed=0,
                  max_patches=1024, extra={"text": {"vocab_size": VOCAB}})


def measure(frames: tuple[int, ...] = FRAMES, work: Path | None = None) -> list[tuple]:
    """Per frame count and chunk setting: (frames, prompt tokens, chunk, measurement, predicted bytes)."""
    work = work or Path(tempfile.gettempdir()) / "evr1-bench-long-video"
    spec = ModelSpec(name=str(MODEL.materialize(work)), dtype="float32")
    model, processor = load_model(spec).train(), load_processor(spec)
    arch = from_config(model.config.to_dict())
    g = torch.Generator().manual_seed(0)
    responses = [torch.randint(20, 300, (RESPONSE_TOKENS,), generator=g) for _ in range(N)]
    rows = []
    for count in frames:
        video = process_video(processor, random_frames("qwen2.5-vl", 1, frames=count, cells=(4, 4)))
        prompt = build_prompt(processor, "what happens in the video", [video])
        patches = int(video["video_grid_thw"][0, 0])
        visual = int(video["video_grid_thw"].prod()) // 4
        for chunk in (CHUNK, 0):
            step = measure_step(model, prompt, responses, chunk_tokens=chunk)
            planned = Workload(frames=count, tokens_per_patch=visual // patches, text_tokens=len(prompt) - visual, n=N,
                               response_tokens=RESPONSE_TOKENS, micro_batch_tokens=1 << 20, compute_bytes=4,
                               chunk_tokens=chunk)
            rows.append((count, len(prompt), chunk, step, estimate(arch, planned).total))
    return rows


def report(rows: list[tuple]) -> str:
    mib = 2**20
    lines = [f"n={N} x {RESPONSE_TOKENS} response tokens, vocab {VOCAB:,}, grouped forward; chunk {CHUNK} vs whole logits",
             "frames  prompt  chunk   peak MiB  predicted MiB  wall s   CPU s"]
    for count, prompt, chunk, step, predicted in rows:
        lines.append(f"{count:>6} {prompt:>7} {chunk or 'off':>6} {step.peak / mib:>10.0f} {predicted / mib:>14.0f}"
                     f" {step.wall:>7.2f} {step.cpu:>7.2f}")
    by = {(r[0], r[2]): r[3] for r in rows}
    for count in sorted({r[0] for r in rows}):
        on, off = by[(count, CHUNK)], by[(count, 0)]
        lines.append(f"  {count} frames: peak whole/chunked {off.peak / on.peak:.2f}x, "
                     f"wall whole/chunked {off.wall / on.wall:.2f}x, CPU {off.cpu / on.cpu:.2f}x")
    return "\n".join(lines)


@pytest.mark.benchmark(group="long-video")
def test_memory_and_time_against_video_length(benchmark, capsys) -> None:
    rows = benchmark.pedantic(measure, args=(FRAMES[:2],), rounds=1, iterations=1)
    with capsys.disabled():
        print("\n" + report(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="peak memory and step time against video length")
    parser.add_argument("--frames", type=int, nargs="+", default=list(FRAMES))
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(report(measure(tuple(args.frames))))
