"""The shared-prefix forward: each distinct prompt (with its media) once, its responses on its KV cache.

`shared_prefix_hidden` gives what `forward.response_hidden` gives for the same rows (same states
to float rounding, same layout `(B, R, H)`; `shared_prefix_logits` the same for logits), at the cost
of each distinct prompt once instead of once per row. Two forward calls:

1. the distinct prompts, left-padded, with their media and explicit M-RoPE positions
   (`rope_positions`, so the model's stateful rope deltas are never read), keeping each layer's
   keys and values (with grad when enabled) and the hidden state of each prompt's last position, which
   predict the first response token;
2. every row's response tokens but its last, on its prompt's keys and values (gathered per row,
   or a view of them when the micro-batch has one prompt; never recomputed), at positions
   continuing the prompt's (those `decode_positions` gives the rollout engine, one per token).

Hybrid models (Qwen3.5: Gated DeltaNet linear-attention layers next to full-attention ones) keep,
for each linear-attention layer, the prompt's last `conv_kernel_size` convolution inputs and its
final recurrent state instead of keys and values; the response pass starts its convolution and its
delta-rule recurrence from them (per row, as for keys and values). Left padding never enters those
states: the model zeroes the layer inputs at padded positions, so a pad adds nothing to the
convolution window and leaves the recurrent state at its zero start (the state decays, but from 0).

The caches are passed with `use_cache=False`: the model uses a cache it is given either way and
makes none of its own. HF's gradient checkpointing drops any cache a checkpointed layer is given in
training, since a cache written in the forward would be written again by the backward's recompute.
The caches here are never mutated by a recompute: the prompt pass records each layer's states on
its first call only, and the response pass reads a fixed prefix and stores nothing. So the
decoder layers are allowed their cache for the two calls (`_can_checkpoint_with_cache`), and the
loss reaches the prompt's layers through the recorded states (non-reentrant checkpointing, the
one `load_model` enables, recomputes them in the backward).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer, LinearAttentionCacheLayerMixin
from transformers.modeling_layers import GradientCheckpointingLayer

from evr1.models.forward import collate, head_off, rope_positions, temper
from evr1.models.prompts import Prompt


class _Recorder(DynamicLayer):
    """The prompt pass: remembers the layer's first keys/values and returns whatever it is given."""

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:  # later calls are checkpoint recomputes of the same states
            self.dtype, self.device = key_states.dtype, key_states.device
            self.keys, self.values = key_states, value_states
            self.is_initialized = True
        return key_states, value_states


class _Prefix(DynamicLayer):
    """The response pass: a fixed prefix in front of the new states; stores nothing."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        self.dtype, self.device = keys.dtype, keys.device
        self.keys, self.values = keys, values
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return torch.cat([self.keys, key_states], dim=-2), torch.cat([self.values, value_states], dim=-2)


class _LinearRecorder(LinearAttentionCacheLayerMixin):
    """The prompt pass of a linear-attention layer: remembers the first conv inputs and recurrent state it is
    given (later calls are checkpoint recomputes) and never reports a previous state, so the layer runs its
    prompt from the zero state."""

    def lazy_initialization(self, *args: Any, **kwargs: Any) -> None:
        pass

    def update_conv_state(self, conv_states: torch.Tensor, state_idx: int = 0, conv_kernel_size: int | None = None,
                          **kwargs: Any) -> torch.Tensor:
        if self.conv_states[state_idx] is None:
            self.conv_states[state_idx] = conv_states[..., -(conv_kernel_size or conv_states.shape[-1]):]
        return conv_states

    def update_recurrent_state(self, recurrent_states: torch.Tensor, state_idx: int = 0, **kwargs: Any) -> torch.Tensor:
        if self.recurrent_states[state_idx] is None:
            self.recurrent_states[state_idx] = recurrent_states
        return recurrent_states


class _LinearPrefix(LinearAttentionCacheLayerMixin):
    """The response pass of a linear-attention layer: a fixed conv window and recurrent state to start from;
    stores nothing. `record_past` keeps the layer off its in-place single-token conv update."""

    def __init__(self, conv: torch.Tensor, recurrent: torch.Tensor) -> None:
        super().__init__()
        self.conv_states[0], self.recurrent_states[0] = conv, recurrent
        self.has_previous_state[0] = True
        self.record_past = True

    def lazy_initialization(self, *args: Any, **kwargs: Any) -> None:
        pass

    def update_conv_state(self, conv_states: torch.Tensor, state_idx: int = 0, **kwargs: Any) -> torch.Tensor:
        return torch.cat([self.conv_states[state_idx], conv_states], dim=-1)

    def update_recurrent_state(self, recurrent_states: torch.Tensor, state_idx: int = 0, **kwargs: Any) -> torch.Tensor:
        return recurrent_states


def _recorders(config: Any) -> Cache:
    """One recorder per decoder layer, of the layer's kind."""
    text = config.get_text_config()
    kinds = getattr(text, "layer_types", None) or ["full_attention"] * text.num_hidden_layers
    return Cache(layers=[_LinearRecorder() if k == "linear_attention" else _Recorder() for k in kinds])


