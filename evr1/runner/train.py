"""The driver loop. It reads like the algorithm:

    data -> rollout -> (mixer) -> reward -> advantages -> update -> weight sync -> log

A record whose media cannot be loaded is dropped from its step and skipped for the rest of the run
(`evr1.runner.data_failures`). The reward metrics of the sampled responses (`reward/online_score`,
`reward/<type>/*`, the progress bar) are kept apart from those of curated offline rows
(`reward/offline_*`); `reward/score` is the mean over every row the advantages see.

Workers run as Ray actors (an embedded local Ray unless `resources.ray_address` is given). Every
random choice derives from `trainer.seed` and the step number, so a resumed run repeats an
uninterrupted one exactly (on CPU).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evr1.errors import ConfigError, Evr1Error
from evr1.experiment import Experiment
from evr1.experiment_files import ExperimentSource, import_source
from evr1.run_dir import (
    CHECKPOINTS,
    FINAL_MODEL,
    SAMPLES_FILE,
    TRAINER_STATE,
    interrupted_message,
    latest_checkpoint,
    record_info,
    resume_message,
)
from evr1.runner.cluster import cluster_address_label, ray_session
from evr1.runner.data_failures import FAILURES_FILE, DataFailures


class TrainingError(Evr1Error):
    """A worker failed, or the data did; the message names the step (and a worker's traceback).

    `metrics`: what the failing step had measured, logged before the run stops.
    """

    metrics: dict[str, float] | None = None


def reward_input(record: Any, text: str, sample_id: str, shown: Mapping[str, Any] | None) -> Any:
    """The reward input of one response, with what the model was shown of its record when known
    (`shown`: record id -> `evr1.rewards.contract.Shown`, from the rollout's prompter)."""
    from evr1.rewards import RewardInput

    return RewardInput.from_record(record, text, sample_id=sample_id, shown=(shown or {}).get(record.id))


def discard_evaluations(run_dir: Path, first_step: int) -> list[str]:
    """Remove the periodic evaluations (`eval/step_N`) of steps a resumed run trains again, so none
    mixes answers of two sets of weights; returns the names removed."""
    removed = []
    for folder in sorted((run_dir / "eval").glob("step_*")):
        if folder.is_dir() and folder.name[5:].isdigit() and int(folder.name[5:]) >= first_step:
            shutil.rmtree(folder)
            removed.append(folder.name)
    return removed


def step_seed(seed: int, step: int, salt: int = 0) -> int:
    """A sampling seed for one step, independent of how many steps ran before in this process."""
    import numpy as np

    return int(np.random.default_rng([seed, step, salt]).integers(0, 2**62))


class Trainer:
    """Owns the workers and the loop of one run.

    `source` is where the experiment came from: the driver and every worker import it before
    building anything from a registry, so components it registers (a reward) exist everywhere.
    """

    def __init__(self, exp: Experiment, run_dir: Path, source: ExperimentSource | None = None) -> None:
        from evr1.models import load_processor
        from evr1.registry import MIXERS, SAMPLERS
        from evr1.rewards import RewardRouter
        from evr1.runner.datasets import ensure_synthetic, train_split, val_splits

        if source is not None:
            import_source(source)
        self.exp, self.run_dir, self.source = exp, Path(run_dir), source
        self.current_step = 0
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

    # -- workers ------------------------------------------------------------------------------
    def start_workers(self) -> None:
        """Place every actor in one placement group (refused when the cluster cannot hold them), rendezvous the
        learners on learner 0's node, check every worker sees the run's files, and record where each landed."""
        import ray

        from evr1.engines.vllm_adapter import gpu_requests
        from evr1.runner.actors import LearnerWorker, ReferenceWorker, RewardWorker, RolloutWorker
        from evr1.runner.cluster import Ask, Placement, cluster_nodes, rendezvous_address
        from evr1.runner.worker_paths import absolute_source, for_workers

        res = self.exp.resources
        exp, source = for_workers(self.exp), absolute_source(self.source)  # workers run in their node's folder
        gpus = gpu_requests(res, self.exp.rollout)  # colocated: learner 0 and the engine share a GPU (one bundle)
        cpu = 0.5 if res.num_gpus == 0 else 1
        roots = {"train": self.train.root.resolve(), **{v.name: v.root.resolve() for v in self.vals}}
        # with LoRA the KL reference is the learners' own base (adapters off): no second copy of the model
        separate = self.exp.algo.kl.enabled and self.exp.model.lora is None
        learner_gpus, reference_gpus = reference_share(res.num_gpus, gpus, separate)
        asks = [Ask(f"learner {rank}", cpu, learner_gpus[rank]) for rank in range(res.learner_workers)]
        asks.append(Ask("rollout", cpu, gpus.rollout, "learner 0" if gpus.colocated else None))
        if separate:
            asks.append(Ask("reference", cpu, reference_gpus, "learner 0" if 0 < reference_gpus < 1 else None))
        asks += [Ask(f"reward {k}", 0.25) for k in range(res.reward_workers)]
        self.placement = placement = Placement(asks, res.placement, res.placement_timeout_s)
        ask = {a.role: a for a in asks}

        def actor(cls: type, role: str) -> Any:
            return ray.remote(num_cpus=ask[role].cpus, num_gpus=ask[role].gpus)(cls).options(
                scheduling_strategy=placement.strategy(role)
            )

        address = rendezvous_address(placement, "learner 0") if res.learner_workers > 1 else ""
        self.learners = [
            actor(LearnerWorker, f"learner {rank}").remote(exp, roots["train"], rank, res.learner_workers, address, source)
            for rank in range(res.learner_workers)
        ]
        self.rollout = actor(RolloutWorker, "rollout").remote(exp, roots, source)
        self.reference = actor(ReferenceWorker, "reference").remote(exp, roots["train"], source) if separate else None
        if self.exp.algo.kl.enabled:
            base = "the learners' base model, LoRA adapters off"
            print(f"KL reference: {'a reference worker' if self.reference is not None else base}")
        self.rewarders = [actor(RewardWorker, f"reward {k}").remote(exp, source) for k in range(res.reward_workers)]
        workers = {**{f"learner {r}": w for r, w in enumerate(self.learners)}, "rollout": self.rollout,
                   **({"reference": self.reference} if self.reference else {}),
                   **{f"reward {k}": w for k, w in enumerate(self.rewarders)}}  # fmt: skip
        self.check_storage(workers, exp, roots.values(), source)
        nodes = cluster_nodes()
        print(f"cluster: {len(nodes)} node(s), address {cluster_address_label(res)}; placement {res.placement}: "
              + ", ".join(f"{role} on {w['ip']}" for role, w in self.placed.items()))
        record_info(self.run_dir, cluster={"nodes": nodes, "actors": self.placed})

    def check_storage(self, workers: Mapping[str, Any], exp: Experiment, roots: Any, source: Any) -> None:
        """Every worker sees the run's files and writes the run directory where the driver reads it; else refuse."""
        from evr1.runner.worker_paths import needed, refusal

        paths, run_dir = needed(exp, roots, source), str(self.run_dir.resolve())
        self.placed = dict(zip(workers, self._get([w.where.remote() for w in workers.values()], 0, "worker (start)")))
        checks = self._get([w.check_storage.remote(paths, run_dir) for w in workers.values()], 0, "worker (storage check)")
        problem = refusal({f"{role} on node {self.placed[role]['ip']}": c for role, c in zip(workers, checks)}, self.run_dir)
        if problem:
            raise ConfigError(problem)

    def _get(self, refs: Any, step: int, what: str) -> Any:
        import ray

        try:
            return ray.get(refs)
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "traceback_str", None) or "".join(traceback.format_exception(exc))
            raise TrainingError(f"step {step}: the {what} failed:\n{cause}") from None

    def reference_logprobs(self, items: Sequence[Any], step: int) -> None:
        """Set each item's `ref_logprobs`: from the reference worker, or with LoRA from the learners with their
        adapters off, each replica scoring the groups it trains on (their media are then read once)."""
        if self.reference is not None:
            shards, calls, what = [list(items)], [self.reference.logprobs], "reference worker"
        else:
            shards = shard_groups(items, len(self.learners), self.exp.trainer.mini_batches)
            calls, what = [w.reference_logprobs for w in self.learners], "learner (reference log-probs)"
        results = self._get([call.remote(shard) for call, shard in zip(calls, shards)], step, what)
        for shard, refs in zip(shards, results):
            for item, ref in zip(shard, refs):
                item.ref_logprobs = ref

    def sync_weights(self, step: int) -> None:
        """The policy's weights to the rollout worker, by reference (never through the driver). Replicated
        learners are equal, so the first sends them; sharded ones all join the gather (rank 0 returns them)."""
        holders = self.learners if self.exp.resources.learner_sharding == "fsdp" else self.learners[:1]
        refs = [w.weights.remote() for w in holders]
        self._get([self.rollout.load_weights.remote(refs[0]), *refs[1:]], step, "weight sync (learner to rollout worker)")

    # -- one step -----------------------------------------------------------------------------
    def sampling_params(self, step: int, *, greedy: bool = False) -> Any:
        from evr1.engines.base import SamplingParams

        return SamplingParams.from_spec(self.exp.rollout, greedy=greedy, seed=step_seed(self.exp.trainer.seed, step))

    def score(self, records: Sequence[Any], texts: Sequence[str], ids: Sequence[str], step: int,
              shown: Mapping[str, Any] | None = None) -> tuple[list, list]:
        """Reward inputs and outputs; `shown` (record id -> `Shown`, from the rollout) tells the rewards what
        the model saw (frame times on the clip clock for answers by frame index; sizes and box units for boxes)."""
        inputs = [reward_input(r, t, i, shown) for r, t, i in zip(records, texts, ids)]
        shards = [inputs[k :: len(self.rewarders)] for k in range(len(self.rewarders))]
        scored = self._get([w.score.remote(s) for w, s in zip(self.rewarders, shards)], step, "reward worker")
        outputs: list[Any] = [None] * len(inputs)
        for k, shard in enumerate(scored):
            outputs[k :: len(self.rewarders)] = shard
        return inputs, outputs

    def online_accuracy(self, records: Sequence[Any], online: Sequence[Sequence[Any]], step: int,
                        shown: Mapping[str, Any] | None = None) -> tuple[list[list[float | None]], dict]:
        """Accuracy (else score) of each online response, per group, for a mixer that decides on it;
        None where the reward does not apply to the response.

        Also returns the reward outputs by (group, response index), so the responses the mixer keeps
        are not scored (nor a remote judge asked) a second time, and every (input, output) pair (the
        step's sampled-response metrics). A failed reward is None too: an outage is not a wrong answer.
        """
        flat = [(g, j, r) for g, group in enumerate(online) for j, r in enumerate(group)]
        ids = [f"{records[g].id}#{k}" for k, (g, _, _) in enumerate(flat)]
        inputs, outputs = self.score([records[g] for g, _, _ in flat], [r.text for _, _, r in flat], ids, step, shown)
        scores: list[list[float | None]] = [[] for _ in online]
        scored = {}
        for (g, j, r), out in zip(flat, outputs):
            usable = out.applicable and out.error is None
            scores[g].append(out.components.get("accuracy", out.score) if usable else None)
            scored[(g, j)] = (r.text, out)
        return scores, scored, (inputs, outputs)

    def score_groups(self, records: Sequence[Any], flat: Sequence[tuple[int, Any]], step: int,
                     scored: dict | None = None, shown: Mapping[str, Any] | None = None) -> tuple[list, list]:
        """Reward inputs and outputs of every trajectory; online ones already `scored` are reused.

        A mixer keeps a prefix of each group's online responses, in order: the j-th online member of
        group g is the j-th response sampled for it (checked by text before reusing its output).
        """
        ids = [f"{records[g].id}#{k}" for k, (g, _) in enumerate(flat)]
        inputs = [reward_input(records[g], t.text, i, shown) for (g, t), i in zip(flat, ids)]
        outputs: list[Any] = [None] * len(flat)
        seen: dict[int, int] = {}
        for k, (g, t) in enumerate(flat):
            if t.offline:
                continue
            j = seen.get(g, 0)
            seen[g] = j + 1
            text, out = (scored or {}).get((g, j), (None, None))
            if text == t.text:
                outputs[k] = out
        todo = [k for k, out in enumerate(outputs) if out is None]
        if todo:
            _, fresh = self.score([records[flat[k][0]] for k in todo], [flat[k][1].text for k in todo], [ids[k] for k in todo], step,
                                  shown)
            for k, out in zip(todo, fresh):
                outputs[k] = out
        return inputs, outputs

    def greedy_baselines(self, records: Sequence[Any], flat: Sequence[tuple[int, Any]], step: int) -> tuple[list[float], float]:
        """ReMax baselines: the (shaped) score of one greedy response per record, for each row of `flat`; and their mean."""
        import torch

        from evr1.runner.advantages import shaped_scores

        greedy, _, shown, failed = self._get(
            self.rollout.generate.remote("train", records, [1] * len(records), self.sampling_params(step, greedy=True)),
            step, "rollout worker (greedy baseline)",
        )
        if failed:  # loaded for this step's sampling moments ago
            raise TrainingError(f"step {step}: media of records {sorted(f.record for f in failed.values())} failed on a second load")
        texts = [g[0].text for g in greedy]
        _, outputs = self.score(records, texts, [f"{r.id}#greedy" for r in records], step, shown)
        lengths = torch.tensor([len(g[0].token_ids) for g in greedy])
        scores, _ = shaped_scores(
            self.exp.algo, torch.tensor([o.score for o in outputs], dtype=torch.float32), lengths, self.exp.rollout.max_response_tokens
        )
        return [float(scores[g]) for g, _ in flat], float(scores.mean())

    def step(self, step: int) -> dict[str, float]:
        import torch

        from evr1.data.mixers import Trajectory
        from evr1.runner.actors import TrainItem
        from evr1.runner.advantages import compute_advantages
        from evr1.runner.metrics import reward_metrics
        from evr1.runner.timing import PhaseTimer

        exp, timer = self.exp, PhaseTimer()
        sampled = [self.train.records[i] for i in self.sampler.sample(exp.trainer.prompts_per_step)]
        records = [r for r in sampled if not self.failures.skipped("train", r.id)]
        if not records:  # every record drawn failed at an earlier step: nothing to train on, nothing new failed
            return {"data/dropped_records": float(len(sampled)), "data/failed_records": float(self.failures.count("train")),
                    "data/empty_step": 1.0, **timer.metrics()}
        counts = [self.mixer.online_count(r, step) if self.mixer else exp.rollout.n for r in records]
        with timer("rollout"):
            online, media, shown, failed = self._get(
                self.rollout.generate.remote("train", records, counts, self.sampling_params(step)), step, "rollout worker"
            )
        records, online = self.drop_failed(step, sampled, records, online, failed)
        metrics: dict[str, float] = {
            **media, "data/dropped_records": float(len(sampled) - len(records)), "data/failed_records": float(self.failures.count("train")),
        }
        all_sampled = None  # every sampled response's (inputs, outputs), when the mixer drops some of them
        if self.mixer is not None:
            online_scores, scored = None, None
            if self.mixer.uses_online_scores:  # e.g. mix only groups the policy gets wrong
                with timer("reward"):
                    online_scores, scored, all_sampled = self.online_accuracy(records, online, step, shown)
            groups, mixed = self.mixer.mix(records, online, step=step, online_scores=online_scores)
            metrics.update(mixed)
        else:
            groups, scored = [[Trajectory.online(r) for r in g] for g in online], None
        flat = [(g, t) for g, group in enumerate(groups) for t in group]
        with timer("reward"):
            inputs, outputs = self.score_groups(records, flat, step, scored, shown)
        metrics.update(reward_metrics(self.router, inputs, outputs, [t.offline for _, t in flat], all_sampled))
        items = [TrainItem(records[g], t.token_ids, t.logprobs, None, t.offline, g) for g, t in flat]
        if exp.algo.kl.enabled:
            with timer("reference"):
                self.reference_logprobs(items, step)
        baselines = None
        if exp.algo.advantage == "remax":
            with timer("rollout"):  # one greedy response per prompt, scored
                baselines, metrics["reward/greedy_baseline"] = self.greedy_baselines(records, flat, step)
        with timer("advantage"):
            advantages, adv_metrics, keep = compute_advantages(
                exp.algo, items, outputs, self.kl, max_length=exp.rollout.max_response_tokens, reward=exp.reward,
                baselines=baselines,
            )
            metrics.update(adv_metrics)
        for item, adv in zip(items, advantages):
            item.advantages = adv
        items = [item for item, k in zip(items, keep) if k]
        with timer("update"):
            shards = shard_groups(items, len(self.learners), exp.trainer.mini_batches)
            results = self._get([w.update.remote(s) for w, s in zip(self.learners, shards)], step, "learner")
            metrics.update({f"learner/{k}": v for k, v in results[0].items()})
        if self.kl is not None and "kl/mean" in metrics:
            metrics["kl/coef"] = self.kl.update(metrics["kl/mean"], len(items))
        with timer("sync"):
            self.sync_weights(step)
        lengths = torch.tensor([len(t) for _, t in flat], dtype=torch.float32)
        metrics.update(
            {
                "response/length": float(lengths.mean()),
                "response/stop_frac": sum(t.finish_reason == "stop" for _, t in flat) / len(flat),
                "tokens/response": float(lengths.sum()),
            }
        )
        metrics.update(timer.metrics())
        metrics["tokens/per_s"] = metrics["tokens/response"] / max(metrics["timing/step"], 1e-9)
        self.log_samples(step, inputs, outputs)
        return metrics

    def drop_failed(self, step: int, sampled: Sequence[Any], records: list[Any], online: list[list[Any]],
                    failed: Mapping[int, Any]) -> tuple[list[Any], list[list[Any]]]:
        """The step's records and groups less those whose media failed (logged, then skipped for the rest of
        the run); raises `TrainingError` when no record is left or too many failed."""
        self.failures.add(step, "train", failed.values())
        kept = [i for i in range(len(records)) if i not in failed]
        stop = self.failures.too_many(step, len(kept), len(sampled), len(self.train.records), self.exp.data.max_failed_records)
        if stop:
            error = TrainingError(stop)
            error.metrics = {"data/dropped_records": float(len(sampled) - len(kept)),  # logged before the run stops
                             "data/failed_records": float(self.failures.count("train"))}
            raise error
        return [records[i] for i in kept], [online[i] for i in kept]

    def log_samples(self, step: int, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        shown = self.exp.trainer.log_samples
        if not shown:
            return
        with (self.run_dir / SAMPLES_FILE).open("a") as f:
            for inp, out in list(zip(inputs, outputs))[:shown]:
                row = {"step": step, "id": inp.sample_id, "response": inp.response, "answer": str(inp.answer), "score": out.score}
                f.write(json.dumps(row) + "\n")

    # -- validation ---------------------------------------------------------------------------
    def validate(self, step: int) -> dict[str, float]:
        metrics: dict[str, float] = {}
        for split in self.vals:
            records = [r for r in split.records if not self.failures.skipped(split.name, r.id)]
            groups, _, shown, failed = self._get(
                self.rollout.generate.remote(split.name, records, [1] * len(records), self.sampling_params(step, greedy=True)),
                step, f"rollout worker (validation on {split.name})",
            )
            self.failures.add(step, split.name, failed.values())
            texts = [g[0].text for i, g in enumerate(groups) if i not in failed]
            records = [r for i, r in enumerate(records) if i not in failed]
            _, outputs = self.score(records, texts, [r.id for r in records], step, shown)
            total = len(split.records)  # a record whose media failed counts as wrong
            metrics[f"val/{split.name}/accuracy"] = sum(o.components.get("accuracy", 0.0) for o in outputs) / total
            metrics[f"val/{split.name}/score"] = sum(o.score for o in outputs) / total
            if self.failures.count(split.name):
                metrics[f"val/{split.name}/failed_records"] = float(self.failures.count(split.name))
        return metrics

    # -- checkpoints --------------------------------------------------------------------------
    def save(self, step: int) -> Path:
        """Checkpoint after `step` steps: learner state, then the trainer state (the completion marker)."""
        folder = self.run_dir / CHECKPOINTS / f"step_{step:06d}"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        learner = (folder / "learner").resolve()
        self._get([w.save.remote(str(learner)) for w in self.learners], step, "learner (checkpoint)")
        if not learner.is_dir():  # written by rank 0 on its node: complete only where the driver sees it
            raise TrainingError(f"learner 0 wrote its checkpoint to {learner} on node {self.placed['learner 0']['ip']},"
                                " but the driver does not see it: the run directory must be shared storage")
        state = {"step": step, "sampler": self.sampler.state_dict(), "kl_coef": self.kl.value if self.kl else None,
                 "failed_records": self.failures.state_dict()}
        tmp = folder / (TRAINER_STATE + ".tmp")
        tmp.write_text(json.dumps(state))
        tmp.rename(folder / TRAINER_STATE)
        return folder

    def restore(self, folder: Path) -> int:
        state = json.loads((folder / TRAINER_STATE).read_text())
        if state["step"] > self.exp.trainer.steps:
            raise TrainingError(
                f"{folder} was taken after step {state['step']}, beyond this run's trainer.steps={self.exp.trainer.steps}:"
                " it belongs to another run"
            )
        self._get([w.load.remote(str((folder / "learner").resolve())) for w in self.learners], state["step"], "learner (restore)")
        self.sampler.load_state_dict(state["sampler"])
        if self.kl is not None and state["kl_coef"] is not None:
            self.kl.value = state["kl_coef"]
        self.failures.load_state_dict(state.get("failed_records", {}))  # absent in checkpoints of older versions
        return int(state["step"])

    # -- the loop -----------------------------------------------------------------------------
    def fit(self, *, resume: bool = False) -> list[dict[str, Any]]:
        from tqdm import tqdm

        from evr1.runner.metrics import MetricsLogger, read_metrics, sampled_accuracy, truncate_jsonl
        from evr1.runner.report import write_report
        from evr1.runner.retention import prune_checkpoints

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
        self.sync_weights(start)
        if start == 0 and t.val_every:
            logger.log(0, self.validate(0))
        bar = tqdm(range(start + 1, t.steps + 1), initial=start, total=t.steps, desc=self.exp.name, unit="step")
        try:
            for step in bar:
                self.current_step = step
                metrics = self.step(step)
                if t.val_every and (step % t.val_every == 0 or step == t.steps):
                    metrics.update(self.validate(step))
                if self.exp.eval.every_steps and self.exp.eval.benchmarks and step % self.exp.eval.every_steps == 0:
                    out = self.run_dir / "eval" / f"step_{step:06d}"
                    metrics.update(self._get(self.rollout.evaluate.remote(str(out.resolve())), step, "rollout worker (evaluation)"))
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
        final = (self.run_dir / FINAL_MODEL).resolve()
        self._get([w.export.remote(str(final)) for w in self.learners], t.steps, "learner (export)")
        if not final.is_dir():
            raise TrainingError(f"learner 0 exported {final} on node {self.placed['learner 0']['ip']}, but the driver"
                                " does not see it: the run directory must be shared storage")
        rows = read_metrics(self.run_dir)
        write_report(self.run_dir, rows, self.exp.name)
        return rows


def reference_share(num_gpus: int, gpus: Any, reference: bool) -> tuple[tuple[float, ...], float]:
    """The learners' GPU requests and the reference worker's (0 on CPU runs or without one: `reference`
    is False without KL, and with LoRA, whose reference is the learners' own base).

    The reference takes a whole GPU when one is left over, else half of learner 0's share (it
    lives beside learner 0: Ray counts the fractions, the memory is shared).
    """
    learners = tuple(gpus.learners)
    if num_gpus == 0 or not reference:
        return learners, 0.0
    if num_gpus - gpus.rollout - sum(learners) >= 1:
        return learners, 1.0
    half = learners[0] / 2
    return (half, *learners[1:]), half


def shard_groups(items: Sequence[Any], workers: int, mini_batches: int) -> list[list[Any]]:
    """Whole groups per worker, so that every worker holds part of every mini-batch.

    The learner's mini-batch j holds the groups with `group_id % mini_batches == j`; sharding by
    `(group_id // mini_batches) % workers` spreads the groups of each mini-batch over the workers.
    """
    return [[item for item in items if (item.group_id // mini_batches) % workers == k] for k in range(workers)]


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
