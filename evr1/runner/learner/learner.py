"""The learner: policy-gradient updates on `Sample`s (pure torch, no Ray).

`Learner` is a `LogprobModel` (`evr1.runner.learner.logprobs`: the tempered, grouped forward, its
temperature and micro-batches) that adds the update of one step:

1. old-policy log-probs of the online rows under the weights at the start of the step (offline
   rows are trained against their behaviour log-probs; stale online rows, `Sample.staleness > 0`,
   against these, the proximal policy, times a truncated importance weight proximal/behaviour:
   decoupled PPO, see `evr1.algos.offpolicy`): `old_logprobs`, which the driver runs as a pass of
   its own and hands to `update` (called alone, `update` takes them first); then the engine–learner
   mismatch of the online rows (`evr1.runner.learner.mismatch`): measured (`mismatch/...` metrics)
   and, as `AlgoSpec.rollout_correction` says, corrected: importance weights on the policy-gradient
   terms, rejected tokens out of the response mask;
2. for each of `epochs x mini_batches` optimizer steps: the global `Normaliser` (counted on
   every micro-batch of every worker, all-reduced), then forward/backward per micro-batch with
   the registered policy loss (entropy bonus and KL term as the `AlgoSpec` says);
3. if any worker saw a non-finite loss, every worker skips the step (counted in the metrics);
   otherwise gradients are summed over workers in one flat all-reduce, clipped by their global
   norm (a non-finite norm also skips), and AdamW steps; the schedule advances either way.

Data parallel: each of W workers calls `update` on its own shard, any size and modality, empty
included. Every worker runs the same collectives in the same order whatever its data, so none
waits forever. Replicated (default): every worker holds the whole model; gradients are summed in
one flat all-reduce. Sharded (`sharded=True`, FSDP2: `distributed.shard_model`): each forward
gathers the parameters and each backward reduce-scatters the gradients of the parameters it
reached, so every worker runs as many forward/backward passes as the busiest one (a worker with
fewer joins with zero-weight passes on a blank one-token text sample), and when any worker's
mini-batch has media, every media-less pass adds the zero-weight `vision_anchor` so that all
reach the vision tower. Sharded learners run the grouped forward too: its two forward calls per
micro-batch (the prompts, then the responses on their cache) are two FSDP forwards on every
worker, each gathering the layers' parameters (resharded after each, as FSDP2 does by default),
and a layer's gradient is reduce-scattered once per call in the backward (the two parts sum in the
sharded gradient). The metrics are those of the global batch, as one worker would log them
(`learner_stats`).

LoRA (`ModelSpec.lora`, replicated workers only): the frozen base stays in the spec's dtype and
only the adapters (float32) are trained, all-reduced, clipped and stepped by AdamW. `weights()`
gives the merged weights under the base model's names (`evr1.models.lora`); checkpoints hold the
adapters and the optimizer state; the HF export is the merged model plus the adapter beside it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from evr1.algos.aggregation import Normaliser
from evr1.algos.kl import KLController
from evr1.algos.offpolicy import TokenKinds
from evr1.errors import ConfigError
from evr1.models import lora
from evr1.models.forward import has_pixels, vision_anchor
from evr1.registry import POLICY_LOSSES
from evr1.runner.learner import checkpoint, distributed
from evr1.runner.learner.batching import Sample, mini_batches, share_prompts, stack_rows
from evr1.runner.learner.learner_stats import StepStats, Weights, merge_steps, stale_counts, stale_metrics
from evr1.runner.learner.logprobs import LogprobModel, compute_dtype, default_device
from evr1.runner.learner.mismatch import step_correction
from evr1.runner.learner.optim import build_optimizer
from evr1.specs import AlgoSpec, ModelSpec, OptimSpec, TrainerSpec

__all__ = ["Learner"]


@dataclass
class _Rows:
    """The per-token inputs of the loss for one micro-batch, padded to its response width."""

    indices: list[int]
    old: Tensor
    advantages: Tensor
    behaviour: Tensor | None
    ref: Tensor | None
    offline: Tensor
    mask: Tensor  # valid tokens the rollout correction did not reject
    staleness: Tensor  # [B] int
    rollout_weights: Tensor | None = None  # engine-mismatch importance weights (`Sample.rollout_weights`)

    def stale(self) -> bool:
        return bool((self.staleness > 0).any())

    def weights(self) -> Weights:
        """The tokens this micro-batch's metrics are means over (see `learner_stats`)."""
        kinds = TokenKinds.of(self.offline, self.behaviour, self.mask, self.staleness)
        offline = kinds.offline[:, None] & self.mask
        known = int((offline & ~kinds.unknown).sum())
        return Weights(int(self.mask.sum()), int((self.mask & ~offline).sum()), known, int(kinds.stale_known.sum()))


