"""Two FSDP2-sharded CPU learner workers (gloo) train on shards of different modalities without hanging.

FSDP2 reduce-scatters the gradients of the parameters a backward reached; a worker whose
micro-batch has no media reaches no vision parameter, so without `vision_anchor` the workers'
collectives differ (gloo: a size mismatch; NCCL: a hang). For Qwen2.5-VL, Qwen3-VL (deepstack
mergers) and Qwen3.5 (hybrid layers; the gradients on its linear-attention decay path to
`gradient_bound`'s wider bound, a float32-kernel noise floor), one spawn runs every scenario of
`SCENARIOS` on two sharded workers with the grouped forward (the default: two FSDP forward calls per
micro-batch); each must finish within the timeout and give what one unsharded learner forwarding every row whole gives on the whole batch: the same
metrics, every optimizer step's gradients within 1e-4 relative, and the same weights to `STEP_ATOL`.
AdamW's `eps` is 1e-5 here: at the default 1e-8 AdamW divides a gradient entry of about 1e-8 (float
noise beside entries of 0.05 in the same row) by about itself, so two exact computations summed in
another order can step such an entry by +lr or -lr (measured: 9e-4 on one embedding entry of the
tiny Qwen3-VL, sharded grouped against one grouped or one per-row learner alike).
A sharded checkpoint (gathered full state) must resume exactly, sharded or not.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import torch
from torch.multiprocessing.spawn import ProcessException

from evr1.models import build_prompt, load_processor
from evr1.models.prompts import Prompt
from evr1.models.testing import gradient_bound, process_image, process_video, random_frames, tiny_spec
from evr1.runner.learner import distributed
from evr1.runner.learner.batching import Sample, mini_batches, prefix_micro_batches, share_prompts
from evr1.runner.learner.distributed import free_port
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, OptimSpec, TrainerSpec

from .learner_fixtures import FIRST_ORDINARY_ID, run_workers

FAMILIES = ("qwen2.5-vl", "qwen3-vl", "qwen3.5")
LR = 1e-3
STEP_ATOL = 2e-2 * LR
EPS = 1e-5  # AdamW's (see the module docstring)
TRAINER = {"micro_batch_tokens": 100, "mini_batches": 2}  # two grouped passes for two video groups
# name: (kinds of the global batch (v/i/t), worker 0's indices); groups of 2, mini-batch = group id parity
SCENARIOS = {
    "video_vs_text": ("vvtt", [0, 1]),  # mini-batch 1 is text-only on both workers: no vision update
    "video_vs_image": ("vvii", [0, 1]),
    "video_vs_mixed": ("vvvvit", [0, 1, 2, 3]),  # worker 1: one image row, one text row
    "uneven_passes": ("vvvvvvtttt", [0, 1, 2, 3, 4, 5]),  # mini-batch 0: 2 video passes vs 1 text pass
    "one_empty": ("vivt", [0, 1, 2, 3]),  # worker 1 has no sample: it joins with blank passes
}
RESUME = ("video_vs_mixed", "video_vs_text")  # first step, checkpoint, then second step
TIMEOUT_S = 420


def make_samples(processor, fam: str, kinds: str, seed: int) -> list[Sample]:
    """One sample per letter of `kinds` (v: a video, i: an image, t: text only), two per group.

    Rows of a group with the same kind share their prompt (the grouped forward computes it once);
    a group of two kinds has two prompts (its second row is forwarded per-row, a counted fallback).
    """
    g = torch.Generator().manual_seed(seed)
    prompts: dict[tuple[int, str], Prompt] = {}
    samples = []
    for i, kind in enumerate(kinds):
        group = i // 2
        if (group, kind) not in prompts:
            media = []
            if kind == "v":
                media = [process_video(processor, random_frames(fam, seed + i, frames=4, cells=(2, 2 + group % 2)))]
            elif kind == "i":
                media = [process_image(processor, random_frames(fam, seed + i, frames=1, cells=(2 + group % 2, 2))[0])]
            question = " ".join(["what", "is", "shown"][: 1 + group % 3])
            prompts[group, kind] = build_prompt(processor, question, media)
        length = 3 + i % 4
        samples.append(
            Sample(
                prompt=prompts[group, kind],
                response_ids=torch.randint(FIRST_ORDINARY_ID, 300, (length,), generator=g),
                advantages=torch.randn(length, generator=g),
                group_id=group,
            )
        )
    return samples


def scenario(processor, fam: str, name: str, rank: int | None = None) -> list[Sample]:
    """The scenario's global batch, or worker `rank`'s shard of it."""
    kinds, first = SCENARIOS[name]
    samples = make_samples(processor, fam, kinds, seed=11 + sorted(SCENARIOS).index(name))
    if rank is None:
        return samples
    return [s for i, s in enumerate(samples) if (i in first) == (rank == 0)]


def learner(spec, *, fsdp: bool, world_size: int = 1, rank: int = 0, **trainer_fields) -> Learner:
    trainer = TrainerSpec(**{**TRAINER, **trainer_fields})
    return Learner.from_spec(
        spec, AlgoSpec(), OptimSpec(lr=LR, grad_clip=1.0, eps=EPS), trainer, rank=rank, world_size=world_size,
        fsdp=fsdp,
    )


def keep_gradients(learner: Learner) -> list[dict[str, torch.Tensor]]:
    """The whole gradient of every parameter before each optimizer step (gathered from shards under FSDP)."""
    steps: list[dict[str, torch.Tensor]] = []

    def keep(*_: object) -> None:
        grads = {n: p.grad for n, p in learner.model.named_parameters() if p.grad is not None}
        steps.append({n: (g.full_tensor() if hasattr(g, "full_tensor") else g).clone() for n, g in grads.items()})

    learner.optimizer.register_step_pre_hook(keep)
    return steps


def fsdp_worker(rank: int, world_size: int, address: str, cache_dir: str, out_dir: str) -> None:
    """One sharded worker: every family's scenarios, then a checkpoint and a resumed step."""
    torch.set_num_threads(1)
    out = Path(out_dir)
    try:
        distributed.init_process_group(rank, world_size, address, backend="gloo", timeout_s=90)
        for fam in FAMILIES:
            spec = tiny_spec(fam, cache_dir)
            processor = load_processor(spec)
            for name in SCENARIOS:
                sharded = learner(spec, fsdp=True, rank=rank, world_size=world_size)
                assert sharded.grouped
                kept = keep_gradients(sharded)
                metrics = sharded.update(scenario(processor, fam, name, rank))
                grads = list(kept)  # this update's steps (the resumed step below adds more)
                weights = sharded.weights()
                if name == RESUME[0]:
                    sharded.save(str(out / f"{fam}-ckpt"))
                    # rank 0 writes after the collective gather: every rank waits for it (as the driver waits for
                    # every worker's save before any load) instead of racing it to the files
                    torch.distributed.barrier()
                    resumed = learner(spec, fsdp=True, rank=rank, world_size=world_size)
                    resumed.load(str(out / f"{fam}-ckpt"))
                    second = scenario(processor, fam, RESUME[1], rank)
                    sharded.update(second)
                    resumed.update(second)
                    torch.save({"uninterrupted": sharded.weights(), "resumed": resumed.weights()},
                               out / f"{fam}-resume-{rank}.pt")  # fmt: skip
                torch.save({"weights": weights, "metrics": metrics, "grads": grads}, out / f"{fam}-{name}-{rank}.pt")
    except BaseException:
        (out / f"error-{rank}.txt").write_text(traceback.format_exc())
        raise
    finally:
        distributed.destroy_process_group()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fsdp-models")


