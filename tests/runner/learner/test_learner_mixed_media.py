"""One micro-batch of video, image, video + image and text-only rows, through every model family:
each row's log-probs are what it gets alone (no row sees another's pixels or positions), and one
update trains the vision tower from both media kinds."""

from __future__ import annotations

import torch

from evr1.models import build_prompt
from evr1.models.testing import process_image, process_video, random_frames
from evr1.runner.learner.batching import Sample, micro_batches
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, OptimSpec, TrainerSpec

FIRST_ORDINARY_ID = 20  # ids below are special tokens of the tiny tokenizers


def _samples(processor, fam: str) -> list[Sample]:
    def video(seed: int) -> dict:
        return process_video(processor, random_frames(fam, seed, frames=4, cells=(2, 2 + seed % 2)))

    def image(seed: int) -> dict:
        return process_image(processor, random_frames(fam, seed, frames=1, cells=(2 + seed % 2, 2))[0])

    prompts = [
        build_prompt(processor, "what moves?", [video(1)]),
        build_prompt(processor, "what is drawn?", [image(2)]),
        build_prompt(processor, "same colour in both?", [video(3), image(4)]),
        build_prompt(processor, "two plus two?", []),
    ]
    g = torch.Generator().manual_seed(0)
    return [
        Sample(prompt=p, response_ids=torch.randint(FIRST_ORDINARY_ID, 300, (3 + i,), generator=g),
               advantages=torch.randn(3 + i, generator=g), group_id=i // 2)
        for i, p in enumerate(prompts)
    ]


def test_mixed_media_rows_share_a_micro_batch_in_every_family(fam: str, spec, processor) -> None:
    torch.manual_seed(0)
    samples = _samples(processor, fam)
    assert len(micro_batches(samples, 100_000)) == 1
    learner = Learner.from_spec(spec, AlgoSpec(), OptimSpec(lr=1e-2, grad_clip=1.0), TrainerSpec(micro_batch_tokens=100_000))

    together = learner.compute_logprobs(samples)
    for i, sample in enumerate(samples):
        [alone] = learner.compute_logprobs([sample])
        assert torch.allclose(together[i], alone, atol=1e-5), f"row {i} changes when batched with the others"

    visual = {k: v.clone() for k, v in learner.model.state_dict().items() if "visual" in k}
    metrics = learner.update(samples)
    assert metrics["skipped_steps"] == 0
    moved = [k for k, v in learner.model.state_dict().items() if "visual" in k and not torch.equal(v, visual[k])]
    assert moved, "the vision tower got no update from the media rows"
