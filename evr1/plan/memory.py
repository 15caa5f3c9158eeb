"""Predicted peak memory of one learner GPU for a training step: the terms, their sum, and what fits.

The model counts the bytes a step holds at its peak, term by term (`Estimate.terms`):

- `weights`: float32 parameters (LoRA: the frozen base in the compute dtype, the adapters in
  float32), divided over the data-parallel workers under FSDP2, plus the compute-dtype copies it
  gathers: the root unit (embeddings, head, vision tower) and two decoder layers (one computing,
  one prefetched). Replicated under autocast: the autocast cache of compute-dtype weights.
- `gradients`: float32, of the trained parameters, sharded like them.
- `optimizer`: AdamW's two float32 moments of the trained parameters, sharded like them.
- `activations`: the decoder's saved tensors for the largest micro-batch (the longest prompt once
  and as many of its `n` responses as `micro_batch_tokens` admits; per-row forwarding repeats the
  prompt for every row). Per token and layer a decoder layer keeps `6h + 3q + 2kv + heads + 4i + 2`
  elements (norm inputs and outputs, rotated queries and keys, values, attention output and its
  log-sum-exp, the MLP's four intermediates); with gradient checkpointing only each layer's input
  (`h`) stays, plus one layer recomputed in full and its gradients. The grouped forward also keeps each layer's
  prompt keys and values, and its response pass one copy of them per row.
- `logprob chunk`: the head's `[tokens, vocab]` float32 logits and their backward (4 such tensors at
  once, 5 when the entropy takes gradients: measured with `PeakMemory`), for `logprob_chunk_tokens`
  tokens, or every response token when that is 0.
- `vision tower`: per patch and block `11w + heads + 4i + 2` elements (SwiGLU, Qwen2.5-VL) or
  `9w + heads + 2i + 4` (fc-GELU-fc), only each block's input with checkpointing (plus one block
  over one pass of `vision_frames_per_pass`, twice: recomputed, and its gradients), none kept when
  the tower is frozen; plus the pixels.
- `reference model`: a whole compute-dtype copy when the KL term is on.

It counts what torch allocates for tensors; the CUDA caching allocator's slack, NCCL buffers and
a colocated rollout engine's residue come on top (the planner's default headroom is 10%). The
coefficients are counted from the layers' saved tensors, and checked against measured peaks on
CPU (`tests/plan/test_memory_plan.py`) within 15%.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from evr1.plan.architecture import Architecture
from evr1.specs.model import LANGUAGE_PROJECTIONS

GiB = 1024**3


@dataclass(frozen=True)
class Workload:
    """What one learner step computes and how: the media, the rows, the parallelism and the memory settings."""

    frames: int  # of the longest video prompt
    tokens_per_patch: int  # merged visual tokens per temporal patch (frame pair)
    text_tokens: int  # the prompt's text around the video
    n: int  # responses per prompt
    response_tokens: int  # the longest response
    micro_batch_tokens: int
    dp: int = 1  # learner workers
    fsdp: bool = False
    compute_bytes: int = 2  # 2: bfloat16 autocast; 4: float32
    lora_params: int = 0  # 0: full fine-tuning
    freeze_vision: bool = False
    checkpointing: bool = False
    grouped: bool = True
    chunk_tokens: int = 1024  # 0: whole logits
    vision_frames_per_pass: int = 0  # 0: one call
    reference: bool = False  # a KL reference model on the learner
    entropy_grad: bool = False  # an entropy bonus (`AlgoSpec.entropy_coef != 0`): the entropy takes gradients

    @property
    def temporal_patches(self) -> int:
        return max(1, self.frames // 2)

    @property
    def prompt_tokens(self) -> int:
        return self.temporal_patches * self.tokens_per_patch + self.text_tokens

    @property
    def rows_per_micro_batch(self) -> int:
        """Rows of the longest prompt that one micro-batch computes (a group over the budget is split)."""
        if self.grouped:
            room = (self.micro_batch_tokens - self.prompt_tokens) // self.response_tokens
        else:
            room = self.micro_batch_tokens // (self.prompt_tokens + self.response_tokens)
        return max(1, min(self.n, room))


@dataclass(frozen=True)
class Estimate:
    """Predicted bytes per term (insertion order is the printing order) and their sum."""

    terms: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.terms.values())


def _weights(arch: Architecture, w: Workload) -> float:
    shards = w.dp if w.fsdp else 1
    if w.lora_params:
        stored = (w.compute_bytes * arch.params + 4 * w.lora_params) / shards
    else:
        stored = 4 * arch.params / shards
    if w.fsdp:
        root = arch.params - arch.layers * arch.layer_params
        return stored + w.compute_bytes * (root + 2 * arch.layer_params)
    if w.compute_bytes < 4 and not w.lora_params:
        return stored + w.compute_bytes * arch.params  # autocast's cache of the weights it casts
    return stored


def lora_params(arch: Architecture, rank: int, targets: tuple[str, ...]) -> int:
    """Parameters of rank-`rank` adapters (A and B) on the named projections of every decoder layer."""
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    h, i = arch.hidden, arch.intermediate
    sides = {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
             "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}
    return arch.layers * rank * sum(sum(sides[t]) for t in targets if t in sides)


def _trained(arch: Architecture, w: Workload) -> int:
    if w.lora_params:
        return w.lora_params
    return arch.params - (arch.vision_params if w.freeze_vision else 0)


def layer_elements(arch: Architecture) -> int:
    """Elements a decoder layer saves for its backward, per token (see the module docstring)."""
    q = arch.heads * arch.head_dim
    return 6 * arch.hidden + 3 * q + 2 * arch.kv_heads * arch.head_dim + arch.heads + 4 * arch.intermediate + 2


def block_elements(arch: Architecture) -> int:
    """Elements a vision block saves for its backward, per patch."""
    if arch.v_gated:
        return 11 * arch.v_hidden + arch.v_heads + 4 * arch.v_intermediate + 2
    return 9 * arch.v_hidden + arch.v_heads + 2 * arch.v_intermediate + 4


def _activations(arch: Architecture, w: Workload) -> float:
    rows, prompt, b = w.rows_per_micro_batch, w.prompt_tokens, w.compute_bytes
    tokens = prompt + rows * w.response_tokens if w.grouped else rows * (prompt + w.response_tokens)
    kv = 2 * arch.kv_heads * arch.head_dim * b  # a token's keys and values in one layer
    layer = tokens * layer_elements(arch) * b
    copies = rows * prompt * kv if w.grouped else 0.0  # the response pass's per-row prefix
    if w.checkpointing:
        kept = prompt * kv if w.grouped else 0.0
        return arch.layers * (tokens * arch.hidden * b + kept) + 2 * (layer + copies)  # one layer and its gradients
    return arch.layers * (layer + copies)


def _logits(arch: Architecture, w: Workload) -> float:
    tokens = w.rows_per_micro_batch * w.response_tokens
    copies = 5 if w.entropy_grad else 4
    return copies * 4 * arch.vocab * (min(tokens, w.chunk_tokens) if w.chunk_tokens else tokens)


def _vision(arch: Architecture, w: Workload) -> float:
    per_patch = arch.merge**2
    patches = w.temporal_patches * w.tokens_per_patch * per_patch
    prompts = 1 if w.grouped else w.rows_per_micro_batch
    b = w.compute_bytes
    pixels = patches * 3 * arch.temporal_patch * arch.patch**2 * 4
    merged = w.temporal_patches * w.tokens_per_patch * arch.hidden * b * (1 + arch.deepstack)
    passes = -(-w.temporal_patches // w.vision_frames_per_pass) if w.vision_frames_per_pass else 1
    one_block = patches / passes * block_elements(arch) * b
    if w.freeze_vision or w.lora_params:
        saved = 0.0
    elif w.checkpointing:
        saved = arch.v_depth * patches * arch.v_hidden * b + one_block  # the recomputed block's gradients
    else:
        saved = arch.v_depth * patches * block_elements(arch) * b
    return prompts * (pixels + merged + saved + one_block)


def estimate(arch: Architecture, w: Workload) -> Estimate:
    """The predicted peak bytes of one learner GPU, by term."""
    trained = _trained(arch, w)
    shards = w.dp if w.fsdp else 1
    terms = {
        "weights": _weights(arch, w),
        "gradients": 4 * trained / shards,
        "optimizer": 8 * trained / shards,
        "activations": _activations(arch, w),
        "logprob chunk": _logits(arch, w),
        "vision tower": _vision(arch, w),
    }
    if w.reference:
        terms["reference model"] = w.compute_bytes * arch.params
    return Estimate(terms)


def largest_frames(arch: Architecture, workload_at: Callable[[int], Workload], budget: float,
                   *, limit: int = 1 << 16) -> int:
    """The most frames (even) whose workload `workload_at(frames)` is estimated to fit in `budget` bytes; 0 if none.

    `workload_at` gives the step at a frame count (its tokens per frame pair may shrink with the count,
    as a total pixel budget makes them); the estimate grows with the frames, so a bisection finds it.
    """
    if estimate(arch, workload_at(2)).total > budget:
        return 0
    low, high = 2, limit
    while low < high:
        mid = (low + high + 2) // 4 * 2
        if estimate(arch, workload_at(mid)).total <= budget:
            low = mid
        else:
            high = mid - 2
    return low


def advice(arch: Architecture, w: Workload, budget: float) -> list[str]:
    """What to change, largest saving first, when `w` does not fit in `budget` bytes (empty when it fits)."""
    base = estimate(arch, w)
    if base.total <= budget:
        return []
    options = {
        "model.gradient_checkpointing=True": replace(w, checkpointing=True),
        "trainer.logprob_chunk_tokens=1024": replace(w, chunk_tokens=1024) if not w.chunk_tokens else w,
        "trainer.grouped_forward=True": replace(w, grouped=True),
        f"resources.learner_workers={2 * w.dp} with learner_sharding='fsdp'": replace(w, dp=2 * w.dp, fsdp=True),
        "model.vision_frames_per_pass=8": replace(w, vision_frames_per_pass=8),
        "model.lora=LoraSpec() (adapters only)": replace(w, lora_params=lora_params(arch, 64, LANGUAGE_PROJECTIONS)),
        f"a smaller micro-batch (trainer.micro_batch_tokens={w.micro_batch_tokens // 2})":
            replace(w, micro_batch_tokens=w.micro_batch_tokens // 2),
        f"fewer frames (data.video.max_frames={max(2, w.frames // 2)})": replace(w, frames=max(2, w.frames // 2)),
    }
    saved = {name: base.total - estimate(arch, option).total for name, option in options.items()}
    ranked = sorted((s, name) for name, s in saved.items() if s > 0)[::-1]
    return [f"{name}: saves {s / GiB:.1f} GiB" for s, name in ranked]