@pytest.fixture(scope="module")
def two_sharded_workers(cache_dir, tmp_path_factory) -> Path:
    for fam in FAMILIES:  # build the tiny models once, before the workers race to
        load_processor(tiny_spec(fam, cache_dir))
    out = tmp_path_factory.mktemp("fsdp-modalities")
    try:
        run_workers(2, f"127.0.0.1:{free_port()}", str(cache_dir), str(out), TIMEOUT_S, worker=fsdp_worker)
    except (ProcessException, pytest.fail.Exception) as exc:  # a worker died, or they hung
        errors = "\n".join(p.read_text() for p in out.glob("error-*.txt"))
        raise AssertionError(f"sharded workers failed: {exc}\n{errors}") from None
    return out


def assert_weights_close(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert torch.allclose(got[name].float(), value.float(), atol=STEP_ATOL), name


@pytest.mark.parametrize("fam", FAMILIES)
def test_scenarios_exercise_mixed_media_and_uneven_passes(fam, cache_dir) -> None:
    """Guard: the scenarios really give workers different media and different micro-batch counts."""
    processor = load_processor(tiny_spec(fam, cache_dir))
    shards = [scenario(processor, fam, "uneven_passes", rank) for rank in (0, 1)]
    passes = [
        [len(prefix_micro_batches([s[i] for i in part], TRAINER["micro_batch_tokens"])) for part in mini_batches(s, 2)]
        for s in shards
    ]
    assert passes[0][0] > passes[1][0] >= 1, passes
    media = [["pixel_values_videos" in s.prompt.mm for s in shard] for shard in shards]
    assert all(media[0]) and not any(media[1])
    # the grouped forward shares each group's prompt; the image+text group of video_vs_mixed falls back
    for name, shared, fallbacks in (("uneven_passes", 5, 0), ("video_vs_mixed", 2, 1)):
        samples = scenario(processor, fam, name)
        distinct, _, fallback = share_prompts([s.prompt for s in samples], [s.group_id for s in samples])
        assert (len(samples) - len(distinct), fallback) == (shared, fallbacks), name


@pytest.mark.parametrize("fam", FAMILIES)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_sharded_workers_match_one_learner_on_the_whole_batch(fam, name, two_sharded_workers, cache_dir) -> None:
    spec = tiny_spec(fam, cache_dir)
    batch = scenario(load_processor(spec), fam, name)
    single = learner(spec, fsdp=False, grouped_forward=False)  # every row forwarded whole
    want_grads = keep_gradients(single)
    expected = single.update(batch)
    results = [torch.load(two_sharded_workers / f"{fam}-{name}-{rank}.pt", weights_only=True) for rank in (0, 1)]
    for result in results:
        for key in ("loss", "grad_norm", "entropy", "samples", "skipped_steps"):
            assert result["metrics"][key] == pytest.approx(expected[key], rel=1e-4, abs=1e-6), key
    got_grads = results[0]["grads"]
    assert len(got_grads) == len(want_grads) == TRAINER["mini_batches"]  # no step skipped
    for got, want in zip(got_grads, want_grads):
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert (got[key] - value).norm() <= gradient_bound(key, value), key
    assert_weights_close(results[0]["weights"], single.model.state_dict())  # rank 0 gathers


@pytest.mark.parametrize("fam", FAMILIES)
def test_sharded_checkpoint_resumes_exactly(fam, two_sharded_workers, cache_dir) -> None:
    spec = tiny_spec(fam, cache_dir)
    processor = load_processor(spec)
    result = torch.load(two_sharded_workers / f"{fam}-resume-0.pt", weights_only=True)  # gathered on rank 0
    assert result["resumed"].keys() == result["uninterrupted"].keys() and result["resumed"]
    for key, value in result["uninterrupted"].items():
        assert torch.equal(result["resumed"][key], value), key
    # the gathered checkpoint also resumes an unsharded learner, which then takes the same second step
    single = learner(spec, fsdp=False)
    single.load(str(two_sharded_workers / f"{fam}-ckpt"))
    assert single.optimizer_steps == TRAINER["mini_batches"]
    single.update(scenario(processor, fam, RESUME[1]))
    assert_weights_close(result["uninterrupted"], single.model.state_dict())
