"""GPU recipes shared by the paper experiments (`evr1/experiments/qwen25vl_7b_video.py`, `qwen3vl_8b_video.py`).

`video_grpo(model)` is video GRPO at the EasyVideoR1 report's published settings: 2 fps, at most
128 frames of at most 262,144 pixels, images up to 1,048,576 pixels, n = 8 responses per prompt,
ratio clip 0.2 / 0.28 (clip-higher), no KL term, learning rate 1e-6. The other values are ours,
chosen for an 8 x 80 GB node and marked as such below. `small_gpu`, `lora` and `multi_node` are
edits of a config (`cfg -> cfg`). The model is a local HF directory or a hub id (loaded only when
the run starts): `evr1 run qwen25vl_7b_video --set model.name=/models/Qwen2.5-VL-7B-Instruct`; the data
are the user's record files (`--set "data.train=('/data/train.jsonl',)"`).
"""

from __future__ import annotations

import fiddle as fdl

from evr1.experiment import Experiment
from evr1.specs import (
    AlgoSpec,
    CacheSpec,
    DataSpec,
    EvalSpec,
    ImageSpec,
    LoraSpec,
    ModelSpec,
    OptimSpec,
    ResourcesSpec,
    RolloutSpec,
    TrainerSpec,
    VideoSpec,
)

DATA = "data/video_rl"  # default record files: point data.train / data.val at yours
FRAME_PIXELS = 262_144  # published: per video frame
IMAGE_PIXELS = 1_048_576  # published: per image
MAX_FRAMES = 128  # published
# Ours: a 128-frame video at 262,144 px is 64 temporal patches of <= 334 merged tokens (Qwen2.5-VL;
# 256 for Qwen3-VL's 32 px merged patches), about 21.4k tokens, plus the question.
MAX_PROMPT_TOKENS = 24_576
MAX_RESPONSE_TOKENS = 2_048


def video_grpo(model: str, description: str) -> fdl.Config[Experiment]:
    """Video GRPO of `model` at the published settings, on one 8-GPU node through Ray."""
    video = fdl.Config(VideoSpec, fps=2.0, max_frames=MAX_FRAMES, max_pixels=FRAME_PIXELS)
    image = fdl.Config(ImageSpec, max_pixels=IMAGE_PIXELS)
    return fdl.Config(
        Experiment,
        description=description,
        model=fdl.Config(ModelSpec, name=model, dtype="bfloat16", gradient_checkpointing=True),
        data=fdl.Config(
            DataSpec,
            train=(f"{DATA}/train.jsonl",),
            val=(f"{DATA}/val.jsonl",),
            video=video,
            image=image,
            cache=fdl.Config(CacheSpec, path=f"{DATA}/cache.lmdb", mode="prefer"),
        ),
        rollout=fdl.Config(
            RolloutSpec, engine="vllm", n=8, temperature=1.0, top_p=1.0,
            max_prompt_tokens=MAX_PROMPT_TOKENS, max_response_tokens=MAX_RESPONSE_TOKENS,
            colocate=True, gpu_memory_utilization=0.5,  # ours: vLLM sleeps while the learner trains
        ),
        algo=fdl.Config(AlgoSpec, advantage="grpo", policy_loss="ppo_clip", clip_low=0.2, clip_high=0.28,
                        loss_agg="token_mean"),  # KL off: the AlgoSpec default
        optim=fdl.Config(OptimSpec, lr=1e-6, weight_decay=1e-2, grad_clip=1.0),  # weight decay, clip: ours
        trainer=fdl.Config(
            TrainerSpec, steps=500, prompts_per_step=128, mini_batches=4,  # ours
            micro_batch_tokens=32_768, save_every=50, val_every=50,
        ),
        resources=fdl.Config(ResourcesSpec, num_gpus=8, learner_workers=8, learner_sharding="fsdp", num_cpus=64,
                             reward_workers=8, torch_threads=4, object_store_memory_mb=65_536),  # fsdp: 7-8B + AdamW
        eval=fdl.Config(EvalSpec, video=video, image=image),  # the same VideoSpec and ImageSpec objects as training
    )


def small_gpu(cfg: fdl.Config[Experiment]) -> fdl.Config[Experiment]:
    """One GPU (24-48 GB): 32 frames of at most 100,352 px, 4 responses, short answers, 8 prompts a step."""
    cfg.data.video.max_frames = 32
    cfg.data.video.max_pixels = 128 * 28 * 28
    cfg.data.image.max_pixels = 256 * 28 * 28
    cfg.rollout.n = 4
    cfg.rollout.max_prompt_tokens = 4_096
    cfg.rollout.max_response_tokens = 512
    cfg.rollout.gpu_memory_utilization = 0.4
    cfg.trainer.prompts_per_step = 8
    cfg.trainer.mini_batches = 1
    cfg.trainer.micro_batch_tokens = 8_192
    cfg.resources.num_gpus = 1
    cfg.resources.learner_workers = 1
    cfg.resources.learner_sharding = "replicated"  # one worker: nothing to shard over
    cfg.resources.num_cpus = 8
    cfg.resources.reward_workers = 2
    cfg.resources.object_store_memory_mb = 8_192
    return cfg


def lora(cfg: fdl.Config[Experiment], rank: int = 64, alpha: float = 128.0, lr: float = 1e-5) -> fdl.Config[Experiment]:
    """Train LoRA adapters on the language model's attention and MLP projections (vision tower frozen).

    Published practice ("LoRA Without Regret", Schulman et al., Thinking Machines Lab, 2025): LoRA
    matches full fine-tuning in RL even at low rank, works best on every weight matrix (MLP
    included), and wants about 10x the full fine-tuning learning rate: 1e-5 against the recipe's
    1e-6. Rank 64 with alpha = 2 x rank is the common convention; all three values are ours to
    tune. Workers stay replicated (the frozen base is kept in bfloat16; FSDP is not supported).
    """
    cfg.model.lora = fdl.Config(LoraSpec, rank=rank, alpha=alpha)
    cfg.optim.lr = lr
    cfg.resources.learner_sharding = "replicated"
    return cfg


def multi_node(cfg: fdl.Config[Experiment], nodes: int = 2, gpus_per_node: int = 8) -> fdl.Config[Experiment]:
    """Join the running Ray cluster (`ray start --head` / `--address` on each node) and use all its GPUs."""
    cfg.resources.ray_address = "auto"
    cfg.resources.num_gpus = nodes * gpus_per_node
    cfg.resources.learner_workers = nodes * gpus_per_node
    cfg.resources.num_cpus = None  # the cluster's
    cfg.resources.object_store_memory_mb = 65_536
    return cfg
