"""`evr1 plan NAME`: the predicted peak memory of one learner GPU for an experiment, and what fits."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Annotated

import typer

from evr1.errors import ConfigError

_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_memory(text: str) -> float:
    """Bytes of a size such as "80GB", "141 GB", "24GiB" or "512MiB" (GB = 10^9, GiB = 2^30)."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if found is None or found.group(2).lower() not in _UNITS:
        raise ConfigError(f"--gpu-memory {text!r}: give a size such as 80GB, 141GB or 24GiB")
    return float(found.group(1)) * _UNITS[found.group(2).lower()]


def plan(
    name: Annotated[str, typer.Argument(help="NAME[:VARIANT] of the experiment.")],
    overrides: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a field: PATH=VALUE.")] = None,
    gpu_memory: Annotated[str, typer.Option(help="Memory of one learner GPU, e.g. 80GB or 141GB.")] = "80GB",
    frames: Annotated[int | None, typer.Option(help="Plan this many frames instead of the experiment's.")] = None,
    text_tokens: Annotated[int, typer.Option(help="Text tokens of the prompt around the video.")] = 256,
    headroom: Annotated[float, typer.Option(help="Share of the GPU kept free for the allocator, NCCL, CUDA.")] = 0.1,
) -> None:
    """Predict the peak memory of one learner GPU (by term), the most frames that fit, and what to change."""
    from evr1.cli.experiments import _resolve, console
    from evr1.plan.architecture import architecture
    from evr1.plan.experiment import tokens_per_patch, video_frames, workload_of
    from evr1.plan.memory import GiB, advice, estimate, largest_frames

    if not 0 <= headroom < 1:
        raise ConfigError(f"--headroom must be in [0, 1), got {headroom}")
    _, _, _, experiment = _resolve(name, overrides)
    budget = parse_memory(gpu_memory) * (1 - headroom)
    arch = architecture(experiment.model)
    work = workload_of(experiment, arch, frames=frames, text_tokens=text_tokens)
    result = estimate(arch, work)
    mode = "fsdp" if work.fsdp else "replicated"
    console.print(f"[bold]plan: {experiment.model.name}[/bold] ({arch.params / 1e9:.2f}B parameters, {arch.family})")
    print(f"  step: {work.frames} frames x {work.tokens_per_patch} tokens per frame pair = {work.prompt_tokens:,} prompt "
          f"tokens, n={work.n} x {work.response_tokens} response tokens, {work.rows_per_micro_batch} rows per micro-batch")
    print(f"  learners: dp={work.dp} ({mode}) x sp=1, {'bf16' if work.compute_bytes == 2 else 'fp32'} compute, "
          f"checkpointing {'on' if work.checkpointing else 'off'}, grouped forward {'on' if work.grouped else 'off'}, "
          f"log-prob chunk {work.chunk_tokens or 'off'}, lora {'on' if work.lora_params else 'off'}")
    print("  predicted peak per learner GPU (a prediction, not a measurement):")
    for term, size in result.terms.items():
        print(f"    {term:<16} {size / GiB:>9.2f} GiB")
    print(f"    {'total':<16} {result.total / GiB:>9.2f} GiB  of {budget / GiB:.1f} GiB usable ({gpu_memory}, "
          f"{headroom:.0%} headroom): {'fits' if result.total <= budget else 'does NOT fit'}")
    most = largest_frames(arch, lambda f: replace(work, frames=f, tokens_per_patch=tokens_per_patch(
        experiment, arch, f)), budget)
    print(f"  largest frame count that fits: {most:,}" + (f" (the experiment asks {video_frames(experiment)})"
                                                       if frames is None else ""))
    for line in advice(arch, work, budget):
        print(f"  to fit: {line}")
