"""Quickstart: a tiny random-init Qwen2.5-VL learns synthetic video and image questions on CPU."""

import fiddle as fdl

from evr1.experiment import Experiment
from evr1.specs import (
    AlgoSpec,
    CacheSpec,
    DataSpec,
    EvalSpec,
    ImageSpec,
    MixerSpec,
    ModelSpec,
    OptimSpec,
    RewardSpec,
    RolloutSpec,
    SynthSpec,
    TrainerSpec,
    VideoSpec,
)

DATA = "data/quickstart"


def experiment() -> fdl.Config[Experiment]:
    """Tiny model, synthetic colour questions on 56x56 clips and images, GRPO + one offline answer per group."""
    video = fdl.Config(VideoSpec, fps=4.0, min_frames=4, max_frames=4, min_pixels=56 * 56, max_pixels=56 * 56)
    return fdl.Config(
        Experiment,
        description=__doc__,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", dtype="float32"),
        data=fdl.Config(
            DataSpec,
            train=(f"{DATA}/train.jsonl",),
            val=(f"{DATA}/val.jsonl", f"{DATA}-blank/val.jsonl"),  # the blank copy: does it use the pixels?
            synth=fdl.Config(SynthSpec, tasks=("quickstart",), out=DATA, n_train=256, n_val=64),
            video=video,
            image=fdl.Config(ImageSpec, min_pixels=56 * 56, max_pixels=56 * 56),
            cache=fdl.Config(CacheSpec, path=f"{DATA}/cache.lmdb", mode="prefer"),
        ),
        rollout=fdl.Config(RolloutSpec, n=8, temperature=1.0, max_prompt_tokens=512, max_response_tokens=8),
        mixer=fdl.Config(MixerSpec, name="offline_k", k=1),
        reward=fdl.Config(RewardSpec, strictness="strict"),
        algo=fdl.Config(AlgoSpec, advantage="grpo", policy_loss="ppo_clip", clip_low=0.2, clip_high=0.28),
        optim=fdl.Config(OptimSpec, lr=5e-4),
        trainer=fdl.Config(TrainerSpec, steps=60, prompts_per_step=8, val_every=10, seed=0),
        eval=fdl.Config(EvalSpec, video=video),  # the same VideoSpec object as training
    )


def debug() -> fdl.Config[Experiment]:
    """Three steps, for smoke tests."""
    cfg = experiment()
    cfg.trainer.steps = 3
    cfg.trainer.val_every = 3
    return cfg
