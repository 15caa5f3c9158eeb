"""A learner micro-step on one prompt and its responses, measured: peak tensor bytes, wall and CPU seconds.

What the planner's validation and the long-video benchmark run: the grouped (or per-row) forward,
log-probs through the head in chunks (or whole), the token-mean loss, the backward and an AdamW
step, as the learner runs them. `measure_step` runs one step to create AdamW's moments, then one
timed step and one step under `PeakMemory` (which slows every operator, so it is not the timed one).
`peak` adds to the step's own peak what was already there and stays: the parameters, the moments
and the prompt's pixels, counted from the tensors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from evr1.models.forward import response_hidden
from evr1.models.grouped import shared_prefix_hidden
from evr1.models.logprobs import token_scores
from evr1.models.peak_memory import PeakMemory
from evr1.models.prompts import Prompt


@dataclass(frozen=True)
class StepMeasurement:
    peak: int  # bytes: the step's peak plus the parameters, optimizer moments and pixels held throughout
    wall: float  # seconds of the timed step
    cpu: float  # this process's CPU seconds of the timed step


def _bytes(tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def measure_step(
    model: Any, prompt: Prompt, responses: list[torch.Tensor], *, grouped: bool = True, chunk_tokens: int = 0
) -> StepMeasurement:
    """Measure a training micro-step of `model` (in train mode) on `prompt` with `responses` (see the module doc)."""
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)

    def step() -> None:
        if grouped:
            hidden, targets, mask = shared_prefix_hidden(model, [prompt], [0] * len(responses), responses, 0)
        else:
            hidden, targets, mask = response_hidden(model, [prompt] * len(responses), responses, 0)
        logprobs, _ = token_scores(model.lm_head, hidden, targets, mask, chunk_tokens=chunk_tokens, entropy="metric")
        (-logprobs.sum() / mask.sum()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    with PeakMemory() as probe:
        step()
    held = _bytes(model.parameters()) + _bytes(prompt.mm.values())
    held += _bytes(t for state in optimizer.state.values() for t in state.values())
    return StepMeasurement(peak=probe.peak + held, wall=wall, cpu=cpu)
