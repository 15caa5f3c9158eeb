"""The vision tower micro-batched over frames: at most `frames_per_pass` temporal patches per call.

Every Qwen-VL tower attends within one temporal patch (a frame pair) only: its attention runs
over `cu_seqlens` cut at each temporal patch of each image or video (Qwen2.5-VL's windows lie
inside those), its rotary and learned position embeddings depend on the patch's height and width
only, and its merger and Qwen3-VL's deepstack mergers act per merged patch. So running the tower
on runs of temporal patches and concatenating the outputs in order gives the same embeddings as
one call over all of them: the passes are exact, and the tower's transient memory (attention
scores, MLP intermediates; all of it without gradients) is that of one pass instead of the video.
"""

from __future__ import annotations

from typing import Any

import torch


def _passes(grid_thw: torch.Tensor, frames: int) -> list[list[tuple[int, int, int]]]:
    """`grid_thw` rows cut into pieces of at most `frames` temporal patches, packed in order into passes."""
    passes: list[list[tuple[int, int, int]]] = [[]]
    room = frames
    for t, h, w in grid_thw.tolist():
        while t > 0:
            if room == 0:
                passes.append([])
                room = frames
            take = min(t, room)
            passes[-1].append((take, h, w))
            room -= take
            t -= take
    return passes


def micro_batch_frames(visual: torch.nn.Module, frames: int) -> None:
    """Make `visual` (a Qwen-VL tower, `model.model.visual`) run at most `frames` temporal patches a call.

    Its outputs keep `pooler_output` (and Qwen3-VL's `deepstack_features`), concatenated over the
    passes; `last_hidden_state` (per patch, unused by the models) is None when the call was split.
    """
    if frames <= 0:
        raise ValueError(f"frames per vision pass must be positive, got {frames}")
    whole = type(visual).forward.__get__(visual)

    def forward(hidden_states: torch.Tensor, grid_thw: torch.Tensor, **kwargs: Any) -> Any:
        passes = _passes(grid_thw, frames)
        if len(passes) == 1:
            return whole(hidden_states, grid_thw=grid_thw, **kwargs)
        outs, start = [], 0
        for pieces in passes:
            grid = torch.tensor(pieces, dtype=grid_thw.dtype, device=grid_thw.device)
            stop = start + int(grid.prod(-1).sum())
            outs.append(whole(hidden_states[start:stop], grid_thw=grid, **kwargs))
            start = stop
        merged = {"pooler_output": torch.cat([o.pooler_output for o in outs])}
        if getattr(outs[0], "deepstack_features", None) is not None:
            levels = zip(*(o.deepstack_features for o in outs))
            merged["deepstack_features"] = [torch.cat(level) for level in levels]
        return type(outs[0])(**merged)

    visual.forward = forward
