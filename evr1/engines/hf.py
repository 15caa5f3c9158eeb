"""The HF rollout engine: batched sampling with a KV cache on any device torch runs on.

Each chunk of prompts is left-padded and prefilled once; its cache (keys and values; Qwen3.5's linear-attention
layers: conv and recurrent states) is then repeated `n` times
and the `B * n` rows decode together until every row has emitted a stop token or the budget is
spent. Positions (M-RoPE, Qwen3-VL per-frame layout included) come from `evr1.models.forward`,
the same code the learner's teacher-forced pass uses. Multimodal placeholder tokens are never
sampled: a response containing one could not be scored by the model again. Returned log-probs are
`log_softmax(logits / T)` at the sampling temperature over the whole vocabulary (`temper`), what
the learner recomputes; top-k/top-p and the placeholder ban shape sampling only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from evr1.engines.base import RolloutResult, SamplingParams, Weights
from evr1.engines.sampling import cut_at_stop, next_tokens, penalise
from evr1.errors import Evr1Error
from evr1.models.forward import collate, decode_positions, gather_logprobs, rope_positions, temper
from evr1.models.prompts import Prompt
from evr1.specs import ModelSpec, RolloutSpec

_WRAPPER_PREFIXES = ("module.", "_orig_mod.")


class HFEngine:
    """Rollouts from a transformers Qwen-VL model held by this engine (its own copy of the weights)."""

    version: int  # weight updates received

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_prompt_tokens: int | None = None,
        max_batch_rows: int | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor carries its tokenizer
        self.max_prompt_tokens = max_prompt_tokens
        self.max_batch_rows = max_batch_rows
        self.version = 0
        config = model.config
        self.pad_id = int(self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0)
        eos = model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self.stop_ids = tuple(dict.fromkeys([*eos, self.tokenizer.eos_token_id]))
        banned = [config.image_token_id, config.video_token_id]
        self._banned = torch.tensor(banned, dtype=torch.long, device=self.device)

    @classmethod
    def from_spec(cls, model: ModelSpec, rollout: RolloutSpec, *, device: str | torch.device = "cpu") -> HFEngine:
        """Load the model and processor of `model` onto `device` for rollouts as `rollout` says."""
        from evr1.models.loading import load_model, load_processor

        return cls(
            load_model(model, device=device),
            load_processor(model),
            max_prompt_tokens=rollout.max_prompt_tokens,
        )

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # -- scoring ---------------------------------------------------------------------------
    @torch.no_grad()
    def choice_logits(self, prompts: Sequence[Prompt], token_ids: Sequence[int]) -> torch.Tensor:
        """`(len(prompts), len(token_ids))` float32: each prompt's next-token logits (at its last position, one
        left-padded forward of the batch) at `token_ids`, for answers chosen among candidate tokens."""
        model = self.model
        batch = collate(prompts, self.pad_id, model.config).to(self.device)
        positions, _ = rope_positions(model, batch)
        out = model(**batch.model_inputs(model.dtype), position_ids=positions, use_cache=False, logits_to_keep=1)
        return out.logits[:, -1].float()[:, list(token_ids)].cpu()

    # -- generation -----------------------------------------------------------------------
    @torch.no_grad()
    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[RolloutResult]:
        """`params.n` responses per prompt, ordered prompt-major (`prompt_index * n + sample_index`)."""
        for i, prompt in enumerate(prompts):
            if self.max_prompt_tokens is not None and len(prompt) > self.max_prompt_tokens:
                raise Evr1Error(f"prompt {i} has {len(prompt)} tokens, over max_prompt_tokens={self.max_prompt_tokens}")
        seed = params.seed if params.seed is not None else int(torch.randint(0, 2**62, ()).item())
        generator = torch.Generator(device=self.device).manual_seed(seed)
        chunk = max(1, (self.max_batch_rows or len(prompts) * params.n) // params.n)
        results: list[RolloutResult] = []
        for start in range(0, len(prompts), chunk):
            results += self._generate_chunk(prompts[start : start + chunk], start, params, generator)
        return results

    def _generate_chunk(
        self, prompts: Sequence[Prompt], offset: int, params: SamplingParams, generator: torch.Generator
    ) -> list[RolloutResult]:
        model, n = self.model, params.n
        batch = collate(prompts, self.pad_id, model.config).to(self.device)
        positions, deltas = rope_positions(model, batch)
        out = model(**batch.model_inputs(model.dtype), position_ids=positions, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        # n rows per prompt; `reorder_cache` (an index select) also copies linear-attention layers' conv and recurrent
        # states (Qwen3.5), which have no `batch_repeat_interleave`.
        cache.reorder_cache(torch.arange(len(prompts), device=self.device).repeat_interleave(n))
        logits = out.logits[:, -1].float().repeat_interleave(n, 0)
        mask = batch.attention_mask.repeat_interleave(n, 0)
        deltas = deltas.repeat_interleave(n, 0)
        n_valid = mask.sum(-1)
        stop = torch.tensor(params.stop_token_ids or self.stop_ids, device=self.device)
        seen = None  # with a repetition penalty: which tokens each row's prompt and response hold so far
        if params.repetition_penalty != 1.0:
            seen = torch.zeros(logits.shape, dtype=torch.bool, device=self.device)
            row, col = mask.bool().nonzero(as_tuple=True)  # padding is not seen
            seen[row, batch.input_ids.repeat_interleave(n, 0)[row, col]] = True

        rows = logits.shape[0]
        tokens = torch.full((rows, params.max_tokens), self.pad_id, dtype=torch.long, device=self.device)
        logprobs = torch.zeros(rows, params.max_tokens, device=self.device)
        lengths = torch.full((rows,), params.max_tokens, dtype=torch.long, device=self.device)
        done = torch.zeros(rows, dtype=torch.bool, device=self.device)
        for step in range(params.max_tokens):
            drawn_from = penalise(logits, seen, params.repetition_penalty) if seen is not None else logits
            chosen = next_tokens(drawn_from, params, generator, self._banned)
            chosen = torch.where(done, self.pad_id, chosen)
            tokens[:, step] = chosen
            if seen is not None:
                seen[torch.arange(rows, device=self.device), chosen] |= ~done
            scored = gather_logprobs(temper(logits, params.sampling_temperature), chosen)
            logprobs[:, step] = torch.where(done, 0.0, scored)
            stopped = ~done & (torch.isin(chosen, stop) | self._stop_strings(tokens, step, params.stop))
            lengths[stopped] = step + 1
            done |= stopped
            if bool(done.all()) or step + 1 == params.max_tokens:
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            out = model(
                input_ids=chosen[:, None],
                attention_mask=mask,
                position_ids=decode_positions(n_valid + step, deltas),
                past_key_values=cache,
                use_cache=True,
            )
            cache = out.past_key_values
            logits = out.logits[:, -1].float()
        return self._results(tokens.cpu(), logprobs.cpu(), lengths.cpu(), done.cpu(), offset, n, params.stop)

    def _stop_strings(self, tokens: torch.Tensor, step: int, stops: Sequence[str]) -> torch.Tensor:
        """Which rows' text, up to `step`, now holds one of `stops`. Only the last tokens are decoded: a stop
        string of c characters spans at most c tokens (each writes a character or more), and one that ended
        earlier would have stopped the row then."""
        found = torch.zeros(tokens.shape[0], dtype=torch.bool, device=tokens.device)
        if not stops:
            return found
        window = max(map(len, stops)) + 1
        tails = self.tokenizer.batch_decode(tokens[:, max(0, step + 1 - window) : step + 1].tolist(), skip_special_tokens=True)
        return torch.tensor([any(s in tail for s in stops) for tail in tails], device=tokens.device)

    def _results(
        self,
        tokens: torch.Tensor,
        logprobs: torch.Tensor,
        lengths: torch.Tensor,
        done: torch.Tensor,
        offset: int,
        n: int,
        stops: Sequence[str] = (),
    ) -> list[RolloutResult]:
        results = []
        for row in range(tokens.shape[0]):
            length = int(lengths[row])
            ids = tokens[row, :length].clone()
            text = self.tokenizer.decode(ids.tolist(), skip_special_tokens=True)
            results.append(
                RolloutResult(
                    prompt_index=offset + row // n,
                    sample_index=row % n,
                    token_ids=ids,
                    logprobs=logprobs[row, :length].clone(),
                    finish_reason="stop" if bool(done[row]) else "length",
                    text=cut_at_stop(text, stops),
                )
            )
        return results

    # -- weights --------------------------------------------------------------------------
    @torch.no_grad()
    def load_weights(self, weights: Weights) -> None:
        """Copy all parameters from a state dict (or `(name, tensor)` pairs) into the engine's model.

        Names may carry wrapper prefixes (`module.`, `_orig_mod.`); tensors must be whole (a sharded
        learner gathers its full state dict first). Every parameter must be given, with its shape;
        dtype and device are converted.
        """
        items = weights.items() if isinstance(weights, Mapping) else weights
        state = {}
        for name, tensor in items:
            for prefix in _WRAPPER_PREFIXES:
                while name.startswith(prefix):
                    name = name[len(prefix) :]
            state[name] = tensor
        try:
            self.model.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise Evr1Error(f"weights do not fit the rollout model: {exc}") from None
        self.version += 1

    def sync_from(self, model: Any) -> None:
        """Copy the weights of `model` (the learner's, same architecture) into the engine."""
        self.load_weights(model.state_dict())
