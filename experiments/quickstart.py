"""Quickstart: a tiny random-init Qwen2.5-VL learning synthetic video and image questions on CPU."""

import fiddle as fdl

from evr1.experiment import Experiment
from evr1.specs import AlgoSpec, DataSpec, EvalSpec, ModelSpec, OptimSpec, RolloutSpec, TrainerSpec, VideoSpec


def experiment() -> fdl.Config[Experiment]:
    """Tiny model, synthetic data, GRPO with clip-higher; minutes on a laptop CPU."""
    video = fdl.Config(VideoSpec, fps=2.0, min_frames=4, max_frames=8, min_pixels=56 * 56, max_pixels=56 * 56)
    return fdl.Config(
        Experiment,
        description=__doc__,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", dtype="float32"),
        data=fdl.Config(DataSpec, video=video),  # the same VideoSpec for training and evaluation
        rollout=fdl.Config(RolloutSpec, n=8, temperature=1.0, max_prompt_tokens=512, max_response_tokens=16),
        algo=fdl.Config(AlgoSpec, advantage="grpo", policy_loss="ppo_clip", clip_low=0.2, clip_high=0.28),
        optim=fdl.Config(OptimSpec, lr=5e-4),
        trainer=fdl.Config(TrainerSpec, steps=60, prompts_per_step=4, seed=0),
        eval=fdl.Config(EvalSpec, video=video),
    )


def debug() -> fdl.Config[Experiment]:
    """Three steps, for smoke tests."""
    cfg = experiment()
    cfg.trainer.steps = 3
    return cfg
