"""The loop, the optimizer and the Ray resources."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from evr1.specs.base import PositiveFloat, PositiveInt, Probability, Spec


class OptimSpec(Spec):
    """AdamW and its learning-rate schedule.

    Optimizer step k (from 0) uses `lr * (k + 1) / warmup_steps` during warm-up, then the schedule
    decays from `lr` towards `lr * min_lr_ratio` over the remaining steps of the run (`cosine`,
    `linear`) or keeps `lr` (`constant`). `grad_clip` bounds the global gradient norm (None: off).
    """

    lr: Annotated[float, Field(gt=0)] = 1e-6
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: Annotated[float, Field(gt=0)] = 1e-8
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    min_lr_ratio: Probability = 0.0
    grad_clip: Annotated[float, Field(gt=0)] | None = 1.0


class TrainerSpec(Spec):
    """The loop: steps, batch sizes, seed, checkpoint and validation cadence, output."""

    steps: PositiveInt = 100
    prompts_per_step: PositiveInt = 8
    micro_batch_tokens: PositiveInt = 16384  # tokens computed per forward pass (a shared prompt counts once)
    # Learner passes compute each group's prompt (with its media) once and its responses on its KV cache;
    # False forwards every prompt + response row whole (same numbers, n times the prompt's compute).
    grouped_forward: bool = True
    # Learner log-probs and entropy go through the LM head this many response tokens at a time, each chunk recomputed
    # in the backward, so [tokens, vocab] logits never exist whole (same numbers); 0: the whole logits at once.
    logprob_chunk_tokens: Annotated[int, Field(ge=0)] = 1024
    # "liger": the log-probs through liger-kernel's fused linear cross-entropy (CUDA only, `pip install evr1[liger]`;
    # the entropy metric still goes through the chunked torch path, and an entropy bonus keeps torch throughout).
    logprob_kernel: Literal["torch", "liger"] = "torch"
    mini_batches: PositiveInt = 1  # optimizer steps per epoch over a step's batch (groups kept whole)
    epochs: PositiveInt = 1  # passes over a step's batch, against the same old-policy log-probs
    # Pipelined rollouts: the engine generates up to this many steps ahead, with weights as many updates old,
    # while the learners update (stale rows get the decoupled-PPO correction, `OffPolicySpec`); 0: in turn.
    max_staleness: Annotated[int, Field(ge=0)] = 0
    seed: int = 0
    # Checkpoint cadence: after every `save_every` steps (0: none by count) and after the first step ending
    # `save_every_minutes` after the last checkpoint (0: none by time), whichever comes first. Any cadence
    # gives an exact resume; the time-based one bounds the work a preemption or a crash can lose.
    save_every: Annotated[int, Field(ge=0)] = 0
    save_every_minutes: Annotated[float, Field(ge=0)] = 30.0
    # Preemption: SIGTERM, or a first Ctrl-C, stops the run at the end of the step in progress with a
    # checkpoint (exit status 75). Past `stop_grace_s` from the signal it stops at once instead, keeping
    # the previous checkpoint: set it below the scheduler's own grace (Slurm `--signal`, Kubernetes
    # `terminationGracePeriodSeconds`) less the time a checkpoint takes to write.
    stop_grace_s: PositiveFloat = 120.0
    # Workers lost (an actor's process or node gone, e.g. kill -9, the OOM killer, a spot node) the run recovers
    # from by itself: it records the loss, restarts the workers (within resources.placement_timeout_s) and goes on
    # from the last checkpoint. One more loss stops the run, with the command that resumes it.
    max_failures: Annotated[int, Field(ge=0)] = 3
    val_every: Annotated[int, Field(ge=0)] = 0
    log_samples: Annotated[int, Field(ge=0)] = 2
    run_root: str = "runs"
    tensorboard: bool = True
    wandb_project: str | None = None  # log to Weights & Biases too (needs `pip install wandb`)
    # Checkpoint retention: after each save keep the newest `keep_checkpoints` (0: keep all) and, with `keep_best`
    # (a logged metric such as "val/data/val/accuracy"), also the one whose step has its best value so far
    # (highest, or lowest with best_mode="min"; a step that did not log it counts its latest earlier value).
    keep_checkpoints: Annotated[int, Field(ge=0)] = 0
    keep_best: str | None = None
    best_mode: Literal["max", "min"] = "max"

    @model_validator(mode="after")
    def _retention(self) -> TrainerSpec:
        if self.keep_best is not None and not self.keep_checkpoints:
            raise ValueError("trainer.keep_best goes with trainer.keep_checkpoints > 0 (with 0 every checkpoint is kept)")
        if self.keep_checkpoints and not (self.save_every or self.save_every_minutes):
            raise ValueError("trainer.keep_checkpoints needs trainer.save_every > 0 or trainer.save_every_minutes > 0:"
                             " this run saves no checkpoints")
        return self


class ResourcesSpec(Spec):
    """Ray and placement: embedded local Ray unless `ray_address` is given.

    `learner_sharding`: how the `learner_workers` data-parallel workers hold the model.
    "replicated" keeps the whole model and its AdamW state on every worker (about 16 bytes per
    parameter: 112 GB for 7B) and sums gradients in one all-reduce; "fsdp" shards parameters,
    gradients and optimizer state over the workers with FSDP2 (about 16/W bytes per parameter
    each, plus the gathered weights of the embeddings, vision tower and head, and of one decoder
    layer at a time), at the cost of gathering weights for every forward and backward. Needs at
    least 2 learner workers; runs on GPUs (NCCL) or CPUs (gloo).
    """

    ray_address: str | None = None
    num_cpus: PositiveInt | None = None
    num_gpus: Annotated[int, Field(ge=0)] = 0
    learner_workers: PositiveInt = 1
    learner_sharding: Literal["replicated", "fsdp"] = "replicated"
    reward_workers: PositiveInt = 1
    torch_threads: PositiveInt = 1  # per actor: several actors share the machine's cores
    object_store_memory_mb: PositiveInt = 512
    placement: Literal["pack", "spread"] = "pack"  # how the placement group lays the actors' bundles on nodes
    placement_timeout_s: PositiveFloat = 120.0  # refuse when the cluster cannot place the run's actors by then
    rendezvous_timeout_s: PositiveFloat = 60.0  # refuse when a learner cannot join the others by then

    @model_validator(mode="after")
    def _gpus_for_learners(self) -> ResourcesSpec:
        if 0 < self.num_gpus < self.learner_workers:
            raise ValueError(
                f"learner_workers ({self.learner_workers}) > num_gpus ({self.num_gpus}): each learner worker needs a GPU"
            )
        if self.learner_sharding == "fsdp" and self.learner_workers < 2:
            raise ValueError(
                f"learner_sharding='fsdp' shards the model over learner workers but learner_workers is "
                f"{self.learner_workers}: set learner_workers >= 2 or learner_sharding='replicated'"
            )
        return self
