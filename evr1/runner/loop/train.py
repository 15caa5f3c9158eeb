"""The driver loop. One step reads like the algorithm (`Trainer.step`), a `StepBatch` flowing through it:

    generate -> (mix) -> reward -> (reference) -> advantages -> old-policy log-probs -> update -> weight sync

A record whose media cannot be loaded is dropped from its step and skipped for the rest of the run
(`evr1.runner.loop.data_failures`). The reward metrics of the sampled responses (`reward/online_score`,
`reward/<type>/*`, the progress bar) are kept apart from those of curated offline rows
(`reward/offline_*`); `reward/score` is the mean over every row the advantages see.

Each phase takes the batch and returns it (or a result of its own) with its metrics, which the step
merges. The old-policy log-probs are taken after dynamic sampling, for the rows that train only.
Workers run as Ray actors (an embedded local Ray unless `resources.ray_address` is given;
`evr1.runner.ray.workers`); scoring is `evr1.runner.loop.reward_phase`, advantages
`evr1.runner.loop.advantage_phase`, checkpoints `evr1.runner.loop.resume`. Every random choice derives
from `trainer.seed` and the step number, so a resumed run repeats an uninterrupted one exactly (on CPU).

With `trainer.max_staleness = k > 0` the loop is pipelined (`evr1.runner.loop.pipeline.Pipeline`): the
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
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evr1.experiment import Experiment
from evr1.experiment_files import DEFAULT_VARIANT, ExperimentSource, import_source
from evr1.run_dir import FINAL_MODEL, SAMPLES_FILE, interrupted_message, latest_checkpoint, resume_message, run_label
from evr1.runner.loop.batch import Row, StepBatch, response_metrics
from evr1.runner.loop.data_failures import FAILURES_FILE, DataFailures
from evr1.runner.loop.mismatch_report import MismatchReport
from evr1.runner.loop.pipeline import Generation, Pipeline, Responses, load_in_flight, save_in_flight
from evr1.runner.loop.resume import discard_evaluations, load_checkpoint, save_checkpoint
from evr1.runner.loop.reward_phase import Scorer, greedy_baselines, sample_row
from evr1.runner.loop.validation import split_metrics
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
        self.title = run_label(exp, source.variant if source is not None else DEFAULT_VARIANT)  # report, plot, bar
        self.current_step = 0
        self.pipeline = Pipeline(exp.trainer.max_staleness, exp.trainer.steps)
        self.mismatch = MismatchReport(exp)  # the engine-learner mismatch: metric names, one-time warning
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
        return Generation(step, sampled, kept, counts, self.pipeline.synced, refs)

    def step(self, step: int) -> dict[str, float]:
        """One step: its responses (generated now, or ahead of time when pipelined), groups, rewards and
        advantages, the old policy's log-probs, the update, the weight sync; the step's metrics."""
        from evr1.runner.loop.timing import PhaseTimer

        timer = PhaseTimer()
        generation = self.pipeline.next(step, self.launch)
        if not generation.kept:  # every record drawn failed at an earlier step: nothing to train on, nothing new failed
            return {**data_metrics(self.failures, generation.sampled, []), "data/empty_step": 1.0, **timer.metrics()}
        with timer("rollout"):
            sampled, greedy = generation.responses()
        batch, data = self.loaded(generation, sampled, greedy)
        metrics = {**sampled.media, **data}
        if self.exp.trainer.max_staleness:
            metrics["rollout/staleness"] = float(batch.staleness)
        with timer("reward"):
            batch, mixed = self.mix(batch)
            batch, rewards = self.reward(batch)
        metrics |= mixed | rewards
        if self.exp.algo.kl.enabled:
            with timer("reference"):
                batch = self.reference(batch)
        if batch.greedy is not None:
            with timer("reward"):  # one greedy response per prompt, scored
                batch, metrics["reward/greedy_baseline"] = self.greedy_baselines(batch)
        with timer("advantage"):
            batch, advantage = self.advantages(batch)
        metrics |= advantage
        with timer("update"):
            batch = self.old_logprobs(batch)
            metrics |= self.update(batch)
        self.mismatch.report(metrics)  # mismatch/<engine>/..., and the warning once
        if self.kl is not None and "kl/mean" in metrics:  # the reward penalty's coefficient adapts to the step's KL
            metrics["kl/coef"] = self.kl.update(metrics["kl/mean"], len(batch.training))
        with timer("sync"):
            self.pipeline.sync(self.workers, step)
        metrics |= response_metrics(batch.rows) | timer.metrics()
        metrics["tokens/per_s"] = metrics["tokens/response"] / max(metrics["timing/step"], 1e-9)
        self.log_samples(batch)
        return metrics

    # -- the phases of a step -----------------------------------------------------------------
    def loaded(self, generation: Generation, sampled: Responses,
               greedy: Responses | None) -> tuple[StepBatch, dict[str, float]]:
        """The step's batch: the records whose media loaded and their responses (the others are logged, then
        skipped for the rest of the run), and the data metrics. Raises `TrainingError` when no record is left,
        too many failed, or (ReMax) media that loaded for sampling failed for the greedy responses."""
        step = generation.step
        self.failures.add(step, "train", sampled.failed.values())
        kept = [i for i in range(len(generation.kept)) if i not in sampled.failed]
        records = [self.train.records[generation.kept[i]] for i in kept]
        data = data_metrics(self.failures, generation.sampled, records)
        stop = self.failures.too_many(step, len(kept), len(generation.sampled), len(self.train.records),
                                      self.exp.data.max_failed_records)
        if stop:
            error = TrainingError(stop)
            error.metrics = data  # logged before the run stops
            raise error
        greedy_kept = None
        if greedy is not None:
            again = sorted(f.record for i, f in greedy.failed.items() if i not in sampled.failed)
            if again:  # loaded for this step's sampling moments ago
                raise TrainingError(f"step {step}: media of records {again} failed on a second load")
            greedy_kept = [greedy.groups[i][0] for i in kept]
        staleness = self.pipeline.staleness(generation)
        return StepBatch(step, records, [sampled.groups[i] for i in kept], sampled.shown, staleness, greedy_kept), data

    def mix(self, batch: StepBatch) -> tuple[StepBatch, dict[str, float]]:
        """The batch's rows: every group's trajectories, the sampled responses and a mixer's curated ones (a mixer
        that decides on the sampled responses' scores gets them first); the mixer's metrics."""
        from evr1.data.mixers import Trajectory

        if self.mixer is None:
            rows = [Row(g, Trajectory.online(r)) for g, group in enumerate(batch.sampled) for r in group]
            return batch.with_rows(rows), {}
        scored = None
        if self.mixer.uses_online_scores:  # e.g. mix only groups the policy gets wrong
            scored = self.scorer.online_accuracy(batch.records, batch.sampled, batch.step, batch.shown)
        groups, metrics = self.mixer.mix(batch.records, batch.sampled, step=batch.step,
                                         online_scores=scored.scores if scored is not None else None)
        rows = [Row(g, t) for g, group in enumerate(groups) for t in group]
        return batch.with_rows(rows, sampled_rewards=scored), metrics

    def reward(self, batch: StepBatch) -> tuple[StepBatch, dict[str, float]]:
        """Each row's reward, each response scored once; the reward metrics (`evr1.runner.loop.metrics`)."""
        from evr1.runner.loop.metrics import reward_metrics

        flat = [(row.group, row.trajectory) for row in batch.rows]
        inputs, outputs = self.scorer.score_groups(batch.records, flat, batch.step, batch.sampled_rewards, batch.shown)
        scored = batch.sampled_rewards  # every sampled response's, when the mixer kept only some of them
        sampled = (scored.inputs, scored.outputs) if scored is not None else None
        metrics = reward_metrics(self.router, inputs, outputs, [row.offline for row in batch.rows], sampled)
        rows = [replace(row, reward_input=i, reward=o) for row, i, o in zip(batch.rows, inputs, outputs)]
        return batch.with_rows(rows), metrics

    def reference(self, batch: StepBatch) -> StepBatch:
        """Each row's log-probs under the KL reference."""
        refs = self.workers.reference_logprobs(batch.items(), batch.step)
        return batch.with_rows(replace(row, ref_logprobs=ref) for row, ref in zip(batch.rows, refs))

    def greedy_baselines(self, batch: StepBatch) -> tuple[StepBatch, float]:
        """ReMax: each record's baseline, the score of its greedy response; and their mean."""
        baselines = greedy_baselines(self.scorer, self.exp, batch.records, batch.greedy or [], batch.shown, batch.step)
        return replace(batch, baselines=baselines.per_record), baselines.mean

    def advantages(self, batch: StepBatch) -> tuple[StepBatch, dict[str, float]]:
        """Each row's advantages, and whether it trains (dynamic sampling drops groups); the advantage metrics."""
        from evr1.runner.loop.advantage_phase import compute_advantages

        exp = self.exp
        baselines = [batch.baselines[row.group] for row in batch.rows] if batch.baselines is not None else None
        result = compute_advantages(
            exp.algo, batch.items(), [row.reward for row in batch.rows], self.kl,
            max_length=exp.rollout.max_response_tokens, reward=exp.reward, baselines=baselines,
        )  # fmt: skip
        rows = [replace(row, advantages=a, trains=k) for row, a, k in zip(batch.rows, result.per_item, result.keep)]
        return batch.with_rows(rows), result.metrics

    def old_logprobs(self, batch: StepBatch) -> StepBatch:
        """The log-probs of the rows that train under the learners' current weights: the old policy of the update
        (zeros on offline rows, which train against their behaviour log-probs)."""
        old = iter(self.workers.old_logprobs(batch.items(batch.training), batch.step))
        return batch.with_rows(replace(row, old_logprobs=next(old)) if row.trains else row for row in batch.rows)

    def update(self, batch: StepBatch) -> dict[str, float]:
        """One policy update on the rows that train; the learners' metrics (`learner/*`)."""
        learner = self.workers.update(batch.items(batch.training), batch.step)
        self.pipeline.updates += 1
        return {f"learner/{k}": v for k, v in learner.items()}

    def log_samples(self, batch: StepBatch) -> None:
        """The first `trainer.log_samples` rows of the batch into `samples.jsonl`."""
        if not self.exp.trainer.log_samples:
            return
        with (self.run_dir / SAMPLES_FILE).open("a") as f:
            for row in batch.rows[: self.exp.trainer.log_samples]:
                f.write(json.dumps(sample_row(batch.step, row.reward_input, row.reward)) + "\n")

    # -- validation ---------------------------------------------------------------------------
    def validate(self, step: int) -> dict[str, float]:
        """Greedy accuracy and score on every validation split, and per problem type (a record whose media failed
        counts as wrong; `evr1.runner.loop.validation`)."""
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
            metrics.update(split_metrics(split.name, split.records, records, outputs))
            if self.failures.count(split.name):
                metrics[f"val/{split.name}/failed_records"] = float(self.failures.count(split.name))
        return metrics

    # -- checkpoints --------------------------------------------------------------------------
    def save(self, step: int) -> Path:
        """Checkpoint after `step` steps (`evr1.runner.loop.resume`)."""
        state = {"sampler": self.sampler.state_dict(), "kl_coef": self.kl.value if self.kl else None,
                 "failed_records": self.failures.state_dict(), "updates": self.pipeline.updates}
        in_flight = list(self.pipeline.pending)  # made with weights this checkpoint does not hold: stored as they are
        write = (lambda folder: save_in_flight(folder, in_flight)) if in_flight else None
        return save_checkpoint(self.run_dir, step, self.workers, state, write)

    def restore(self, folder: Path) -> int:
        state = load_checkpoint(folder, self.exp.trainer.steps, self.workers)
        self.sampler.load_state_dict(state["sampler"])
        if self.kl is not None and state["kl_coef"] is not None:
            self.kl.value = state["kl_coef"]
        self.failures.load_state_dict(state.get("failed_records", {}))  # absent in checkpoints of older versions
        step = int(state["step"])
        self.pipeline.restore(step, int(state.get("updates", step)), load_in_flight(folder))
        return step

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
        self.pipeline.sync_now(self.workers, start)
        if start == 0 and t.val_every:
            logger.log(0, self.validate(0))
        self.pipeline.fill(start, self.launch)
        bar = tqdm(range(start + 1, t.steps + 1), initial=start, total=t.steps, desc=self.title, unit="step")
        try:
            for step in bar:
                self.current_step = step
                if step > start + 1:  # the steps ahead, launched as part of this one (an interrupt names it)
                    self.pipeline.fill(step - 1, self.launch)
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
            write_report(self.run_dir, read_metrics(self.run_dir), self.title)
            raise
        logger.close()
        self.pipeline.wait(t.steps)
        final = (self.run_dir / FINAL_MODEL).resolve()
        get([w.export.remote(str(final)) for w in self.workers.learners], t.steps, "learner (export)")
        self.workers.learner_dir_seen(final, "export")
        rows = read_metrics(self.run_dir)
        write_report(self.run_dir, rows, self.title)
        return rows


def data_metrics(failures: DataFailures, sampled: Sequence[int], records: Sequence[Any]) -> dict[str, float]:
    """The step's records dropped (of those `sampled`, the `records` kept) and the run's failed ones so far."""
    return {"data/dropped_records": float(len(sampled) - len(records)), "data/failed_records": float(failures.count("train"))}


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
