"""The vision tower in passes of a few frames against one call: the same embeddings and gradients, every family."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evr1.models import build_prompt, load_model
from evr1.models.forward import collate, response_hidden
from evr1.models.testing import process_image, process_video, random_frames, tiny_spec
from evr1.models.vision import _passes


def test_passes_cut_videos_at_temporal_patches_and_pack_them_in_order() -> None:
    grid = torch.tensor([[3, 2, 4], [1, 6, 6], [2, 2, 2]])
    assert _passes(grid, 2) == [[(2, 2, 4)], [(1, 2, 4), (1, 6, 6)], [(2, 2, 2)]]
    assert _passes(grid, 10) == [[(3, 2, 4), (1, 6, 6), (2, 2, 2)]]
    assert _passes(grid, 1) == [[(1, 2, 4)], [(1, 2, 4)], [(1, 2, 4)], [(1, 6, 6)], [(1, 2, 2)], [(1, 2, 2)]]


def test_vision_passes_give_the_same_states_and_gradients(fam: str, model_cache: Path, processor) -> None:
    video = process_video(processor, random_frames(fam, 1, frames=10, cells=(2, 3)))  # 5 temporal patches
    image = process_image(processor, random_frames(fam, 2, frames=1, cells=(2, 2))[0])
    prompts = [build_prompt(processor, "what happens", [video, image])]
    responses = [torch.tensor([30, 31, 32])]
    results = []
    for frames in (0, 2):
        model = load_model(tiny_spec(fam, model_cache, vision_frames_per_pass=frames)).train()
        calls: list[int] = []
        model.model.visual.patch_embed.register_forward_hook(lambda *_, seen=calls: seen.append(1))
        hidden, _, _ = response_hidden(model, prompts, responses, 0)
        assert len(calls) == (2 if frames == 0 else 4)  # image and video calls; the video's 5 patches as 2 + 2 + 1
        hidden.sum().backward()
        grads = {n: p.grad for n, p in model.named_parameters() if ".visual." in n and p.grad is not None}
        results.append((hidden.detach(), grads))
    (want, want_grads), (got, got_grads) = results
    assert collate(prompts, 0, model.config).mm["video_grid_thw"][0, 0] == 5
    assert (got - want).abs().max() <= 1e-5
    assert got_grads.keys() == want_grads.keys() and want_grads
    for name, grad in want_grads.items():
        assert (got_grads[name] - grad).norm() <= 1e-4 * grad.norm() + 1e-12, name


def test_vision_passes_must_be_positive(model_cache: Path) -> None:
    from evr1.models.vision import micro_batch_frames

    model = load_model(tiny_spec("qwen2-vl", model_cache))
    with pytest.raises(ValueError, match="must be positive"):
        micro_batch_frames(model.model.visual, 0)