def _prefix(recorded: Cache, rows: torch.Tensor) -> Cache:
    """The recorded prompt states, one row per response (`rows[b]` is row b's prompt)."""
    return Cache(layers=[
        _LinearPrefix(_per_row(r.conv_states[0], rows), _per_row(r.recurrent_states[0], rows))
        if isinstance(r, _LinearRecorder) else _Prefix(_per_row(r.keys, rows), _per_row(r.values, rows))
        for r in recorded.layers
    ])


def _per_row(states: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """`states[rows]`: a view when every row has the one prompt (the response pass's `cat` is then its
    only copy), else gathered."""
    if states.shape[0] == 1:
        return states.expand(len(rows), *states.shape[1:])
    return states.index_select(0, rows)


@contextmanager
def _cache_under_checkpointing(model: Any) -> Iterator[None]:
    """Let the checkpointed layers of `model` keep the (recompute-safe) caches above for the block."""
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    saved = [m.__dict__.get("_can_checkpoint_with_cache") for m in layers]
    for m in layers:
        m._can_checkpoint_with_cache = True
    try:
        yield
    finally:
        for m, value in zip(layers, saved):
            if value is None:
                del m._can_checkpoint_with_cache
            else:
                m._can_checkpoint_with_cache = value


def shared_prefix_hidden(
    model: Any,
    prompts: Sequence[Prompt],
    owner: Sequence[int],
    responses: Sequence[Sequence[int] | torch.Tensor],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Last hidden states `(B, R, H)` predicting each token of `responses[b]` after `prompts[owner[b]]`,
    the targets `(B, R)` and their mask `(B, R)`, as `response_hidden` gives for the same rows.

    `prompts` are the distinct prompts; `owner[b]` is the index of row b's prompt. Always two forward
    calls (FSDP workers must run the same number), even when every response has one token.
    """
    if len(owner) != len(responses):
        raise ValueError(f"{len(owner)} owners but {len(responses)} responses")
    device = next(model.parameters()).device
    resp = [torch.as_tensor(r, dtype=torch.long).reshape(-1) for r in responses]
    lengths = torch.tensor([len(r) for r in resp], device=device)
    width = int(lengths.max()) if resp else 0
    targets = torch.full((len(resp), width), pad_id, dtype=torch.long)
    for b, r in enumerate(resp):
        targets[b, : len(r)] = r
    targets = targets.to(device)
    mask = torch.arange(width, device=device)[None, :] < lengths[:, None]
    if width == 0:
        return torch.zeros(len(resp), 0, model.config.get_text_config().hidden_size, device=device), targets, mask
    rows = torch.as_tensor(list(owner), dtype=torch.long, device=device)
    batch = collate(prompts, pad_id, model.config).to(device)
    positions, deltas = rope_positions(model, batch)
    recorded = _recorders(model.config)
    with _cache_under_checkpointing(model), head_off(model):
        first = model(**batch.model_inputs(model.dtype), position_ids=positions, past_key_values=recorded,
                      use_cache=False, logits_to_keep=1).logits[:, -1]
        prefix = _prefix(recorded, rows)
        steps = max(width - 1, 1)  # a one-token response still runs the second call, on a masked pad
        ids = targets[:, :steps] if width > 1 else torch.full((len(resp), 1), pad_id, device=device)
        step = torch.arange(steps, device=device)
        valid = step[None, :] < (lengths[:, None] - 1)
        n_valid = batch.attention_mask.sum(-1)[rows]
        text = n_valid[:, None] + step[None, :]
        positions = torch.cat([text[None], (text + deltas[rows]).expand(3, -1, -1)])
        rest = model(
            input_ids=ids,
            attention_mask=torch.cat([batch.attention_mask[rows], valid.to(batch.attention_mask.dtype)], dim=1),
            position_ids=positions,
            past_key_values=prefix,
            use_cache=False,
        ).logits
    return torch.cat([first[rows][:, None], rest[:, : width - 1]], dim=1), targets, mask


def shared_prefix_logits(
    model: Any,
    prompts: Sequence[Prompt],
    owner: Sequence[int],
    responses: Sequence[Sequence[int] | torch.Tensor],
    pad_id: int,
    *,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tempered logits `(B, R, V)` of `shared_prefix_hidden`'s rows, as `response_logits` gives for them."""
    hidden, targets, mask = shared_prefix_hidden(model, prompts, owner, responses, pad_id)
    return temper(model.lm_head(hidden), temperature), targets, mask
