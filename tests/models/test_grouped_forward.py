"""The shared-prefix forward against the per-row one: same log-probs and gradients, every family.

Float32, a random-init model a little larger than the default tiny one, prompts with longer
videos (and an image, and none), groups of several sizes whose responses have different lengths
(one of a single token). Acceptance: per-token log-probs within 1e-5, each parameter's summed
gradient within 1e-4 relative (its norm), with and without HF gradient checkpointing.

Qwen3.5 (hybrid: two Gated DeltaNet layers, then a full-attention one) meets that for every
parameter but those on the path of the linear layers' decay (`A_log`, `dt_bias`, `in_proj_a`), held
to 2e-3 plus 1e-7 (`gradient_bound`; measured here: 4.4e-4 relative): their gradients go through
transformers' float32 chunked delta rule, whose triangular solve loses about 3e-4 of them between
HF's own padded batch and single rows of the same inputs. Measured once with that kernel patched to
float64: batched vs single rows 1e-12, grouped vs single rows 2e-7 (the float32 casts elsewhere in
the layer), so the grouped states are exact and the gap is the kernel's rounding, which a chunk
boundary moved by the split changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evr1.models import build_prompt, load_model, load_processor
from evr1.models.forward import gather_logprobs, response_logits
from evr1.models.grouped import shared_prefix_logits
from evr1.models.testing import gradient_bound, process_image, process_video, random_frames
from evr1.models.tiny import TinyModel
from evr1.specs import ModelSpec

RESPONSES = ((5, 1, 7), (3, 6), (4,))  # per group: the response lengths (n = 3, 2 and 1)


def _mid(fam: str, cache: Path) -> tuple[ModelSpec, object]:
    """A 3-layer model (vision tower 2 layers) of `fam`, built with the tiny-model factory."""
    model = TinyModel(name=f"mid-{fam}", family=fam, hidden=96, layers=3, heads=4, seed=3, max_patches=256)
    spec = ModelSpec(name=str(model.materialize(cache)), dtype="float32")
    return spec, load_processor(spec)


@pytest.fixture(scope="module")
def mid(fam: str, model_cache: Path) -> tuple[ModelSpec, object]:
    return _mid(fam, model_cache)


def _prompts(fam: str, processor) -> list:
    long_video = process_video(processor, random_frames(fam, 1, frames=16, cells=(4, 4)))
    short_video = process_video(processor, random_frames(fam, 2, frames=4, cells=(2, 2)))
    image = process_image(processor, random_frames(fam, 3, frames=1, cells=(2, 3))[0])
    return [
        build_prompt(processor, "what happens in the video", [long_video]),
        build_prompt(processor, "compare them", [short_video, image]),
        build_prompt(processor, "a question with no media at all", []),
    ]


def _rows(prompts: list) -> tuple[list[int], list[torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    owner = [p for p, lengths in enumerate(RESPONSES) for _ in lengths]
    responses = [torch.randint(20, 300, (n,), generator=g) for lengths in RESPONSES for n in lengths]
    return owner, responses


def _logprobs_and_grads(model, logits, targets, mask, weights):
    logprobs = gather_logprobs(logits, targets).masked_fill(~mask, 0.0)
    model.zero_grad(set_to_none=True)
    (logprobs * weights).sum().backward()
    return logprobs.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_grouped_forward_matches_per_row(fam: str, mid) -> None:
    _check_against_per_row(fam, *mid, checkpointing=False)


@pytest.mark.parametrize("family", ["qwen3-vl", "qwen3.5"])
def test_grouped_forward_matches_per_row_under_gradient_checkpointing(family: str, model_cache: Path) -> None:
    """HF drops a checkpointed layer's cache in training; the grouped forward keeps its own (Qwen3-VL: deepstack;
    Qwen3.5: the recorded conv and recurrent states)."""
    _check_against_per_row(family, *_mid(family, model_cache), checkpointing=True)



def _check_against_per_row(fam: str, spec: ModelSpec, processor, *, checkpointing: bool) -> None:
    model = load_model(spec.model_copy(update={"gradient_checkpointing": checkpointing})).train()
    assert model.is_gradient_checkpointing == checkpointing
    prompts = _prompts(fam, processor)
    assert len(prompts[0]) > 150  # a long video prompt against responses of a few tokens
    owner, responses = _rows(prompts)

    per_row = response_logits(model, [prompts[o] for o in owner], responses, 0)
    grouped = shared_prefix_logits(model, prompts, owner, responses, 0)
    assert torch.equal(per_row[1], grouped[1]) and torch.equal(per_row[2], grouped[2])  # targets, mask
    weights = torch.randn(per_row[1].shape, generator=torch.Generator().manual_seed(1))
    want_lp, want_grads = _logprobs_and_grads(model, *per_row, weights)
    got_lp, got_grads = _logprobs_and_grads(model, *grouped, weights)

    assert (got_lp - want_lp).abs().max() <= 1e-5
    assert got_grads.keys() == want_grads.keys()
    assert any(".visual." in n for n in want_grads) and len(want_grads) == len(list(model.parameters()))
    for name, want in want_grads.items():
        assert (got_grads[name] - want).norm() <= gradient_bound(name, want), name


def test_grouped_forward_tempers_and_handles_one_token_responses(fam: str, mid) -> None:
    spec, processor = mid
    model = load_model(spec).eval()
    prompts = _prompts(fam, processor)[1:]
    responses = [torch.tensor([40]), torch.tensor([41]), torch.tensor([42, 43])]
    with torch.no_grad():
        per_row, _, mask = response_logits(model, [prompts[0], prompts[0], prompts[1]], responses, 0, temperature=0.7)
        grouped, _, _ = shared_prefix_logits(model, prompts, [0, 0, 1], responses, 0, temperature=0.7)
    assert mask.tolist() == [[True, False], [True, False], [True, True]]
    assert (grouped - per_row)[mask].abs().max() <= 1e-5
    assert torch.equal(grouped[0, 0], grouped[1, 0])  # one prompt pass feeds both first tokens


def test_grouped_forward_checks_its_rows(mid) -> None:
    spec, processor = mid
    model = load_model(spec)
    prompt = build_prompt(processor, "q", [])
    with pytest.raises(ValueError, match="2 owners but 1 responses"):
        shared_prefix_logits(model, [prompt], [0, 0], [torch.tensor([30])], 0)
