"""What every rollout engine takes and returns: `SamplingParams` in, `RolloutResult`s out.

Log-probabilities are those of the distribution the tokens are drawn from before any repetition
penalty and min-p/top-k/top-p filtering: `log_softmax(logits / T)` over the whole vocabulary at the
sampled token, T being
`SamplingParams.temperature` (1 for greedy decoding, which draws from no distribution; see
`evr1.models.forward.temper`). The learner and the reference model score responses at the same
T (`RolloutSpec.temperature`), so old/new policy ratios and KL estimates compare the sampling
distributions. Exceptions are the engine's to document: vLLM has no tempered-but-unfiltered mode,
so with top-k/top-p/min-p or a repetition penalty on its log-probs are of the processed (penalised,
truncated, renormalised) distribution (`evr1.engines.vllm_adapter`); the learner recomputes the old
policy's log-probs itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

    from evr1.models.prompts import Prompt
    from evr1.specs import RolloutSpec

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: `n` responses per prompt, temperature/top-p/top-k/min-p, a repetition penalty, a
    token budget, stop strings, a seed.

    `greedy` (or `temperature == 0`) takes the arg-max token and one response per prompt.
    `repetition_penalty` (1: off) divides the positive logits and multiplies the negative ones of every
    token already in the prompt or the response, before the temperature (as HF's and vLLM's do; greedy
    decoding too). `min_p` (0: off) drops tokens less likely than `min_p` times the most likely one,
    after the temperature and before top-k/top-p. A response stops after the token that completes one
    of the `stop` strings (finish reason "stop"; its text ends with that string).
    `seed=None` draws the seed from torch's global generator (so `torch.manual_seed` governs it; vLLM
    draws from its own).
    `stop_token_ids=None` stops at the model's end-of-sequence tokens (`<|im_end|>`, ...).
    """

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 64
    greedy: bool = False
    seed: int | None = None
    stop_token_ids: tuple[int, ...] | None = None
    repetition_penalty: float = 1.0
    min_p: float = 0.0
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k == 0 or self.top_k < -1:
            raise ValueError(f"top_k must be -1 (off) or positive, got {self.top_k}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0 (1: off), got {self.repetition_penalty}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1] (0: off), got {self.min_p}")
        if not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError(f"stop strings must be non-empty text, got {self.stop!r}")
        if self.temperature == 0 and not self.greedy:
            object.__setattr__(self, "greedy", True)
        if self.greedy and self.n != 1:
            object.__setattr__(self, "n", 1)

    @property
    def sampling_temperature(self) -> float:
        """The temperature tokens are drawn at: 0 for greedy decoding."""
        return 0.0 if self.greedy else self.temperature

    @classmethod
    def from_spec(cls, spec: RolloutSpec, *, greedy: bool = False, seed: int | None = None) -> SamplingParams:
        """The training sampling settings of a `RolloutSpec` (or greedy decoding for evaluation)."""
        params = cls(
            n=spec.n,
            temperature=spec.temperature,
            top_p=spec.top_p,
            top_k=spec.top_k,
            max_tokens=spec.max_response_tokens,
            seed=seed,
            repetition_penalty=spec.repetition_penalty,
            min_p=spec.min_p,
            stop=spec.stop,
        )
        return replace(params, greedy=True, n=1) if greedy else params


@dataclass(frozen=True)
class RolloutResult:
    """One response: which prompt (and which of its `n` samples), tokens, log-probs, why it ended.

    `token_ids` include the stop token when `finish_reason == "stop"`; `logprobs[i]` belongs to
    `token_ids[i]`; `text` is the decoded response without special tokens.
    """

    prompt_index: int
    sample_index: int
    token_ids: torch.Tensor  # (R,) int64
    logprobs: torch.Tensor  # (R,) float32
    finish_reason: FinishReason
    text: str
    # A multi-turn (tool-using) response only (`evr1.engines.tool_rollout`); None for a single turn:
    policy_mask: torch.Tensor | None = None  # (R,) bool: the policy wrote the token (tool replies are masked)
    response_mm: Mapping[str, torch.Tensor] | None = None  # the replies' media (`MM_KEYS`), after the prompt's
    transcript: str | None = None  # the whole conversation after the prompt; `text` is the policy's last turn

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])


Weights = Mapping[str, "torch.Tensor"] | Iterable[tuple[str, "torch.Tensor"]]


@runtime_checkable
class RolloutEngine(Protocol):
    """A registered engine (`ENGINES`): generates responses and takes new weights from the learner."""

    version: int  # incremented by every weight update

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[RolloutResult]:
        """`n` responses per prompt, ordered prompt-major (`prompt_index * n + sample_index`)."""
        ...

    def load_weights(self, weights: Weights) -> None:
        """Replace the policy weights (a state dict or `(name, tensor)` pairs, all parameters)."""
        ...

    def sync_from(self, model: Any) -> None:
        """Copy the weights of a learner's model."""
        ...
