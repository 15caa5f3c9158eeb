"""Batching prompts (and responses) for a Qwen-VL forward pass, with explicit M-RoPE positions.

One layout everywhere: prompts left-padded to a common length, responses (when given) right-
padded after them. Positions are computed explicitly (`rope_positions`) rather than left to the
model's internal cache of rope deltas, so the rollout engine and a teacher-forced forward give the
same positions for the same tokens. `response_logprobs` is that teacher-forced forward: per-token
log-probabilities of given responses under the model's sampling distribution at temperature T,
`log_softmax(logits / T)` over the whole vocabulary (no top-k/top-p; see `temper`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from evr1.models.prompts import MM_KEYS, Prompt

TEXT, IMAGE, VIDEO = 0, 1, 2  # values of `mm_token_type_ids`


@dataclass
class Batch:
    """Model inputs for a batch: `input_ids`, `attention_mask`, `mm_token_type_ids`, media tensors."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, L)
    mm_token_type_ids: torch.Tensor  # (B, L)
    mm: dict[str, torch.Tensor]
    prompt_length: int  # columns before the responses

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            mm_token_type_ids=self.mm_token_type_ids.to(device),
            mm={k: v.to(device) for k, v in self.mm.items()},
            prompt_length=self.prompt_length,
        )

    def model_inputs(self, dtype: torch.dtype | None = None) -> dict[str, Any]:
        """Keyword arguments for the model's forward (pixel values cast to `dtype`)."""
        mm = {k: (v.to(dtype) if dtype is not None and v.is_floating_point() and k.startswith("pixel") else v)
              for k, v in self.mm.items()}
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "mm_token_type_ids": self.mm_token_type_ids,
            **mm,
        }


def token_types(input_ids: torch.Tensor, config: Any) -> torch.Tensor:
    """`mm_token_type_ids` for `input_ids`: 1 at image placeholders, 2 at video placeholders, else 0."""
    types = torch.zeros_like(input_ids)
    types[input_ids == config.image_token_id] = IMAGE
    types[input_ids == config.video_token_id] = VIDEO
    return types


