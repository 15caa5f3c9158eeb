"""Teacher-forced log-probs of responses under a model, in token-budget micro-batches (pure torch, no Ray).

`LogprobModel` scores responses for the old-policy and reference passes, and is the base of the
`Learner` (`evr1.runner.learner.learner`), whose update runs the same forward. Every pass computes
each group's prompt, with its media, once per micro-batch and runs the group's responses on its KV
cache (`evr1.models.grouped`; the loss backpropagates through the shared prompt);
`TrainerSpec.grouped_forward=False` forwards each row whole instead, to the same numbers. Every
log-prob, entropy and ratio is of the sampling distribution at the rollout temperature T
(`RolloutSpec.temperature`, passed in as `temperature`): `log_softmax(logits / T)` over the whole
vocabulary, without top-k/top-p (T = 0, greedy: T = 1; see `evr1.models.forward.temper`); so is the
entropy (metric and bonus). Offline rows' behaviour log-probs must be of the same tempered distribution.
The forward stops at the last hidden states; log-probs and entropy go through the LM head
`TrainerSpec.logprob_chunk_tokens` response tokens at a time (`evr1.models.logprobs.token_scores`, each
chunk recomputed in the backward), so the `[tokens, vocab]` logits never exist whole (0: they do).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import torch
from torch import Tensor

from evr1.errors import ConfigError
from evr1.models.forward import response_hidden
from evr1.models.grouped import shared_prefix_hidden
from evr1.models.logprobs import liger_problem, token_scores
from evr1.models.prompts import Prompt
from evr1.runner.learner import distributed
from evr1.runner.learner.batching import Sample, micro_batches, prefix_micro_batches, share_prompts
from evr1.specs import ModelSpec, TrainerSpec

__all__ = ["LogprobModel", "compute_dtype", "default_device"]


def default_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def compute_dtype(spec: ModelSpec, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for `spec` on `device`: bfloat16 where the spec asks for it, None for float32."""
    from evr1.models.loading import resolve_dtype

    dtype = resolve_dtype(spec, device)
    if dtype == torch.float16:
        raise ConfigError("the learner trains in float32 or bfloat16 autocast; model.dtype='float16' is not supported")
    return None if dtype == torch.float32 else dtype


def _pad_id(model: Any) -> int:
    config = model.config.get_text_config()
    for value in (config.pad_token_id, config.eos_token_id, 0):
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if value is not None:
            return int(value)
    return 0


class LogprobModel:
    """Teacher-forced log-probs of responses under `model`, in micro-batches of `micro_batch_tokens`.

    Used for the old policy (by the `Learner`) and as a reference model (`from_spec`, frozen).
    `temperature`: the one the responses were sampled at (`RolloutSpec.temperature`); log-probs are
    of `log_softmax(logits / temperature)`. `autocast`: the compute dtype (e.g. bfloat16 on a GPU),
    None for the parameters' dtype. `grouped` (`TrainerSpec.grouped_forward`): each group's prompt is
    computed once per micro-batch and its responses run on its KV cache (`evr1.models.grouped`,
    micro-batches by `prefix_micro_batches`); off, every row is forwarded whole (`response_hidden`).
    `chunk_tokens` (`TrainerSpec.logprob_chunk_tokens`): response tokens per pass through the head (0: all);
    `kernel` (`TrainerSpec.logprob_kernel`): "torch" or "liger" (CUDA only; refused here otherwise).
    """

    def __init__(
        self,
        model: Any,
        *,
        micro_batch_tokens: int,
        temperature: float = 1.0,
        pad_id: int | None = None,
        autocast: torch.dtype | None = None,
        grouped: bool = True,
        chunk_tokens: int = 0,
        kernel: str = "torch",
    ) -> None:
        if temperature < 0:
            raise ConfigError(f"the sampling temperature must be >= 0, got {temperature}")
        if kernel == "liger" and (problem := liger_problem(next(model.parameters()).device)) is not None:
            raise ConfigError(problem)
        self.model = model
        self.micro_batch_tokens = micro_batch_tokens
        self.temperature = temperature
        self.pad_id = _pad_id(model) if pad_id is None else pad_id
        self.autocast = autocast
        self.grouped = grouped
        self.chunk_tokens = chunk_tokens
        self.kernel = kernel
        self.distributed_passes = False  # FSDP: every worker must run the same number of forward passes

    @classmethod
    def from_spec(
        cls,
        spec: ModelSpec,
        trainer: TrainerSpec,
        *,
        temperature: float = 1.0,
        device: str | torch.device | None = None,
    ) -> LogprobModel:
        """A frozen model (e.g. the KL reference) loaded from `spec`, in `spec`'s dtype, scoring at `temperature`."""
        from evr1.models.loading import load_model

        device = torch.device(device) if device is not None else default_device()
        model = load_model(spec, device=device)
        model.requires_grad_(False)
        return cls(
            model, micro_batch_tokens=trainer.micro_batch_tokens, temperature=temperature, grouped=trainer.grouped_forward,
            chunk_tokens=trainer.logprob_chunk_tokens, kernel=trainer.logprob_kernel,
        )

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _autocast(self) -> Any:
        if self.autocast is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast)

    def _scores(self, samples: Sequence[Sample], entropy: str = "off") -> tuple[Tensor, Tensor | None, Tensor]:
        """Log-probs `(B, R)`, the entropy `(B, R)` unless `entropy` is "off" (see `token_scores`), and the mask."""
        prompts = [s.prompt for s in samples]
        responses = [s.response_ids for s in samples]
        with self._autocast():
            if self.grouped:
                distinct, owner, _ = share_prompts(prompts, [s.group_id for s in samples])
                hidden, targets, mask = shared_prefix_hidden(self.model, distinct, owner, responses, self.pad_id)
            else:
                hidden, targets, mask = response_hidden(self.model, prompts, responses, self.pad_id)
            logprobs, entropies = token_scores(
                self.model.lm_head, hidden, targets, mask,
                temperature=self.temperature, chunk_tokens=self.chunk_tokens, entropy=entropy, kernel=self.kernel,
            )  # fmt: skip
        return logprobs, entropies, mask

    def _micro_batches(self, samples: Sequence[Sample]) -> list[list[int]]:
        split = prefix_micro_batches if self.grouped else micro_batches
        return split(samples, self.micro_batch_tokens)

    def _pass_count(self, count: int) -> int:
        """Forward passes this worker runs: its own count, or the largest over workers under FSDP."""
        return distributed.all_reduce_max(count) if self.distributed_passes else count

    def _blank(self) -> Sample:
        """A one-token text sample: what an FSDP worker with fewer passes than others joins them with."""
        token = torch.tensor([self.pad_id])
        zero = torch.zeros(1)
        return Sample(prompt=Prompt(input_ids=token), response_ids=token, advantages=zero, ref_logprobs=zero)

    @torch.no_grad()
    def compute_logprobs(self, samples: Sequence[Sample]) -> list[Tensor]:
        """Per-sample log-probs `(R,)` (float32, CPU) of each response under the current weights."""
        training = self.model.training
        self.model.eval()
        out: list[Tensor] = [torch.zeros(0)] * len(samples)
        batches = self._micro_batches(samples)
        try:
            for k in range(self._pass_count(len(batches))):
                if k >= len(batches):  # an FSDP worker with fewer batches joins the others' passes
                    self._scores([self._blank()])
                    continue
                logprobs = self._scores([samples[i] for i in batches[k]])[0].cpu()
                for row, i in enumerate(batches[k]):
                    out[i] = logprobs[row, : samples[i].response_tokens].clone()
        finally:
            self.model.train(training)
        return out
