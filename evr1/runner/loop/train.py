"""The driver loop. It reads like the algorithm:

    data -> rollout -> (mixer) -> reward -> advantages -> update -> weight sync -> log

A record whose media cannot be loaded is dropped from its step and skipped for the rest of the run
(`evr1.runner.loop.data_failures`). The reward metrics of the sampled responses (`reward/online_score`,
`reward/<type>/*`, the progress bar) are kept apart from those of curated offline rows
(`reward/offline_*`); `reward/score` is the mean over every row the advantages see.

Workers run as Ray actors (an embedded local Ray unless `resources.ray_address` is given;
`evr1.runner.ray.workers`); scoring is `evr1.runner.loop.reward_phase`, checkpoints `evr1.runner.loop.resume`. Every
random choice derives from `trainer.seed` and the step number, so a resumed run repeats an
uninterrupted one exactly (on CPU).

With `trainer.max_staleness = k > 0` the loop is pipelined (`evr1.runner.loop.pipeline`): the
generations of the next k steps are already queued on the rollout worker, which runs them while
the learners update; the new weights are queued after them, so the update never waits for a
sync, and a step's responses come from weights up to k updates old (`TrainItem.staleness`, the
metric `rollout/staleness`), which the learner corrects for. Validation and evaluation after step
t are queued after t's weights, so they score the same weights as the synchronous loop.
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evr1.experiment import Experiment
from evr1.experiment_files import ExperimentSource, import_source
from evr1.run_dir import FINAL_MODEL, SAMPLES_FILE, interrupted_message, latest_checkpoint, resume_message
from evr1.runner.loop.data_failures import FAILURES_FILE, DataFailures
from evr1.runner.loop.pipeline import Generation, load_in_flight, save_in_flight
from evr1.runner.loop.resume import discard_evaluations, load_checkpoint, save_checkpoint
from evr1.runner.loop.reward_phase import Scorer, greedy_baselines, sample_row
from evr1.runner.ray.cluster import ray_session
from evr1.runner.ray.workers import TrainingError, Workers, get, start_workers


def step_seed(seed: int, step: int, salt: int = 0) -> int:
    """A sampling seed for one step, independent of how many steps ran before in this process."""
    import numpy as np

    return int(np.random.default_rng([seed, step, salt]).integers(0, 2**62))


class Trainer:
    """Owns the workers and the loop of one run.

    `source` is where the experiment came from: the driver and every worker import it before
    building anything from a registry, so components it registers (a reward) exist everywhere.
    """

    workers: Workers
    scorer: Scorer

    def __init__(self, exp: Experiment, run_dir: Path, source: ExperimentSource | None = None) -> None:
        from evr1.models import load_processor
        from evr1.registry import MIXERS, SAMPLERS
        from evr1.rewards import RewardRouter
        from evr1.runner.loop.datasets import ensure_synthetic, train_split, val_splits

        if source is not None:
            import_source(source)
        self.exp, self.run_dir, self.source = exp, Path(run_dir), source
        self.current_step = 0
        self.pending: deque[Generation] = deque()  # launched, in step order; the last launched is step `launched`
        self.launched = 0
        self.updates = self.synced = 0  # policy updates made; those in the weights sent to the rollout worker
        self.syncing: list[Any] = []  # the weight sync not yet waited for (pipelined)
        if exp.data.synth is not None:
            ensure_synthetic(exp.data.synth)
        self.train = train_split(exp.data)
        self.vals = val_splits(exp.data)
        self.failures = DataFailures(self.run_dir, {"train": exp.data.train, **{v.name: (f,) for v, f in zip(self.vals, exp.data.val)}},
                                     exp.data.columns)
        self.processor = load_processor(exp.model)
        tokenizer = self.processor.tokenizer
        self.mixer = None  # built (every offline response tokenised and checked) before the cache and the workers
        if exp.mixer.name:
            stop = int(tokenizer.convert_tokens_to_ids(tokenizer.eos_token))
            self.mixer = MIXERS.get(exp.mixer.name)(
                exp.mixer, exp.rollout.n, records=self.train.records, tokenizer=tokenizer, stop_token_id=stop,
                max_tokens=exp.rollout.max_response_tokens,
            )
        if exp.data.cache.path is not None and exp.data.cache.mode != "bypass":
            self.build_cache()
        modalities = [r.modality for r in self.train.records]
        sampler_name = exp.data.sampler or ("modality" if exp.data.modality_ratio else "uniform")
        self.sampler = SAMPLERS.get(sampler_name)(modalities, seed=exp.trainer.seed, ratios=exp.data.modality_ratio)
        self.router = RewardRouter(exp.reward)  # metrics only; scoring runs in the reward workers
        self.kl = None  # the KL penalty on rewards is the driver's; a KL loss term is the learner's
        if exp.algo.kl.enabled and exp.algo.kl.as_reward_penalty:
            from evr1.algos.kl import KLController

            self.kl = KLController(exp.algo.kl)

    def build_cache(self) -> None:
        """Prepare every media file of the run into the tensor cache (entries present are skipped)."""
        from evr1.data.cache_build import build_cache

        data = self.exp.data
        for split in (self.train, *self.vals):
            report = build_cache(
                split.records, video=data.video, image=data.image, cache=data.cache, processor=self.processor,
                data_root=split.root, progress=False, split=split.name,
            )
            failed = f", {report.failed} failed (see {report.failures_path})" if report.failed else ""
            print(f"cache {split.name}: {report.built} built, {report.skipped} already there{failed}")

    def start_workers(self) -> None:
        """Start and place the run's actors (`evr1.runner.ray.workers.start_workers`) and the scorer on its
        reward workers."""
        roots = {"train": self.train.root, **{v.name: v.root for v in self.vals}}
        types = sorted({r.problem_type for split in (self.train, *self.vals) for r in split.records})
        self.workers = start_workers(self.exp, self.run_dir, roots, self.source, types)
        self.scorer = Scorer(self.workers.rewarders, get)

    def sync_weights(self, step: int) -> None:
        """The policy's weights to the rollout worker; pipelined, queued after the generations launched before
        (the previous sync is waited for first, to report its failure)."""
        get(self.syncing, step, "weight sync (learner to rollout worker)")
        if self.exp.trainer.max_staleness:
            self.syncing = self.workers.send_weights()
        else:
            self.workers.sync_weights(step)
        self.synced = self.updates

    def fill_pipeline(self, step: int) -> None:
        """After `step`, launch the generations of the steps up to `step + 1 + trainer.max_staleness`."""
        last = min(step + 1 + self.exp.trainer.max_staleness, self.exp.trainer.steps)
        for ahead in range(max(self.launched, step) + 1, last + 1):
            self.pending.append(self.launch(ahead))
            self.launched = ahead

    def sampling_params(self, step: int, *, greedy: bool = False) -> Any:
        from evr1.engines.base import SamplingParams

        return SamplingParams.from_spec(self.exp.rollout, greedy=greedy, seed=step_seed(self.exp.trainer.seed, step))

    # -- one step -----------------------------------------------------------------------------
    def launch(self, step: int) -> Generation:
        """Draw the step's records and ask the rollout worker for their responses (and with ReMax one greedy
        response each); a record whose media failed at an earlier step is skipped."""
        exp = self.exp
        sampled = self.sampler.sample(exp.trainer.prompts_per_step)
        kept = [i for i in sampled if not self.failures.skipped("train", self.train.records[i].id)]
        records = [self.train.records[i] for i in kept]
        counts = [self.mixer.online_count(r, step) if self.mixer else exp.rollout.n for r in records]
        refs = []
        if records:
            refs.append(self.workers.rollout.generate.remote("train", records, counts, self.sampling_params(step)))
            if exp.algo.advantage == "remax":  # with the weights of the sampled responses; failed records give none
                greedy = self.sampling_params(step, greedy=True)
                refs.append(self.workers.rollout.generate.remote("train", records, [1] * len(records), greedy))
        return Generation(step, sampled, kept, counts, self.synced, refs)

    def step(self, step: int) -> dict[str, float]:
        """One step: its responses (generated now, or ahead of time when pipelined), groups and rewards,
        advantages, the update, the weight sync."""
        from evr1.runner.loop.timing import PhaseTimer
        from evr1.runner.ray.actors import TrainItem

        exp, timer = self.exp, PhaseTimer()
        generation = self.pending.popleft() if self.pending else self.launch(step)
        if not generation.kept:  # every record drawn failed at an earlier step: nothing to train on, nothing new failed
            return {**data_metrics(self.failures, generation.sampled, []), "data/empty_step": 1.0, **timer.metrics()}
        with timer("rollout"):
            (online, media, shown, failed), *greedy = generation.collect()
        records, online, kept = self.drop_failed(step, generation, online, failed)
        metrics: dict[str, float] = {**media, **data_metrics(self.failures, generation.sampled, records)}
        staleness = self.updates - generation.version  # policy updates since the weights that sampled these responses
        if exp.trainer.max_staleness:
            metrics["rollout/staleness"] = float(staleness)
        with timer("reward"):
            flat, inputs, outputs = self.score_groups(step, records, online, shown, metrics)
        items = [TrainItem(records[g], t.token_ids, t.logprobs, None, t.offline, g, staleness=0 if t.offline else staleness)
                 for g, t in flat]  # fmt: skip
        if exp.algo.kl.enabled:
            with timer("reference"):
                self.workers.reference_logprobs(items, step)
        baselines = None
        if greedy:
            with timer("reward"):  # one greedy response per prompt, scored
                baselines, metrics["reward/greedy_baseline"] = self.greedy_baselines(step, records, kept, greedy[0], failed, flat)
        with timer("advantage"):
            items = self.advantages(items, outputs, baselines, metrics)
        with timer("update"):
            metrics.update({f"learner/{k}": v for k, v in self.workers.update(items, step).items()})
        self.updates += 1
        if self.kl is not None and "kl/mean" in metrics:
            metrics["kl/coef"] = self.kl.update(metrics["kl/mean"], len(items))
        with timer("sync"):
            self.sync_weights(step)
        metrics.update({**response_metrics(flat), **timer.metrics()})
        metrics["tokens/per_s"] = metrics["tokens/response"] / max(metrics["timing/step"], 1e-9)
        self.log_samples(step, inputs, outputs)
        return metrics

    def score_groups(self, step: int, records: Sequence[Any], online: Sequence[Sequence[Any]], shown: Mapping[str, Any],
                     metrics: dict[str, float]) -> tuple[list[tuple[int, Any]], list, list]:
        """The step's groups (the online responses, and a mixer's offline ones) as (group, trajectory) rows, with
        their reward inputs and outputs; each response is scored once. The mixer's and reward metrics go into
        `metrics`."""
        from evr1.data.mixers import Trajectory
        from evr1.runner.loop.metrics import reward_metrics

        all_sampled = None  # every sampled response's (inputs, outputs), when the mixer drops some of them
        if self.mixer is not None:
            online_scores, scored = None, None
            if self.mixer.uses_online_scores:  # e.g. mix only groups the policy gets wrong
                online_scores, scored, all_sampled = self.scorer.online_accuracy(records, online, step, shown)
            groups, mixed = self.mixer.mix(records, online, step=step, online_scores=online_scores)
            metrics.update(mixed)
        else:
            groups, scored = [[Trajectory.online(r) for r in g] for g in online], None
        flat = [(g, t) for g, group in enumerate(groups) for t in group]
        inputs, outputs = self.scorer.score_groups(records, flat, step, scored, shown)
        metrics.update(reward_metrics(self.router, inputs, outputs, [t.offline for _, t in flat], all_sampled))
        return flat, inputs, outputs

    def advantages(self, items: list[Any], outputs: Sequence[Any], baselines: Sequence[float] | None,
                   metrics: dict[str, float]) -> list[Any]:
        """`items` with their advantages, less those dynamic sampling drops; the metrics go into `metrics`."""
        from evr1.runner.loop.advantage_phase import compute_advantages

        exp = self.exp
        advantages, adv_metrics, keep = compute_advantages(
            exp.algo, items, outputs, self.kl, max_length=exp.rollout.max_response_tokens, reward=exp.reward, baselines=baselines,
        )
        metrics.update(adv_metrics)
        for item, adv in zip(items, advantages):
            item.advantages = adv
        return [item for item, k in zip(items, keep) if k]

    def drop_failed(self, step: int, generation: Generation, online: list[list[Any]],
                    failed: Mapping[int, Any]) -> tuple[list[Any], list[list[Any]], list[int]]:
        """The step's records and groups less those whose media failed (logged, then skipped for the rest of
        the run), and the indices of those kept; raises `TrainingError` when no record is left or too many failed."""
        self.failures.add(step, "train", failed.values())
        kept = [i for i in range(len(generation.kept)) if i not in failed]
        records = [self.train.records[generation.kept[i]] for i in kept]
        stop = self.failures.too_many(step, len(kept), len(generation.sampled), len(self.train.records),
                                      self.exp.data.max_failed_records)
        if stop:
            error = TrainingError(stop)
            error.metrics = data_metrics(self.failures, generation.sampled, records)  # logged before the run stops
            raise error
        return records, [online[i] for i in kept], kept

    def greedy_baselines(self, step: int, records: Sequence[Any], kept: Sequence[int], greedy: Any,
                         failed: Mapping[int, Any], flat: Sequence[tuple[int, Any]]) -> tuple[list[float], float]:
        """ReMax's baselines from the greedy responses to the step's records, `kept` those whose media loaded
        for sampling (`failed`: those that did not); the same media must load for the greedy responses."""
        groups, _, shown, greedy_failed = greedy
        again = sorted(f.record for i, f in greedy_failed.items() if i not in failed)
        if again:  # loaded for this step's sampling moments ago
            raise TrainingError(f"step {step}: media of records {again} failed on a second load")
        return greedy_baselines(self.scorer, self.exp, records, [groups[i] for i in kept], shown, flat, step)

    def log_samples(self, step: int, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        shown = self.exp.trainer.log_samples
        if not shown:
            return
        with (self.run_dir / SAMPLES_FILE).open("a") as f:
            for inp, out in list(zip(inputs, outputs))[:shown]:
                f.write(json.dumps(sample_row(step, inp, out)) + "\n")

    # -- validation ---------------------------------------------------------------------------
    def validate(self, step: int) -> dict[str, float]:
        """Greedy accuracy and score on every validation split (a record whose media failed counts as wrong)."""
        metrics: dict[str, float] = {}
        for split in self.vals:
            records = [r for r in split.records if not self.failures.skipped(split.name, r.id)]
            groups, _, shown, failed = get(
                self.workers.rollout.generate.remote(split.name, records, [1] * len(records), self.sampling_params(step, greedy=True)),
                step, f"rollout worker (validation on {split.name})",
            )
            self.failures.add(step, split.name, failed.values())
            texts = [g[0].text for i, g in enumerate(groups) if i not in failed]
            records = [r for i, r in enumerate(records) if i not in failed]
            _, outputs = self.scorer.score(records, texts, [r.id for r in records], step, shown)
            total = len(split.records)
            metrics[f"val/{split.name}/accuracy"] = sum(o.components.get("accuracy", 0.0) for o in outputs) / total
            metrics[f"val/{split.name}/score"] = sum(o.score for o in outputs) / total
            if self.failures.count(split.name):
                metrics[f"val/{split.name}/failed_records"] = float(self.failures.count(split.name))
        return metrics

    # -- checkpoints --------------------------------------------------------------------------
    def save(self, step: int) -> Path:
        """Checkpoint after `step` steps (`evr1.runner.loop.resume`)."""
        state = {"sampler": self.sampler.state_dict(), "kl_coef": self.kl.value if self.kl else None,
                 "failed_records": self.failures.state_dict(), "updates": self.updates}
        in_flight = list(self.pending)  # generated with weights this checkpoint does not hold: stored as they are
        write = (lambda folder: save_in_flight(folder, in_flight)) if in_flight else None
        return save_checkpoint(self.run_dir, step, self.workers, state, write)

    def restore(self, folder: Path) -> int:
        state = load_checkpoint(folder, self.exp.trainer.steps, self.workers)
        self.sampler.load_state_dict(state["sampler"])
        if self.kl is not None and state["kl_coef"] is not None:
            self.kl.value = state["kl_coef"]
        self.failures.load_state_dict(state.get("failed_records", {}))  # absent in checkpoints of older versions
        self.updates = int(state.get("updates", state["step"]))
        self.pending = deque(load_in_flight(folder))
        self.launched = int(state["step"]) + len(self.pending)
        return int(state["step"])

    # -- the loop -----------------------------------------------------------------------------
    def fit(self, *, resume: bool = False) -> list[dict[str, Any]]:
        from tqdm import tqdm

        from evr1.run_dir import read_metrics
        from evr1.runner.loop.metrics import MetricsLogger, sampled_accuracy, truncate_jsonl
        from evr1.runner.loop.retention import prune_checkpoints
        from evr1.runner.loop.run_report import write_report

        t = self.exp.trainer
        self.start_workers()
        start, logged_from = 0, None
        if resume:
            print(resume_message(self.run_dir, t.save_every))
            folder = latest_checkpoint(self.run_dir)
            start = self.restore(folder) if folder is not None else 0
            logged_from = start + 1 if start else 0  # from scratch: step 0's validation is logged again
            truncate_jsonl(self.run_dir / SAMPLES_FILE, logged_from)
            truncate_jsonl(self.run_dir / FAILURES_FILE, logged_from)
            discard_evaluations(self.run_dir, max(logged_from, 1))
        logger = MetricsLogger(self.run_dir, tensorboard=t.tensorboard, wandb_project=t.wandb_project, resume_step=logged_from)
        self.current_step = start
        self.workers.sync_weights(start)
        self.synced = self.updates
        if start == 0 and t.val_every:
            logger.log(0, self.validate(0))
        self.fill_pipeline(start)
        bar = tqdm(range(start + 1, t.steps + 1), initial=start, total=t.steps, desc=self.exp.name, unit="step")
        try:
            for step in bar:
                self.current_step = step
                if step > start + 1:  # the steps ahead, launched as part of this one (an interrupt names it)
                    self.fill_pipeline(step - 1)
                metrics = self.step(step)
                if t.val_every and (step % t.val_every == 0 or step == t.steps):
                    metrics.update(self.validate(step))
                if self.exp.eval.every_steps and self.exp.eval.benchmarks and step % self.exp.eval.every_steps == 0:
                    out = self.run_dir / "eval" / f"step_{step:06d}"
                    metrics.update(get(self.workers.rollout.evaluate.remote(str(out.resolve())), step, "rollout worker (evaluation)"))
                logger.log(step, metrics)
                bar.set_postfix(
                    reward=f"{metrics.get('reward/online_score', 0):.2f}",
                    acc=f"{sampled_accuracy(metrics):.2f}",
                    s_step=f"{metrics['timing/step']:.1f}",
                )
                if t.save_every and step % t.save_every == 0:
                    self.save(step)
                    prune_checkpoints(self.run_dir, t, read_metrics(self.run_dir))
        except TrainingError as exc:  # e.g. too many unreadable media: report what was logged, then fail
            if getattr(exc, "metrics", None):
                logger.log(self.current_step, exc.metrics)
            logger.close()
            write_report(self.run_dir, read_metrics(self.run_dir), self.exp.name)
            raise
        logger.close()
        get(self.syncing, t.steps, "weight sync (learner to rollout worker)")
        final = (self.run_dir / FINAL_MODEL).resolve()
        get([w.export.remote(str(final)) for w in self.workers.learners], t.steps, "learner (export)")
        self.workers.learner_dir_seen(final, "export")
        rows = read_metrics(self.run_dir)
        write_report(self.run_dir, rows, self.exp.name)
        return rows


def data_metrics(failures: DataFailures, sampled: Sequence[int], records: Sequence[Any]) -> dict[str, float]:
    """The step's records dropped (of those `sampled`, the `records` kept) and the run's failed ones so far."""
    return {"data/dropped_records": float(len(sampled) - len(records)), "data/failed_records": float(failures.count("train"))}


def response_metrics(flat: Sequence[tuple[int, Any]]) -> dict[str, float]:
    """Mean length, share ended by a stop token, and total tokens of the step's responses (`flat`: (group, trajectory))."""
    import torch

    lengths = torch.tensor([len(t) for _, t in flat], dtype=torch.float32)
    return {"response/length": float(lengths.mean()), "response/stop_frac": sum(t.finish_reason == "stop" for _, t in flat) / len(flat),
            "tokens/response": float(lengths.sum())}


def train(exp: Experiment, run_dir: Path, *, resume: bool = False, source: ExperimentSource | None = None) -> list[dict[str, Any]]:
    """Run (or continue) the experiment in `run_dir`; returns the logged metric rows.

    `source`: the experiment's file or module, imported by every worker (see `Trainer`). On Ctrl-C
    it prints the step it stopped at and how to continue, and raises `KeyboardInterrupt` again. An
    exception that ends the run carries that step as `evr1_step`.
    """
    started = time.time()
    trainer = None
    try:
        trainer = Trainer(exp, run_dir, source)  # data, cache and offline responses checked before Ray starts
        with ray_session(exp.resources):
            rows = trainer.fit(resume=resume)
    except BaseException as exc:
        exc.evr1_step = trainer.current_step if trainer else 0  # type: ignore[attr-defined]
        if isinstance(exc, KeyboardInterrupt):
            print(interrupted_message(Path(run_dir), exc.evr1_step), file=sys.stderr)
        raise
    print(f"done in {time.time() - started:.0f} s; report: {Path(run_dir) / 'report.md'}")
    return rows