class Learner(LogprobModel):
    """Policy-gradient updates of a Qwen-VL model (see the module docstring for one step's recipe)."""

    def __init__(
        self,
        model: Any,
        *,
        algo: AlgoSpec,
        optim: OptimSpec,
        trainer: TrainerSpec,
        temperature: float = 1.0,
        pad_id: int | None = None,
        autocast: torch.dtype | None = None,
        sharded: bool = False,
    ) -> None:
        super().__init__(
            model,
            micro_batch_tokens=trainer.micro_batch_tokens,
            temperature=temperature,
            pad_id=pad_id,
            autocast=autocast,
            grouped=trainer.grouped_forward,
            chunk_tokens=trainer.logprob_chunk_tokens,
            kernel=trainer.logprob_kernel,
        )
        self.algo, self.optim_spec, self.trainer = algo, optim, trainer
        self.world_size = distributed.world_size()
        self.rank = torch.distributed.get_rank() if self.world_size > 1 else 0
        self.sharded = self.distributed_passes = sharded
        self.loss_fn = POLICY_LOSSES.get(algo.policy_loss)
        self.kl_in_loss = algo.kl.enabled and not algo.kl.as_reward_penalty
        self.kl = KLController(algo.kl) if self.kl_in_loss else None
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.lora_scale = lora.scalings(model)  # None: every weight is trained
        total = trainer.steps * trainer.mini_batches * trainer.epochs
        self.optimizer, self.scheduler = build_optimizer(self.params, optim, total)
        self.optimizer_steps = 0
        self.skipped_steps = 0

    @classmethod
    def from_spec(  # type: ignore[override]
        cls,
        spec: ModelSpec,
        algo: AlgoSpec,
        optim: OptimSpec,
        trainer: TrainerSpec,
        *,
        temperature: float = 1.0,
        rank: int = 0,
        world_size: int = 1,
        address: str | None = None,
        device: str | torch.device | None = None,
        fsdp: bool = False,
    ) -> Learner:
        """Load the model of `spec` in float32 (with LoRA: the frozen base in `spec.dtype`, adapters in float32;
        autocast per `spec.dtype`), joining a group of `world_size` workers.

        `temperature`: the rollout's (`RolloutSpec.temperature`), at which every log-prob is taken.

        With `world_size > 1` the default process group is initialised at `address` unless it
        already is. `fsdp` shards the model with FSDP2 (`distributed.shard_model`; NCCL on CUDA,
        gloo on CPU); otherwise every worker holds the whole model.
        """
        from evr1.models.loading import load_model

        device = torch.device(device) if device is not None else default_device()
        if world_size > 1 and distributed.world_size() == 1:
            if address is None:
                raise ConfigError(f"{world_size} learner workers need a rendezvous address ('host:port')")
            distributed.init_process_group(rank, world_size, address, backend=distributed.default_backend(device))
        if distributed.world_size() != world_size:
            raise ConfigError(
                f"learner expects {world_size} workers but the process group has {distributed.world_size()}"
            )
        dtype = compute_dtype(spec, device)
        if spec.lora is not None:
            if fsdp:
                raise ConfigError("model.lora is not supported with FSDP sharding yet: use replicated learners")
            model = load_model(spec, device=device)  # the frozen base in the spec's dtype: no float32 master copy
            model = lora.add_adapters(model, spec.lora, seed=trainer.seed)
        else:
            model = load_model(spec, device=device, dtype=torch.float32)
        if fsdp:
            model = distributed.shard_model(model, param_dtype=dtype)
            dtype = None  # FSDP casts parameters itself
        return cls(
            model, algo=algo, optim=optim, trainer=trainer, temperature=temperature, autocast=dtype, sharded=fsdp
        )

    # -- one training step ----------------------------------------------------------------
    def old_logprobs(self, samples: Sequence[Sample]) -> list[Tensor]:
        """Step 1: each sample's log-probs `(R,)` under the current weights, the old policy of this step's update.

        Offline rows are trained against their behaviour log-probs, so theirs are zeros (never used), except
        under FSDP, where every worker scores its whole shard (all run the same passes). Call on every worker.
        """
        scored = [i for i, s in enumerate(samples) if self.sharded or not s.offline]
        old: list[Tensor] = [torch.zeros(s.response_tokens) for s in samples]
        for i, logprobs in zip(scored, self.compute_logprobs([samples[i] for i in scored])):
            old[i] = logprobs
        return old

    def update(self, samples: Sequence[Sample], old: Sequence[Tensor] | None = None) -> dict[str, float]:
        """Train on this worker's shard of the step's samples; returns metrics of the global batch.

        `old`: the samples' `old_logprobs` when already taken (the driver's visible old-policy pass); None takes
        them here first. Every worker must pass them, or none (under FSDP they are collective passes).

        Besides the timings, one count describes the work rather than the batch: `prompt_fallback_rows`
        (grouped forward only), the rows whose prompt differs from the first of their group on their
        worker, forwarded with a prompt of their own (summed over workers; a group split over workers
        counts on each).

        When some row of some worker is stale (`Sample.staleness > 0`), the staleness of the batch's
        online rows: `stale/rows` (how many are stale), `stale/staleness_mean` and `stale/staleness_max`
        (over online rows), `stale/unknown_tokens` (stale rows' tokens without a behaviour log-prob,
        weighted 1); the weights' statistics come from the loss (`evr1.algos.objective`).
        """
        start = time.perf_counter()
        self._validate(samples)
        if old is None:
            old = self.old_logprobs(samples)
        elif len(old) != len(samples):
            raise ValueError(f"{len(old)} old log-prob rows for {len(samples)} samples")
        samples, mismatch = step_correction(samples, old, self.algo.rollout_correction)
        steps = []
        for _ in range(self.trainer.epochs):
            for part in mini_batches(samples, self.trainer.mini_batches):
                steps.append(self._optimizer_step([samples[i] for i in part], [old[i] for i in part]))
        metrics = {**merge_steps(steps), **mismatch}
        local = [float(len(samples)), sum(s.response_tokens for s in samples), sum(s.prompt_tokens for s in samples)]
        local += stale_counts(samples)
        if self.grouped:  # rows whose prompt differs from their group's: forwarded per-row
            local.append(share_prompts([s.prompt for s in samples], [s.group_id for s in samples])[2])
        totals = distributed.all_reduce_sum(torch.tensor(local, dtype=torch.float64)).tolist()
        elapsed = time.perf_counter() - start
        metrics.update(
            samples=totals[0],
            response_tokens=totals[1],
            tokens=totals[1] + totals[2],
            update_s=elapsed,
            tokens_per_s=(totals[1] + totals[2]) / max(elapsed, 1e-9),
        )
        metrics.update(stale_metrics(totals[3:7], samples))
        if self.grouped:
            metrics["prompt_fallback_rows"] = totals[7]
        if self.kl is not None and "kl" in metrics:
            metrics["kl_coef"] = self.kl.update(metrics["kl"], int(totals[0]))
        return metrics

    def _validate(self, samples: Sequence[Sample]) -> None:
        with_ref = sum(s.ref_logprobs is not None for s in samples)
        if self.kl_in_loss and with_ref < len(samples):
            raise ConfigError(
                f"KL is a loss term but {len(samples) - with_ref} of {len(samples)} samples have no ref_logprobs"
            )
        if 0 < with_ref < len(samples):
            raise ValueError(f"ref_logprobs given for {with_ref} of {len(samples)} samples: give all or none")

    def _rows(self, samples: Sequence[Sample], indices: list[int], old: Sequence[Tensor]) -> _Rows:
        chosen = [samples[i] for i in indices]
        width = max(s.response_tokens for s in chosen)
        lengths = torch.tensor([s.response_tokens for s in chosen])
        mask = torch.arange(width)[None, :] < lengths[:, None]
        kept = stack_rows([None if s.loss_mask is None else s.loss_mask.float() for s in chosen], width, missing=1.0)
        return _Rows(
            indices=indices,
            old=stack_rows([old[i] for i in indices], width),
            advantages=stack_rows([s.advantages for s in chosen], width),
            behaviour=stack_rows([s.behaviour_logprobs for s in chosen], width),
            ref=stack_rows([s.ref_logprobs for s in chosen], width),
            offline=torch.tensor([s.offline for s in chosen]),
            mask=mask if kept is None else mask & kept.bool(),
            staleness=torch.tensor([s.staleness for s in chosen]),
            rollout_weights=stack_rows([s.rollout_weights for s in chosen], width, missing=1.0),
        )

    def _normaliser(self, rows: Sequence[_Rows], media: bool) -> tuple[Normaliser, bool]:
        """The global normaliser of a mini-batch, and whether any worker's part of it has media."""
        local = sum((Normaliser.of(r.mask) for r in rows), Normaliser(0.0, 0.0))
        counts = distributed.all_reduce_sum(torch.tensor([local.tokens, local.sequences, media], dtype=torch.float64))
        return Normaliser(float(counts[0]), float(counts[1]), self.world_size if self.sharded else 1), bool(counts[2])

    def _micro_step(
        self, samples: Sequence[Sample], rows: _Rows, normaliser: Normaliser, vision: bool = False
    ) -> tuple[Tensor, dict]:
        """Forward and loss of one micro-batch (its share of the global loss) and the loss metrics.

        `vision`: the backward must reach the vision tower (FSDP, media on some worker); a
        micro-batch without media then adds the zero-valued `vision_anchor` to its loss.
        """
        chosen = [samples[i] for i in rows.indices]
        logprobs, entropy, mask = self._scores(chosen, entropy="grad" if self.algo.entropy_coef != 0 else "metric")
        device = logprobs.device
        optional = {
            k: v.to(device)
            for k, v in (("behaviour_logprobs", rows.behaviour), ("ref_logprobs", rows.ref))
            if v is not None
        }
        if rows.stale():  # passed only when some row is stale, as the registry's convention says
            optional["staleness"] = rows.staleness.to(device)
        if rows.rollout_weights is not None:  # passed only when the rollout correction weights
            optional["rollout_weights"] = rows.rollout_weights.to(device)
        mask = mask & rows.mask.to(device)  # without the tokens the rollout correction rejected
        loss, metrics = self.loss_fn(
            logprobs, rows.old.to(device), rows.advantages.to(device), mask,
            spec=self.algo, normaliser=normaliser, offline=rows.offline.to(device), entropy=entropy,
            kl_coef=self.kl.value if self.kl is not None else None, **optional,
        )  # fmt: skip
        if vision and not has_pixels([s.prompt for s in chosen]):
            with self._autocast():
                loss = loss + vision_anchor(self.model)
        return loss, metrics

    def _optimizer_step(self, samples: Sequence[Sample], old: Sequence[Tensor]) -> dict[str, float]:
        """One optimizer step on this worker's part of a mini-batch."""
        self.model.train()
        rows = [self._rows(samples, idx, old) for idx in self._micro_batches(samples)]
        normaliser, media = self._normaliser(rows, has_pixels([s.prompt for s in samples]))
        vision = self.sharded and media  # FSDP: every pass reaches the tower, as some worker's does
        stats = StepStats()
        for k in range(self._pass_count(len(rows))):
            dummy = k >= len(rows)  # FSDP: join the other workers' passes with a zero-weight one
            if dummy:
                blank = self._blank()  # text only: it reaches the vision tower only through the anchor
                part_samples, part = [blank], self._rows([blank], [0], [torch.zeros(1)])
            else:
                part_samples, part = samples, rows[k]
            loss, metrics = self._micro_step(part_samples, part, normaliser, vision)
            if dummy:
                loss = loss * 0.0
            elif bool(torch.isfinite(loss)):
                stats.add(loss, metrics, part.weights(), normaliser.world_size)
            else:
                stats.finite = False
                if not self.sharded:  # FSDP runs every backward; the step's gradients are dropped anyway
                    break
            if loss.requires_grad:
                loss.backward()
        merged = StepStats.merge(distributed.all_gather_objects(stats))
        lr = self.scheduler.get_last_lr()[0]
        grad_norm = math.nan
        if merged.finite:
            if not self.sharded:
                distributed.all_reduce_gradients(self.params)
            limit = self.optim_spec.grad_clip if self.optim_spec.grad_clip is not None else math.inf
            norm = torch.nn.utils.clip_grad_norm_(self.params, limit)
            grad_norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)  # a DTensor under FSDP
        skipped = not (merged.finite and math.isfinite(grad_norm))
        if not skipped:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        self.optimizer_steps += 1
        self.skipped_steps += skipped
        return {**merged.summary(), "grad_norm": grad_norm, "lr": lr, "skipped_steps": float(skipped)}

    # -- weights and checkpoints ----------------------------------------------------------
    def _full_state(self) -> dict[str, Tensor]:
        """The model's whole state dict, adapters included (gathered from shards under FSDP)."""
        if not self.sharded:
            return self.model.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def weights(self) -> dict[str, Tensor]:
        """The policy's state dict under the base model's names (call on every worker under FSDP).

        With LoRA: the merged weights `W + scale * B @ A`, on the CPU; the model is not changed.
        """
        if self.lora_scale is None:
            return self._full_state()
        return lora.merged_state_dict(self._full_state(), self.lora_scale)

    def _trained_state(self) -> dict[str, Tensor]:
        """What a checkpoint holds of the model: the whole state dict, or with LoRA the adapters only."""
        full = self._full_state()
        return full if self.lora_scale is None else lora.adapter_state(full)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue training exactly: model, optimizer, scheduler, counters."""
        if self.sharded:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

            options = StateDictOptions(full_state_dict=True, cpu_offload=True)
            optimizer = get_optimizer_state_dict(self.model, self.optimizer, options=options)
        else:
            optimizer = self.optimizer.state_dict()
        return {
            "model": self._trained_state(),
            "optimizer": optimizer,
            "scheduler": self.scheduler.state_dict(),
            "optimizer_steps": self.optimizer_steps,
            "skipped_steps": self.skipped_steps,
            "kl_coef": self.kl.value if self.kl is not None else None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.sharded:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

            set_state_dict(
                self.model,
                self.optimizer,
                model_state_dict=state["model"],
                optim_state_dict=state["optimizer"],
                options=StateDictOptions(full_state_dict=True),
            )
        else:
            if self.lora_scale is None:
                self.model.load_state_dict(state["model"])
            else:
                lora.load_adapters(self.model, state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.optimizer_steps = int(state["optimizer_steps"])
        self.skipped_steps = int(state["skipped_steps"])
        if self.kl is not None and state.get("kl_coef") is not None:
            self.kl.value = float(state["kl_coef"])

    def save(self, directory: str) -> None:
        """Write the learner state into `directory` atomically (call on every worker; rank 0 writes)."""
        state = self.state_dict()
        if self.rank == 0:
            model_state = state.pop("model")
            optimizer_state = {"optimizer": state.pop("optimizer"), "scheduler": state.pop("scheduler")}
            checkpoint.save_state(directory, model_state, optimizer_state, state)

    def load(self, directory: str) -> None:
        """Restore the state written by `save` (every worker reads the same files)."""
        model_state, optimizer_state, meta = checkpoint.load_state(directory)
        self.load_state_dict({"model": model_state, **optimizer_state, **meta})

    def export_hf(self, directory: str, processor: Any) -> None:
        """Save the current model and `processor` as an HF directory (call on every worker; rank 0 writes).

        With LoRA the directory holds the merged model (no peft needed to load it) and the adapter
        in peft's format in its `lora_adapter/` folder.
        """
        full = self._full_state()
        if self.rank != 0:
            return
        if self.lora_scale is None:
            checkpoint.export_hf(self.model, processor, directory, state_dict=full if self.sharded else None)
        else:
            merged = lora.merged_state_dict(full, self.lora_scale)
            checkpoint.export_hf(self.model, processor, directory, state_dict=merged, adapter_state=full)
