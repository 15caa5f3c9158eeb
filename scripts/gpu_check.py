"""GPU check: the learner and the HF rollout engine on a random-init mid-size Qwen2.5-VL (or Qwen3.5).

A few training steps on synthetic video/image questions, with media read from the tensor cache
and then decoded live, in bf16 with sdpa attention. Prints the step-time breakdown (media,
rollout, learner update, weight sync), rollout and learner tokens/s, peak memory, and the
engine–learner mismatch the learner measures at every step (`mismatch/...`: the HF engine holds
its weights in bf16, the learner float32 weights under bf16 autocast; docs/off_policy.md); `--json`
also writes them to a file. No Ray, no vLLM: torch, transformers and evr1's small dependencies.

Rewards are a seeded random 0/1 per response (z-scored per group): this measures speed and
memory, not learning. `--tiny` runs the same code on CPU with the tiny test model (for tests).

    python scripts/gpu_check.py --json docs/gpu_check.json      # on a CUDA machine
    python scripts/gpu_check.py --tiny --steps 2                # anywhere, in seconds

`--family qwen3.5` checks the hybrid model instead (9 Gated DeltaNet + 3 full-attention layers,
32-pixel patches): the grouped learner on linear-attention states and the HF engine's hybrid cache,
with flash-linear-attention / causal-conv1d kernels where installed, transformers' torch fallback else.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from evr1.data.loader import MediaLoader
from evr1.data.prompting import RecordPrompter
from evr1.data.records import read_records
from evr1.data.synth import generate
from evr1.data.synth_render import Canvas
from evr1.engines import SamplingParams
from evr1.engines.hf import HFEngine
from evr1.models import load_model, load_processor
from evr1.models.tiny import TinyModel
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, CacheSpec, ImageSpec, ModelSpec, OptimSpec, PromptSpec, TrainerSpec, VideoSpec

PHASES = ("media", "rollout", "learn", "sync")
MISMATCH = ("abs_diff_mean", "abs_diff_max", "k1", "k3", "ratio_outside_frac", "chi2_token")  # reported per mode


@dataclass(frozen=True)
class Setup:
    """Model size, media size and batch shape of one check."""

    model: TinyModel
    canvas: Canvas
    video: VideoSpec
    image: ImageSpec
    prompts: int  # per step
    n: int  # responses per prompt
    max_tokens: int
    dtype: str


MID = Setup(  # ~0.4B parameters: a 12-layer 1024-wide LM and a 12-layer 1024-wide vision tower
    model=TinyModel(name="gpucheck-qwen2.5-vl", family="qwen2.5-vl", hidden=1024, layers=12, heads=16,
                    vision_width=1024, vision_depth=12, vocab_size=4096, max_patches=1024,
                    extra={"vision": {"num_heads": 16}}),  # 64-wide heads, as the real towers
    canvas=Canvas(width=448, height=448, fps=4.0, frames=16),
    video=VideoSpec(fps=2.0, max_frames=16, min_pixels=64 * 28 * 28, max_pixels=256 * 28 * 28),
    image=ImageSpec(max_pixels=256 * 28 * 28),
    prompts=8, n=4, max_tokens=128, dtype="bfloat16",
)
MID_QWEN35 = Setup(  # the same widths and depths, hybrid decoder; media sides in 32-pixel units
    model=TinyModel(name="gpucheck-qwen3.5", family="qwen3.5", hidden=1024, layers=12, heads=16,
                    vision_width=1024, vision_depth=12, vocab_size=4096, max_patches=1024,
                    extra={"vision": {"num_heads": 16}}),
    canvas=Canvas(width=448, height=448, fps=4.0, frames=16),
    video=VideoSpec(fps=2.0, max_frames=16, min_pixels=64 * 32 * 32, max_pixels=256 * 32 * 32),
    image=ImageSpec(max_pixels=256 * 32 * 32),
    prompts=8, n=4, max_tokens=128, dtype="bfloat16",
)
TINY_QWEN35 = Setup(
    model=TinyModel(name="tiny-qwen3.5", family="qwen3.5"),
    canvas=Canvas(width=64, height=64, fps=4.0, frames=4),
    video=VideoSpec(fps=4.0, min_frames=4, max_frames=4, min_pixels=64 * 64, max_pixels=64 * 64),
    image=ImageSpec(min_pixels=64 * 64, max_pixels=64 * 64),
    prompts=2, n=2, max_tokens=4, dtype="float32",
)
TINY = Setup(
    model=TinyModel(name="tiny-qwen2.5-vl", family="qwen2.5-vl"),
    canvas=Canvas(width=56, height=56, fps=4.0, frames=4),
    video=VideoSpec(fps=4.0, min_frames=4, max_frames=4, min_pixels=56 * 56, max_pixels=56 * 56),
    image=ImageSpec(min_pixels=56 * 56, max_pixels=56 * 56),
    prompts=2, n=2, max_tokens=4, dtype="float32",
)


def group_advantages(rewards: torch.Tensor, n: int) -> torch.Tensor:
    """GRPO advantages: each reward minus its group's mean, over the group's std (0 for a flat group)."""
    groups = rewards.view(-1, n)
    std = groups.std(dim=1, keepdim=True, unbiased=False)
    return ((groups - groups.mean(dim=1, keepdim=True)) / std.clamp_min(1e-6)).flatten()


def peak_memory_gb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def run_mode(mode: str, records: list, setup: Setup, learner: Learner, engine: HFEngine, processor: Any,
             root: Path, cache_path: Path, steps: int) -> dict[str, Any]:
    """`steps` training steps with media from the cache (`mode="cache"`) or decoded live."""
    cache = CacheSpec(path=str(cache_path), mode="only") if mode == "cache" else CacheSpec(mode="bypass")
    prompter = RecordPrompter(processor, MediaLoader(setup.video, setup.image, cache, processor, root), PromptSpec())
    times: dict[str, list[float]] = {p: [] for p in PHASES}
    mismatch: list[dict[str, float]] = []
    generated = learned = 0
    rng = torch.Generator().manual_seed(0)
    device = learner.device

    def timed(phase: str, fn: Any, *args: Any) -> Any:
        start = time.perf_counter()
        out = fn(*args)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times[phase].append(time.perf_counter() - start)
        return out

    for step in range(steps):
        prompts = timed("media", prompter.many, records[step * setup.prompts : (step + 1) * setup.prompts])
        params = SamplingParams(n=setup.n, max_tokens=setup.max_tokens, seed=step)
        results = timed("rollout", engine.generate, prompts, params)
        advantages = group_advantages(torch.randint(0, 2, (len(results),), generator=rng).float(), setup.n)
        samples = [
            Sample(prompt=prompts[r.prompt_index], response_ids=r.token_ids, behaviour_logprobs=r.logprobs,
                   advantages=torch.full((len(r),), float(a)), group_id=r.prompt_index)
            for r, a in zip(results, advantages)
        ]
        metrics = timed("learn", learner.update, samples)
        timed("sync", lambda: engine.load_weights(learner.weights()))
        mismatch.append({k[len("mismatch/") :]: v for k, v in metrics.items() if k.startswith("mismatch/") and k.count("/") == 1})
        generated += sum(len(r) for r in results)
        learned += int(metrics["tokens"])
        prompter.forget()
    return {"times": times, "generated_tokens": generated, "learner_tokens": learned, "mismatch": mismatch}


def summary(mode: str, run: dict[str, Any]) -> dict[str, float]:
    """Medians per phase (the first step warms up and is left out when there are more)."""
    times = {p: v[1:] if len(v) > 1 else v for p, v in run["times"].items()}
    row = {p: statistics.median(v) for p, v in times.items()}
    row["step"] = sum(row.values())
    total = {p: sum(run["times"][p]) for p in PHASES}
    row["rollout_tokens_per_s"] = run["generated_tokens"] / max(total["rollout"], 1e-9)
    row["learner_tokens_per_s"] = run["learner_tokens"] / max(total["learn"], 1e-9)
    for name in MISMATCH:  # means over the steps (the max: over the steps)
        values = [step[name] for step in run["mismatch"] if name in step]
        if values:
            row[f"mismatch_{name}"] = max(values) if name.endswith("_max") else statistics.mean(values)
    return row


def check(setup: Setup, steps: int, device: torch.device, workdir: Path) -> dict[str, Any]:
    """Build model, data and cache under `workdir`, run both modes, return the figures."""
    from evr1.data.cache_build import build_cache

    model_dir = setup.model.materialize(workdir / "models")
    spec = ModelSpec(name=str(model_dir), dtype=setup.dtype, attn_implementation="sdpa")
    processor = load_processor(spec)
    data = generate(workdir / "data", tasks=("quickstart",), n_train=setup.prompts * steps, n_val=0, canvas=setup.canvas)
    records = list(read_records(data.train))
    cache_path = workdir / "cache.lmdb"
    start = time.perf_counter()
    build_cache(records, video=setup.video, image=setup.image, cache=CacheSpec(path=str(cache_path)),
                processor=processor, data_root=data.root, progress=False)
    cache_build_s = time.perf_counter() - start

    trainer = TrainerSpec(steps=2 * steps, micro_batch_tokens=16_384)
    learner = Learner.from_spec(spec, AlgoSpec(), OptimSpec(lr=1e-6), trainer, device=device)
    engine = HFEngine(load_model(spec, device=device), processor)
    engine.load_weights(learner.weights())
    run_mode("live", records, setup, learner, engine, processor, data.root, cache_path, 1)  # warm-up, not timed
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    modes = {mode: summary(mode, run_mode(mode, records, setup, learner, engine, processor, data.root, cache_path, steps))
             for mode in ("cache", "live")}
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "parameters_m": sum(p.numel() for p in learner.model.parameters()) / 1e6,
        "dtype": setup.dtype, "attention": "sdpa", "steps": steps, "prompts": setup.prompts, "n": setup.n,
        "max_tokens": setup.max_tokens, "cache_build_s": cache_build_s, "modes": modes,
        "peak_memory_gb": peak_memory_gb(device),
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        (
            f"gpu check on {result['device']} (torch {result['torch']}): {result['parameters_m']:.1f}M parameters, "
            f"{result['dtype']} + {result['attention']}, {result['steps']} steps x {result['prompts']} prompts x "
            f"n={result['n']}, <= {result['max_tokens']} new tokens; cache built in {result['cache_build_s']:.1f} s"
        ),
        "median seconds per phase, by where the media come from:",
        f"{'mode':>6} " + " ".join(f"{p:>9}" for p in (*PHASES, "step")) + "  rollout tok/s  learner tok/s",
    ]
    for mode, row in result["modes"].items():
        cells = " ".join(f"{row[p]:9.3f}" for p in (*PHASES, "step"))
        lines.append(f"{mode:>6} {cells}  {row['rollout_tokens_per_s']:13.1f}  {row['learner_tokens_per_s']:13.1f}")
    live, cached = result["modes"]["live"]["step"], result["modes"]["cache"]["step"]
    lines.append(f"step live/cache: {live / max(cached, 1e-9):.2f}x; peak memory {result['peak_memory_gb']:.2f} GiB")
    cache = result["modes"]["cache"]
    if "mismatch_k3" in cache:
        lines.append(
            f"engine-learner mismatch ({result['dtype']} engine vs float32 learner weights): "
            + ", ".join(f"{name} {cache[f'mismatch_{name}']:.3g}" for name in MISMATCH if f"mismatch_{name}" in cache)
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="the tiny test model on CPU (a smoke test of this script)")
    parser.add_argument("--steps", type=int, default=4, help="training steps per media mode")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--workdir", type=Path, help="where model, data and cache go (default: a temporary folder)")
    parser.add_argument("--family", choices=["qwen2.5-vl", "qwen3.5"], default="qwen2.5-vl", help="the model family")
    args = parser.parse_args(argv)
    hybrid = args.family == "qwen3.5"
    if args.tiny:
        setup, device = (TINY_QWEN35 if hybrid else TINY), torch.device("cpu")
    elif torch.cuda.is_available():
        setup, device = (MID_QWEN35 if hybrid else MID), torch.device("cuda")
    else:
        print("gpu_check: no CUDA GPU here; run with --tiny for the CPU smoke test", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="evr1-gpu-check-") as tmp:
        result = check(setup, args.steps, device, args.workdir or Path(tmp))
    print(report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
