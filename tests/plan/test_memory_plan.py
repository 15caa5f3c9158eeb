"""The memory planner against measured peaks: a grid of small float32 configs on CPU, within 15%.

Each config is a real learner micro-step on a random-init model built by the tiny-model factory:
the grouped (or per-row) forward of one video prompt and its responses, log-probs through the
head in chunks (or whole), a loss, the backward, AdamW's step. `PeakMemory` counts the tensor
bytes the step allocates at its peak (the second step, so AdamW's moments exist already); the
parameters, moments and pixels that were already there are added by counting them (`measure_step`). The prediction is
`evr1.plan.memory.estimate` from the model's config and the prompt's shape alone. The grid
printed (`pytest -s`) is the README's table.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Case:
    family: str
    hidden: int
    layers: int
    frames: int
    n: int
    checkpointing: bool = False
    grouped: bool = True
    chunk: int = 16


GRID = (
    Case("qwen2.5-vl", 64, 2, 8, 4),
    Case("qwen2.5-vl", 64, 2, 32, 4),
    Case("qwen2.5-vl", 128, 4, 16, 4),
    Case("qwen2.5-vl", 128, 4, 16, 4, checkpointing=True),
    Case("qwen2.5-vl", 64, 2, 16, 4, grouped=False),
    Case("qwen2.5-vl", 64, 2, 16, 8, chunk=0),
    Case("qwen2-vl", 96, 3, 16, 4),
    Case("qwen2-vl", 96, 3, 16, 4, checkpointing=True),
    Case("qwen3-vl", 96, 3, 16, 4),
    Case("qwen3-vl", 96, 3, 32, 2, checkpointing=True),
)
RESPONSE_TOKENS = 24


def _measure(case: Case, cache: Path) -> tuple[float, Workload, dict]:
    tiny = TinyModel(name=f"plan-{case.family}-{case.hidden}-{case.layers}", family=case.family, hidden=case.hidden,
                     layers=case.layers, heads=4, seed=5, max_patches=1024)
    spec = ModelSpec(name=str(tiny.materialize(cache)), dtype="float32", gradient_checkpointing=case.checkpointing)
    model, processor = load_model(spec).train(), load_processor(spec)
    video = process_video(processor, random_frames(case.family, 1, frames=case.frames, cells=(4, 4)))
    prompt = build_prompt(processor, "what happens in the video", [video])
    g = torch.Generator().manual_seed(0)
    responses = [torch.randint(20, 300, (RESPONSE_TOKENS,), generator=g) for _ in range(case.n)]
    measured = measure_step(model, prompt, responses, grouped=case.grouped, chunk_tokens=case.chunk)
    patches = int(video["video_grid_thw"][0, 0])
    visual = int(video["video_grid_thw"].prod()) // model.config.vision_config.spatial_merge_size**2
    work = Workload(
        frames=2 * patches, tokens_per_patch=visual // patches, text_tokens=len(prompt) - visual, n=case.n,
        response_tokens=RESPONSE_TOKENS, micro_batch_tokens=1 << 20, compute_bytes=4,
        checkpointing=case.checkpointing, grouped=case.grouped, chunk_tokens=case.chunk,
    )
    return measured.peak, work, model.config.to_dict()


@pytest.mark.slow
def test_predicted_peak_is_within_15_percent_of_the_measured_one(model_cache: Path) -> None:
    rows, misses = [], []
    for case in GRID:
        measured, work, config = _measure(case, model_cache)
        predicted = estimate(from_config(config), work)
        ratio = predicted.total / measured
        rows.append((case, work.prompt_tokens, measured, predicted, ratio))
        if not 0.85 <= ratio <= 1.15:
            misses.append(case)
    print("\nfamily      h  L frames  n ckpt grouped chunk prompt  measured MiB  predicted MiB  ratio   (largest terms)")
    for case, prompt, measured, predicted, ratio in rows:
        top = sorted(predicted.terms.items(), key=lambda kv: -kv[1])[:3]
        print(f"{case.family:<10} {case.hidden:>3} {case.layers:>2} {case.frames:>6} {case.n:>2} {case.checkpointing!s:>5}"
              f" {case.grouped!s:>7} {case.chunk:>5} {prompt:>6} {measured / 2**20:>13.2f} {predicted.total / 2**20:>14.2f}"
              f" {ratio:>6.2f}   " + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in top))
    assert not misses, misses
