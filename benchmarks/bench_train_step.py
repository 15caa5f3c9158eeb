"""Step time: the quickstart with the tensor cache vs live decoding, and one step on realistic clips on
three data paths (evr1's cache, live decoding, the peer's) and the peer's whole design (its data path and its
per-row learner), with the ratios printed.

1. Quickstart (`test_step_time_cache_vs_live`): the same experiment, seed and data through the real
   `Trainer` and Ray; only `data.cache.mode` differs (`only`: every media item comes from the LMDB
   cache; `bypass`: decoded, sampled and processed live each step).

2. Realistic clips (`test_step_on_realistic_clips`, or `python benchmarks/bench_train_step.py`).

   Four prompts a step, n = 4 responses each, every prompt its own generated 640x360, 30 s, 30 fps H.264
   clip sampled at 2 fps (60 frames). Same model, seed and records on three data paths, and a fourth row:

   - cache: evr1's tensor cache (`data.cache.mode='only'`), read by the rollout and by the learner;
   - live:  decode + sample + resize + normalise in the rollout and in the learner (`mode='bypass'`);
   - peer:  float32 frames in `.pt` files, `torch.load` + the HF processor in the dataset, the rollout and
            the learner (`peer_loader.py`): three reads a step;
   - peer-design: the peer's whole design, its data path and its learner: every prompt + response row
            forwarded whole (`grouped_forward=False`) with the whole `[tokens, vocab]` logits
            (`logprob_chunk_tokens=0`). Its update gives evr1's numbers to float rounding, so its
            responses are checked against evr1's at the first step (same weights) only.

   The real workers (`RolloutWorker`, `LearnerWorker`, `RewardWorker`) run in this one process, one phase
   after another as the synchronous trainer runs them; no Ray, so no transport cost in any path (the media
   never travel in evr1: each worker reads its own). Phases: data (every media read: the rollout's and the
   learner's prompts, and the peer's dataset pass), rollout (generation), reward, advantage, old log-probs,
   update (the optimizer step without the old log-probs), sync (weights to the rollout engine). Both the
   wall clock and this process's CPU time (the steadier figure on a shared machine) are printed. The three
   data paths give the model the same inputs, so they generate the same responses: checked at every step.

Run: `make bench` (or `pytest benchmarks/bench_train_step.py -s --benchmark-only`).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from peer_loader import PeerDataset, PeerLoader, build_peer_cache

from evr1.data.prompting import training_question_text
from evr1.data.records import MediaRef, Record
from evr1.data.testclips import write_clip
from evr1.experiment import Experiment, apply_overrides, build_experiment
from evr1.experiment_files import load_config
from evr1.models.tiny import TinyModel
from evr1.runner.loop.timing import PhaseTimer
from evr1.specs import CacheSpec, DataSpec, ModelSpec, ResourcesSpec, RolloutSpec, TrainerSpec, VideoSpec

STEPS = 6


def step_times(tmp: Path, mode: str) -> list[float]:
    from evr1.runner.loop.train import Trainer, ray_session

    cfg, _ = load_config("quickstart")
    data = tmp / "data"
    apply_overrides(cfg, [
        f"data.synth.out='{data}'", "data.synth.blank_control=False",
        f"data.train=('{data}/train.jsonl',)", "data.val=()", f"data.cache.path='{tmp}/cache.lmdb'",
        f"data.cache.mode='{'prefer' if mode == 'only' else mode}'", "trainer.val_every=0", f"trainer.steps={STEPS}",
    ])
    exp = build_experiment(cfg)
    run_dir = tmp / f"run-{mode}"
    run_dir.mkdir(parents=True)
    with ray_session(exp.resources):
        trainer = Trainer(exp, run_dir)  # builds the cache first when a path is set
        trainer.start_workers()
        trainer.pipeline.sync_now(trainer.workers, 0)
        return [trainer.step(step)["timing/step"] for step in range(1, STEPS + 1)]


@pytest.mark.benchmark(group="train-step")
def test_step_time_cache_vs_live(tmp_path: Path, benchmark) -> None:
    cached = benchmark.pedantic(step_times, args=(tmp_path / "a", "only"), rounds=1, iterations=1)
    live = step_times(tmp_path / "b", "bypass")
    c, lv = statistics.median(cached[1:]), statistics.median(live[1:])  # the first step warms up
    print(f"\nquickstart step: cache {c * 1000:.0f} ms, live {lv * 1000:.0f} ms, live/cache {lv / c:.2f}x")


# -- one step on realistic clips: evr1's cache vs live decoding vs the peer's design -------------
PATH_NAMES = ("cache", "live", "peer", "peer-design")
DATA_PATHS = PATH_NAMES[:3]  # the same learner; only the media reads differ
PHASES = ("data", "rollout", "reward", "advantage", "old_logprobs", "update", "sync")
REAL_CLIP = (640, 360, 30, 30)  # width, height, seconds, source fps
# Scale for a 2-core CPU: the recipes' 262,144 px a frame (644x364, 8,970 visual tokens a prompt) take
# minutes a step on the CPU; at this budget a 640x360 frame is resized to 196x84 px (630 visual tokens a prompt).
FRAME_PIXELS = 196 * 112
STEP_MODEL = {"hidden": 256, "layers": 4, "heads": 4, "vision_width": 256, "vision_depth": 4}  # as bench_learner.py
PROMPTS, N, RESPONSE_TOKENS, REAL_STEPS = 4, 4, 16, 3
REAL_WORK = Path(tempfile.gettempdir()) / "evr1-bench-step"


def real_clips(work: Path) -> list[Record]:
    """One multiple-choice record per generated clip (written once, kept for later runs)."""
    w, h, seconds, fps = REAL_CLIP
    records = []
    for i in range(PROMPTS):
        path = work / "clips" / f"clip{i}-{w}x{h}-{seconds}s.mp4"
        if not path.exists():
            tmp = path.with_suffix(".part.mp4")
            write_clip(tmp, w, h, fps, seconds * fps, seed=i)
            tmp.rename(path)
        records.append(Record(id=f"clip{i}", problem="Which colour is the moving square?", problem_type="multiple_choice",
                              answer="ABCD"[i % 4], options=["red", "green", "blue", "pink"],
                              media=[MediaRef(kind="video", path=path.name)]))
    return records


def step_experiment(work: Path, mode: str, per_row: bool = False) -> Experiment:
    model = TinyModel(name="bench-step", family="qwen2.5-vl", max_patches=4096, **STEP_MODEL)
    return Experiment(
        name="bench-step",
        model=ModelSpec(name=str(model.materialize(work / "models")), dtype="float32"),
        data=DataSpec(video=VideoSpec(fps=2.0, max_frames=128, min_pixels=56 * 56, max_pixels=FRAME_PIXELS),
                      cache=CacheSpec(path=str(work / "cache.lmdb"), mode=mode)),
        rollout=RolloutSpec(engine="hf", n=N, max_prompt_tokens=8192, max_response_tokens=RESPONSE_TOKENS),
        trainer=TrainerSpec(steps=REAL_STEPS + 1, prompts_per_step=PROMPTS, seed=0, grouped_forward=not per_row,
                            **({"logprob_chunk_tokens": 0} if per_row else {})),
        resources=ResourcesSpec(torch_threads=torch.get_num_threads()),
    )


class Clocks:
    """Wall-clock and CPU-time `PhaseTimer`s side by side: `with clocks("rollout"): ...`."""

    def __init__(self) -> None:
        self.wall, self.cpu = PhaseTimer(), PhaseTimer(clock=time.process_time)

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        with self.wall(phase), self.cpu(phase):
            yield

    def metrics(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, timer in (("wall", self.wall), ("cpu", self.cpu)):
            out[name] = {k.removeprefix("timing/"): v for k, v in timer.metrics().items()}
        return out


class StepBench:
    """The workers of one data path and the synchronous step over them (`evr1.runner.loop.train.Trainer.step`'s
    order, without mixer or KL)."""

    def __init__(self, path: str, work: Path, records: list[Record]) -> None:
        from evr1.runner.ray.actors import LearnerWorker, RewardWorker, RolloutWorker

        self.exp = step_experiment(work, "bypass" if path == "live" else "only", per_row=path == "peer-design")
        self.records, root = records, work / "clips"
        self.rollout = RolloutWorker(self.exp, {"train": root})
        self.learner = LearnerWorker(self.exp, root, 0, 1, "")
        self.rewarder = RewardWorker(self.exp)
        self.dataset = None
        if path in ("peer", "peer-design"):
            processor, video = self.rollout.processor, self.exp.data.video
            self.dataset = PeerDataset(video, processor, work / "peer")
            for prompter in (self.rollout.prompters["train"], self.learner.prompter):
                prompter.loader = PeerLoader(video, processor, work / "peer", prompter.loader.clock)
        self.rollout.load_weights(self.learner.weights())

    def step(self, step: int) -> tuple[dict[str, dict[str, float]], list[list[int]]]:
        """One step's seconds per phase (wall and CPU) and the responses' token ids (to compare the paths)."""
        from evr1.engines.base import SamplingParams
        from evr1.models.prompts import chat_messages
        from evr1.rewards import RewardInput
        from evr1.runner.loop.advantage_phase import compute_advantages
        from evr1.runner.loop.train import step_seed
        from evr1.runner.ray.actors import TrainItem

        exp, clocks, records = self.exp, Clocks(), self.records
        prompter = self.rollout.prompters["train"]
        with clocks("data"):
            if self.dataset is not None:  # the peer's dataset pass, before the rollout
                for r in records:
                    messages = chat_messages(training_question_text(r, exp.data.prompt), ["video"], exp.data.prompt.system)
                    text = self.rollout.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
                    self.dataset.read(r, text)
            for r in records:
                prompter(r)  # memoised: the generation below reuses these prompts
        params = SamplingParams.from_spec(exp.rollout, seed=step_seed(exp.trainer.seed, step))
        with clocks("rollout"):
            groups, _, shown, failed = self.rollout.generate("train", records, [N] * len(records), params)
        assert not failed, failed
        flat = [(g, t) for g, group in enumerate(groups) for t in group]
        with clocks("reward"):
            inputs = [RewardInput.from_record(records[g], t.text, sample_id=f"{g}-{k}", shown=shown.get(records[g].id))
                      for k, (g, t) in enumerate(flat)]
            outputs = self.rewarder.score(inputs)
        items = [TrainItem(records[g], torch.as_tensor(t.token_ids), torch.as_tensor(t.logprobs), None, False, g)
                 for g, t in flat]
        with clocks("advantage"):
            advantages, _, _ = compute_advantages(exp.algo, items, outputs, max_length=exp.rollout.max_response_tokens)
        for item, adv in zip(items, advantages):
            item.advantages = adv
        with clocks("data"):
            for r in records:
                self.learner.prompter(r)  # memoised for the old log-probs and the update
        with clocks("old_logprobs"):
            old = self.learner.old_logprobs(items)
        with clocks("update"):
            self.learner.update([replace(item, old_logprobs=o) for item, o in zip(items, old)])
        with clocks("sync"):
            self.rollout.load_weights(self.learner.weights())
        return clocks.metrics(), [list(t.token_ids) for _, t in flat]


def prepare_paths(work: Path) -> list[Record]:
    """The clips, evr1's cache of them and the peer's `.pt` files (each built once)."""
    from evr1.data.cache_build import build_cache
    from evr1.models import load_processor

    records = real_clips(work)
    exp = step_experiment(work, "only")
    processor = load_processor(exp.model)
    build_cache(records, video=exp.data.video, image=exp.data.image, cache=exp.data.cache, processor=processor,
                data_root=work / "clips", workers=0, progress=False)
    build_peer_cache(records, exp.data.video, processor, work / "clips", work / "peer")
    return records


def measure_paths(work: Path = REAL_WORK, steps: int = REAL_STEPS) -> dict[str, list[dict[str, dict[str, float]]]]:
    """Per path, the seconds per phase of `steps` steps after a warm-up step; the same responses on every data path.

    The paths take turns step by step, so that a change in the machine's load falls on all four alike."""
    records = prepare_paths(work)
    benches = {path: StepBench(path, work, records) for path in PATH_NAMES}
    times: dict[str, list] = {path: [] for path in PATH_NAMES}
    for step in range(steps + 1):
        runs = {path: bench.step(step) for path, bench in benches.items()}
        for path in PATH_NAMES[1:] if step == 0 else DATA_PATHS[1:]:
            assert runs[path][1] == runs["cache"][1], f"step {step}: the {path} path generated other responses"
        if step:  # step 0 warms up
            for path, (seconds, _) in runs.items():
                times[path].append(seconds)
    return times


