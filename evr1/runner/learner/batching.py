"""The learner's input (`Sample`) and how a worker's samples are cut into mini- and micro-batches.

A micro-batch is what one forward/backward pass sees, and its cost is the tokens that pass computes,
prompt lengths counting the expanded media placeholders. Per-row (`micro_batches`): rows times
(longest prompt + longest response). Shared-prefix (`prefix_micro_batches`, for
`evr1.models.grouped`): each distinct prompt once, padded to the longest, plus rows times the
longest response. Micro-batches are packed greedily from the longest down so that similar lengths
share a batch (little padding; for prompts also causal rather than masked attention where lengths
are equal) and no batch exceeds the token budget (shared-prefix batches also keep prompts of very
different lengths apart); a sample longer than the budget gets a batch of its own, and a group
whose prompt and responses exceed it is split by responses (its prompt computed again in each
part), never truncated. Mini-batches (one optimizer step each) are chosen by `group_id`, so a
global batch sharded over workers in any way splits into the same mini-batches on every worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from evr1.models.prompts import Prompt


@dataclass
class Sample:
    """One response of one group, ready for the learner.

    `advantages` are token-level (from the `advantages` registry). `behaviour_logprobs` are the
    log-probs of the policy that produced the response: the sampler's for online rows, the
    curated data's for offline rows (NaN where unknown; None = unknown everywhere). Online rows
    are trained against the old-policy log-probs the learner recomputes at the start of a step;
    offline rows against their behaviour log-probs (see `evr1.algos.offpolicy`).
    `ref_logprobs` are the reference model's, needed when KL is on. `staleness`: how many policy
    versions behind the learner's weights at the start of the step the weights that sampled an
    online row were (pipelined rollouts: 1); stale rows are importance-weighted against their
    `behaviour_logprobs` (decoupled PPO, `evr1.algos.offpolicy`). `problem_type` labels the
    mismatch metrics; `rollout_weights` and `loss_mask` are the rollout correction's, set by the
    learner itself (`evr1.runner.learner.mismatch`): the engine-mismatch weights of an online row's
    tokens, and its tokens left in the loss (False: rejected).
    """

    prompt: Prompt
    response_ids: Tensor  # (R,) int64
    advantages: Tensor  # (R,)
    behaviour_logprobs: Tensor | None = None  # (R,)
    offline: bool = False
    group_id: int = 0
    ref_logprobs: Tensor | None = None  # (R,)
    staleness: int = 0
    problem_type: str = ""
    rollout_weights: Tensor | None = None  # (R,)
    loss_mask: Tensor | None = None  # (R,) bool

    def __post_init__(self) -> None:
        length = int(self.response_ids.shape[0])
        if self.staleness < 0:
            raise ValueError(f"sample of group {self.group_id}: staleness must be >= 0, got {self.staleness}")
        for name in ("advantages", "behaviour_logprobs", "ref_logprobs", "rollout_weights", "loss_mask"):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != (length,):
                raise ValueError(
                    f"sample of group {self.group_id}: {name} has shape {tuple(value.shape)}, "
                    f"expected ({length},) like response_ids"
                )

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)

    @property
    def response_tokens(self) -> int:
        return int(self.response_ids.shape[0])


def padded_cost(samples: Sequence[Sample]) -> int:
    """Tokens a forward pass over `samples` computes: rows x (longest prompt + longest response)."""
    if not samples:
        return 0
    return len(samples) * (max(s.prompt_tokens for s in samples) + max(s.response_tokens for s in samples))


def micro_batches(samples: Sequence[Sample], budget: int) -> list[list[int]]:
    """Indices of `samples` grouped into micro-batches whose `padded_cost` stays within `budget`.

    Every index appears exactly once. Longest samples first; a sample over the budget alone.
    """
    if budget <= 0:
        raise ValueError(f"micro-batch token budget must be positive, got {budget}")
    order = sorted(range(len(samples)), key=lambda i: (-(samples[i].prompt_tokens + samples[i].response_tokens), i))
    batches: list[list[int]] = []
    current: list[int] = []
    width_p = width_r = 0
    for i in order:
        p, r = samples[i].prompt_tokens, samples[i].response_tokens
        wp, wr = max(width_p, p), max(width_r, r)
        if current and (len(current) + 1) * (wp + wr) > budget:
            batches.append(current)
            current, wp, wr = [], p, r
        current.append(i)
        width_p, width_r = wp, wr
    if current:
        batches.append(current)
    return batches


def same_prompt(a: Prompt, b: Prompt) -> bool:
    """Whether two prompts are the same tokens and the same media tensors."""
    if a is b:
        return True
    if not torch.equal(a.input_ids, b.input_ids) or a.mm.keys() != b.mm.keys():
        return False
    return all(torch.equal(a.mm[k], b.mm[k]) for k in a.mm)


def share_prompts(prompts: Sequence[Prompt], groups: Sequence[int]) -> tuple[list[Prompt], list[int], int]:
    """The distinct prompts of rows grouped by `groups`, each row's index into them, and the fallback count.

    A row shares its group's first prompt when it is the same (`same_prompt`); a row whose prompt
    differs gets one of its own (computed per-row, as if alone) and is counted as a fallback.
    """
    distinct: list[Prompt] = []
    owner: list[int] = []
    first: dict[int, int] = {}
    fallbacks = 0
    for prompt, group in zip(prompts, groups):
        index = first.get(group)
        if index is not None and same_prompt(distinct[index], prompt):
            owner.append(index)
            continue
        if index is None:
            first[group] = len(distinct)
        else:
            fallbacks += 1
        owner.append(len(distinct))
        distinct.append(prompt)
    return distinct, owner, fallbacks


def prefix_cost(samples: Sequence[Sample]) -> int:
    """Tokens a shared-prefix forward over `samples` computes: distinct prompts x the longest, plus
    rows x the longest response."""
    if not samples:
        return 0
    distinct, _, _ = share_prompts([s.prompt for s in samples], [s.group_id for s in samples])
    return len(distinct) * max(len(p) for p in distinct) + len(samples) * max(s.response_tokens for s in samples)


def _chunks(samples: Sequence[Sample], rows: list[int], budget: int) -> list[list[int]]:
    """`rows` (sharing one prompt) cut, longest response first, into parts of prompt + k x longest <= budget."""
    rows = sorted(rows, key=lambda i: (-samples[i].response_tokens, i))
    prompt = samples[rows[0]].prompt_tokens
    parts: list[list[int]] = []
    for i in rows:
        if parts and prompt + (len(parts[-1]) + 1) * samples[parts[-1][0]].response_tokens <= budget:
            parts[-1].append(i)
        else:
            parts.append([i])
    return parts


def prefix_micro_batches(samples: Sequence[Sample], budget: int, *, pad_slack: float = 0.25) -> list[list[int]]:
    """Indices of `samples` grouped into micro-batches whose `prefix_cost` stays within `budget`.

    Every index appears exactly once. Rows sharing a prompt (`share_prompts`) stay together unless
    they exceed the budget (then they are split by responses); longest prompts first, so prompts of
    one length share a batch. A prompt joins a batch only while the batch's prompts, left-padded to
    the longest, stay within `1 + pad_slack` times their own tokens: the prompt pass computes the
    padding, and attends with a mask instead of causally, so a 1,000-token video prompt is not padded
    to a 4,000-token one (the attention over the padded prompts would cost far more than a pass of
    its own). A part over the budget on its own (one row) gets a batch alone.
    """
    if budget <= 0:
        raise ValueError(f"micro-batch token budget must be positive, got {budget}")
    _, owner, _ = share_prompts([s.prompt for s in samples], [s.group_id for s in samples])
    units: dict[int, list[int]] = {}
    for i, o in enumerate(owner):
        units.setdefault(o, []).append(i)
    ordered = sorted(units.values(), key=lambda rows: (-samples[rows[0]].prompt_tokens, rows[0]))
    batches: list[list[int]] = []
    width_p = width_r = prompts = own = 0
    for part in (p for rows in ordered for p in _chunks(samples, rows, budget)):
        p, r = samples[part[0]].prompt_tokens, samples[part[0]].response_tokens
        wp, wr = max(width_p, p), max(width_r, r)
        padded_ok = (prompts + 1) * wp <= (1 + pad_slack) * (own + p)
        if batches and padded_ok and (prompts + 1) * wp + (len(batches[-1]) + len(part)) * wr <= budget:
            batches[-1] += part
            prompts, own = prompts + 1, own + p
        else:
            batches.append(list(part))
            wp, wr, prompts, own = p, r, 1, p
        width_p, width_r = wp, wr
    return batches


def mini_batches(samples: Sequence[Sample], count: int) -> list[list[int]]:
    """`count` lists of indices: mini-batch j holds the samples with `group_id % count == j` (may be empty)."""
    if count <= 0:
        raise ValueError(f"the number of mini-batches must be positive, got {count}")
    parts: list[list[int]] = [[] for _ in range(count)]
    for i, sample in enumerate(samples):
        parts[sample.group_id % count].append(i)
    return parts


def stack_rows(values: Sequence[Tensor | None], width: int, missing: float = float("nan")) -> Tensor | None:
    """Right-pad 1-D per-row tensors to `(B, width)` float32 with zeros; None when all are None.

    A row given as None among others is filled with `missing` (NaN: unknown, so it is never
    mistaken for a value).
    """
    if all(v is None for v in values):
        return None
    out = torch.zeros(len(values), width, dtype=torch.float32)
    for row, value in enumerate(values):
        if value is None:
            out[row] = missing
        else:
            out[row, : value.shape[0]] = value.float()
    return out
