"""Qwen3-VL-8B video GRPO at the EasyVideoR1 published settings (GPU; vLLM rollouts, Ray).

2 fps, up to 128 frames of 262,144 px, images up to 1,048,576 px, n=8, clip 0.2/0.28, no KL,
lr 1e-6 (see `evr1.recipes` for the values that are ours). Point it at your model and data:

    evr1 run qwen3vl_8b_video --set model.name=/models/Qwen3-VL-8B-Instruct \
        --set "data.train=('/data/train.jsonl',)" --set "data.val=('/data/val.jsonl',)"

Variants: `:small_gpu` (one GPU), `:small_gpu_lora` (one GPU, LoRA adapters), `:multi_node`
(two 8-GPU nodes of a running Ray cluster).
"""

import fiddle as fdl

from evr1 import recipes
from evr1.experiment import Experiment

MODEL = "Qwen/Qwen3-VL-8B-Instruct"  # a hub id (needs a network when the run starts) or a local directory


def experiment() -> fdl.Config[Experiment]:
    """Qwen3-VL-8B video GRPO, published EasyVideoR1 settings, one 8-GPU node."""
    return recipes.video_grpo(MODEL, __doc__)


def small_gpu() -> fdl.Config[Experiment]:
    """The same on one GPU: 32 frames of <= 100,352 px, n=4, 8 prompts per step."""
    return recipes.small_gpu(experiment())


def small_gpu_lora() -> fdl.Config[Experiment]:
    """One GPU with LoRA adapters (rank 64, alpha 128, lr 1e-5) on the language model; vision frozen."""
    return recipes.lora(recipes.small_gpu(experiment()))


def multi_node() -> fdl.Config[Experiment]:
    """The same on two 8-GPU nodes joined in a Ray cluster (ray_address='auto')."""
    return recipes.multi_node(experiment())