def report_paths(times: dict[str, list[dict[str, dict[str, float]]]], clock: str = "wall") -> str:
    """The median seconds per phase and step of each path, and the ratios (the peer reports live / its cache 1.47x)."""
    med = {p: {k: statistics.median(run[clock][k] for run in runs) for k in (*PHASES, "step")}
           for p, runs in times.items()}
    lines = [f"{clock} seconds per step (median of {len(times['cache'])}): "
             + "".join(f"{k:>13}" for k in (*PHASES, "step"))]
    for path, m in med.items():
        lines.append(f"  {path:<11}" + " " * 25 + "".join(f"{m[k]:>13.3f}" for k in (*PHASES, "step")))
    c, lv, pe, design = (med[p]["step"] for p in PATH_NAMES)
    lines.append(f"  step ratios: live/cache {lv / c:.2f}x, live/peer {lv / pe:.2f}x (the peer reports 1.47x for "
                 f"live/its cache), peer/cache {pe / c:.2f}x; data share of the step: "
                 + ", ".join(f"{p} {med[p]['data'] / med[p]['step']:.0%}" for p in PATH_NAMES))
    lines.append(f"  evr1 against the peer's whole design (its data path and a per-row learner): peer-design/cache "
                 f"{design / c:.2f}x a step; update phase {med['peer-design']['update'] / med['cache']['update']:.2f}x,"
                 f" old log-probs {med['peer-design']['old_logprobs'] / med['cache']['old_logprobs']:.2f}x")
    return "\n".join(lines)


@pytest.mark.benchmark(group="train-step")
def test_step_on_realistic_clips(benchmark, capsys) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # steadier on a shared machine (the README's figures)
    try:
        times = benchmark.pedantic(measure_paths, rounds=1, iterations=1)
    finally:
        torch.set_num_threads(threads)
    with capsys.disabled():
        print("\n" + report_paths(times, "wall") + "\n" + report_paths(times, "cpu"))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="one training step on realistic clips: three data paths and the peer's design")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--steps", type=int, default=REAL_STEPS, help="measured steps per path, after a warm-up step")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)  # on a busy machine one thread gives steadier figures
    print(f"torch threads: {torch.get_num_threads()}; scale: {REAL_CLIP[0]}x{REAL_CLIP[1]} {REAL_CLIP[2]} s clips at 2 fps, "
          f"frames at most {FRAME_PIXELS} px, model {STEP_MODEL}, {PROMPTS} prompts x n={N}, {RESPONSE_TOKENS} tokens")
    measured = measure_paths(steps=args.steps)
    print(report_paths(measured, "wall") + "\n" + report_paths(measured, "cpu"))