def collate(
    prompts: Sequence[Prompt],
    pad_id: int,
    config: Any,
    responses: Sequence[Sequence[int] | torch.Tensor] | None = None,
) -> Batch:
    """Left-pad the prompts, append right-padded responses, and concatenate the media in order."""
    if not prompts:
        raise ValueError("collate needs at least one prompt")
    if responses is not None and len(responses) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    resp = [torch.as_tensor(r, dtype=torch.long).reshape(-1) for r in responses] if responses is not None else None
    width_p = max(len(p) for p in prompts)
    width_r = max((len(r) for r in resp), default=0) if resp is not None else 0
    ids = torch.full((len(prompts), width_p + width_r), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    types = torch.zeros_like(ids)
    for i, prompt in enumerate(prompts):
        start = width_p - len(prompt)
        ids[i, start:width_p] = prompt.input_ids
        mask[i, start:width_p] = 1
        types[i, start:width_p] = token_types(prompt.input_ids, config)
        if resp is not None:
            ids[i, width_p : width_p + len(resp[i])] = resp[i]
            mask[i, width_p : width_p + len(resp[i])] = 1
    mm: dict[str, torch.Tensor] = {}
    for key in MM_KEYS:
        parts = [p.mm[key] for p in prompts if key in p.mm]
        if parts:
            mm[key] = torch.cat(parts)
    return Batch(input_ids=ids, attention_mask=mask, mm_token_type_ids=types, mm=mm, prompt_length=width_p)


def rope_positions(model: Any, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions `(4, B, L)` (text row, then M-RoPE t/h/w rows) and per-row rope deltas `(B, 1)`.

    A token generated after the batch's valid tokens sits at text position `n_valid + k` and
    M-RoPE position `n_valid + k + delta` (see `decode_positions`).
    """
    mask = batch.attention_mask
    text = (mask.cumsum(-1) - 1).clamp(min=0)
    grids = {k: batch.mm[k] for k in ("image_grid_thw", "video_grid_thw", "second_per_grid_ts") if k in batch.mm}
    mrope, deltas = model.model.get_rope_index(
        batch.input_ids, mm_token_type_ids=batch.mm_token_type_ids, attention_mask=mask, **grids
    )
    return torch.cat([text[None], mrope.to(text.dtype)]), deltas.reshape(-1, 1).to(text.device)


def decode_positions(n_valid: torch.Tensor, deltas: torch.Tensor) -> torch.Tensor:
    """Positions `(4, B, 1)` of the next token of each row, given its valid-token count so far."""
    text = n_valid.reshape(1, -1, 1)
    mrope = (n_valid.reshape(-1, 1) + deltas).reshape(1, -1, 1).expand(3, -1, -1)
    return torch.cat([text, mrope])


def temper(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """`logits / T`: the logits of the distribution responses sampled at `temperature` are drawn from.

    `temperature` 0 (greedy decoding, which draws from no distribution) scores at T = 1; at T = 1
    `logits` are returned as they are, otherwise divided in float32.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature in (0.0, 1.0):
        return logits
    return logits.float() / temperature


def gather_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[tokens] in float32, without materialising the full log-softmax twice."""
    logits = logits.float()
    return logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


@contextmanager
def head_off(model: Any) -> Iterator[torch.nn.Module]:
    """Within the block the model's forward returns, as its `logits`, the hidden states its LM head would read.

    Yields the head. Nothing `[tokens, vocab]` is made by the forward; the caller applies the head
    (whole, or in chunks: `evr1.models.logprobs`). Under FSDP2 the head's weight is in the root
    unit, which stays gathered from the forward to the backward, so the head may be called after it.
    """
    head = model.lm_head
    model.lm_head = torch.nn.Identity()
    try:
        yield head
    finally:
        model.lm_head = head


def response_hidden(
    model: Any,
    prompts: Sequence[Prompt],
    responses: Sequence[Sequence[int] | torch.Tensor],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Teacher-forced last hidden states `(B, R, H)` that predict each response token, targets `(B, R)`, mask `(B, R)`.

    `model.lm_head` of the states gives the untempered logits. Gradients flow when enabled.
    """
    device = next(model.parameters()).device
    batch = collate(prompts, pad_id, model.config, responses).to(device)
    width_r = batch.input_ids.shape[1] - batch.prompt_length
    targets = batch.input_ids[:, batch.prompt_length :]
    mask = batch.attention_mask[:, batch.prompt_length :].bool()
    if width_r == 0:
        return torch.zeros(len(prompts), 0, model.config.get_text_config().hidden_size, device=device), targets, mask
    positions, _ = rope_positions(model, batch)
    with head_off(model):
        out = model(
            **batch.model_inputs(model.dtype), position_ids=positions, logits_to_keep=width_r + 1, use_cache=False
        )
    return out.logits[:, :-1], targets, mask


def response_logits(
    model: Any,
    prompts: Sequence[Prompt],
    responses: Sequence[Sequence[int] | torch.Tensor],
    pad_id: int,
    *,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Teacher-forced logits `(B, R, V)` predicting each response token, the targets `(B, R)` and mask `(B, R)`.

    The logits are tempered (`temper(logits, temperature)`, `temperature` being the one the responses
    were sampled at). Only the response positions reach the head. Gradients flow when enabled.
    """
    hidden, targets, mask = response_hidden(model, prompts, responses, pad_id)
    return temper(model.lm_head(hidden), temperature), targets, mask


def response_logprobs(
    model: Any,
    prompts: Sequence[Prompt],
    responses: Sequence[Sequence[int] | torch.Tensor],
    pad_id: int,
    *,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced log-probs `(B, R)` (float32) of each response token at `temperature`, and the mask."""
    logits, targets, mask = response_logits(model, prompts, responses, pad_id, temperature=temperature)
    return gather_logprobs(logits, targets).masked_fill(~mask, 0.0), mask


def has_pixels(prompts: Sequence[Prompt]) -> bool:
    """Whether any prompt carries images or video frames (and so runs the vision tower)."""
    return any("pixel_values" in p.mm or "pixel_values_videos" in p.mm for p in prompts)


def vision_anchor(model: Any) -> torch.Tensor:
    """0 times the output of the vision tower on one blank merged patch: a zero scalar with gradients.

    Adding it to a media-less micro-batch's loss gives every parameter of the tower, its merger
    and (Qwen3-VL) its deepstack mergers an exactly-zero gradient instead of none, so sharded
    (FSDP2) workers reduce the same parameters whatever their media. Call it after the model's
    forward on the same micro-batch (under FSDP2 the root unit's parameters are gathered then).
    """
    visual = model.model.visual
    config = visual.config
    merge = config.spatial_merge_size
    grid = torch.tensor([[1, merge, merge]], device=visual.device)
    width = config.in_channels * config.temporal_patch_size * config.patch_size**2
    out = visual(torch.zeros(merge * merge, width, dtype=visual.dtype, device=visual.device), grid_thw=grid)
    features = [out.pooler_output, *(getattr(out, "deepstack_features", None) or ())]
    return sum(f.float().sum() for f in features) * 0.0
