"""Qwen3.5 video GRPO at EasyVideoR1's Qwen3.5 settings (GPU; vLLM rollouts, Ray).

The peer's Qwen3.5 branch (EasyVideoR1, `examples/video_rl_qwen3.5/video_rl_v1_dapo.sh` with its
config `video_rl_v1_qwen3_5.yaml`) trains Qwen3.5-2B on videos of up to 256 frames at 2 fps from
its cache, clip 0.2/0.28, KL off. Frame and image pixel budgets are those of `evr1.recipes` (the
peer's published ones for Qwen2.5-VL/Qwen3-VL): its Qwen3.5 budgets were not read for this file.
The model is hybrid (Gated DeltaNet linear attention in 3 of 4 layers): on a GPU install the
`linear-attention` extra (flash-linear-attention, causal-conv1d), else transformers runs its torch fallback.

    evr1 run qwen35_video --set model.name=/models/Qwen3.5-2B \
        --set "data.train=('/data/train.jsonl',)" --set "data.val=('/data/val.jsonl',)"

Variants: `:small_gpu` (one GPU), `:small_gpu_lora` (one GPU, LoRA adapters on the attention, linear
attention and MLP projections), `:multi_node` (two 8-GPU nodes of a running Ray cluster).
Nothing of this file has run on a GPU yet (see docs/gpu.md).
"""

import fiddle as fdl

from evr1 import recipes
from evr1.experiment import Experiment

MODEL = "Qwen/Qwen3.5-2B"  # a hub id (needs a network when the run starts) or a local directory
MAX_FRAMES = 256  # EasyVideoR1's Qwen3.5 config: 256 frames at 2 fps


def experiment() -> fdl.Config[Experiment]:
    """Qwen3.5-2B video GRPO, EasyVideoR1's Qwen3.5 frame settings, one 8-GPU node."""
    cfg = recipes.video_grpo(MODEL, __doc__)
    cfg.data.video.max_frames = MAX_FRAMES  # the one VideoSpec: eval reads the same object
    # Ours: 128 temporal patches of <= 256 merged tokens (32 px patches at 262,144 px) = 32,768 video tokens, plus
    # a timestamped group per patch and the question; a micro-batch holds at least one such prompt.
    cfg.rollout.max_prompt_tokens = 36_864
    cfg.trainer.micro_batch_tokens = 40_960
    return cfg


def small_gpu() -> fdl.Config[Experiment]:
    """The same on one GPU: 32 frames of <= 100,352 px, n=4, 8 prompts per step."""
    return recipes.small_gpu(experiment())


def small_gpu_lora() -> fdl.Config[Experiment]:
    """One GPU with LoRA adapters (rank 64, alpha 128, lr 1e-5) on the language model; vision frozen."""
    return recipes.lora(recipes.small_gpu(experiment()))


def multi_node() -> fdl.Config[Experiment]:
    """The same on two 8-GPU nodes joined in a Ray cluster (ray_address='auto')."""
    return recipes.multi_node(experiment())
