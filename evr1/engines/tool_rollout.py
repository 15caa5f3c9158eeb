"""Multi-turn rollouts in which the policy calls tools: generate until a tool call or an answer, run the calls,
append their replies (text and media) as a user turn, and continue within `ToolsSpec`'s limits.

    rollouts = tool_rollouts(engine, processor, prompts, contexts, params, spec, tools)

Each turn is one `engine.generate` over the batch's open conversations (n=1 each, `stop` adding `</tool_call>`,
at most `max_tokens_per_turn` tokens), on the whole conversation so far re-prefilled: the engine's own positions
(M-RoPE with media that arrive mid-sequence) and sampling apply unchanged. A conversation ends with

- `answer`: a turn that ends without a tool call;
- `length`: a turn that hits `max_tokens_per_turn`, or a conversation that would pass the engine's
  `max_prompt_tokens`;
- `max_turns`: a call after `max_turns` answered rounds (it is not run).

The tool replies of a turn share one user turn, each in Qwen's `<tool_response>` block with its media placeholders
first; the `<|im_end|>` that closes the policy's call and the reply turn are not the policy's tokens
(`policy_mask` False, log-prob 0). A reply that would pass `max_visual_tokens` in total becomes the error reply
`visual_budget` without media. Tool calls of a turn run concurrently across the batch (threads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch

from evr1.data.prompt_view import collapse_runs
from evr1.engines.base import RolloutEngine, RolloutResult, SamplingParams
from evr1.errors import ConfigError
from evr1.models.prompts import MM_KEYS, Prompt, build_prompt
from evr1.specs import ToolsSpec
from evr1.tools.base import ToolContext, ToolReply
from evr1.tools.calls import CLOSE, parse_calls, run_call, tool_metrics

ToolFinish = Literal["answer", "length", "max_turns"]
_RAW = "{{ messages[0]['content'] }}"  # a chat template that writes the segment as given
_PLACEHOLDER = {"video": "<|vision_start|><|video_pad|><|vision_end|>",
                "image": "<|vision_start|><|image_pad|><|vision_end|>"}


@dataclass(frozen=True)
class ToolRollout:
    """One multi-turn response: everything after the prompt, the policy's tokens marked.

    `sequence` is the prompt with the whole conversation (token ids and every media item, prompt's first);
    `token_ids`, `logprobs` and `policy_mask` cover `sequence.input_ids[prompt_length:]`; `text` is the
    conversation after the prompt with media placeholder runs collapsed.
    """

    prompt_index: int
    sample_index: int
    sequence: Prompt
    prompt_length: int
    token_ids: torch.Tensor  # (R,) int64
    logprobs: torch.Tensor  # (R,) float32, 0 where the policy did not write the token
    policy_mask: torch.Tensor  # (R,) bool
    finish_reason: ToolFinish
    replies: tuple[ToolReply, ...]
    turns: int  # assistant turns generated
    text: str
    final_turn: str  # the policy's last turn: what the reward router reads as the response


def rollout_metrics(rollouts: Sequence[ToolRollout]) -> dict[str, float]:
    """`tool_metrics` of the rollouts' replies, with `tools/turns` (mean turns) and `tools/finish/<reason>` (the
    share of rollouts that ended so)."""
    n = max(len(rollouts), 1)
    metrics = tool_metrics(r.replies for r in rollouts)
    metrics["tools/turns"] = sum(r.turns for r in rollouts) / n
    for reason in sorted({r.finish_reason for r in rollouts}):
        metrics[f"tools/finish/{reason}"] = sum(r.finish_reason == reason for r in rollouts) / n
    return metrics


@dataclass
class Conversation:
    """An open multi-turn rollout: the sequence so far and its pieces after the prompt."""

    prompt_index: int
    sample_index: int
    sequence: Prompt
    context: ToolContext | None
    prompt_length: int
    pieces: list[tuple[torch.Tensor, torch.Tensor, bool]] = field(default_factory=list)  # ids, log-probs, policy
    texts: list[str] = field(default_factory=list)
    replies: list[ToolReply] = field(default_factory=list)
    turns: int = 0
    visual_tokens: int = 0
    finish: ToolFinish | None = None

    @classmethod
    def start(cls, prompt: Prompt, context: ToolContext | None, prompt_index: int = 0, sample_index: int = 0
              ) -> Conversation:
        return cls(prompt_index, sample_index, prompt, context, len(prompt))

    def result(self, tokens_shown: tuple[str, ...]) -> ToolRollout:
        ids = torch.cat([p[0] for p in self.pieces]) if self.pieces else torch.zeros(0, dtype=torch.long)
        logprobs = torch.cat([p[1] for p in self.pieces]) if self.pieces else torch.zeros(0)
        mask = torch.cat([torch.full((len(p[0]),), p[2]) for p in self.pieces]) if self.pieces else torch.zeros(0, dtype=torch.bool)
        return ToolRollout(
            self.prompt_index, self.sample_index, self.sequence, self.prompt_length, ids, logprobs, mask,
            self.finish or "length", tuple(self.replies), self.turns, collapse_runs("".join(self.texts), tokens_shown),
            self.texts[-1] if self.texts else "",
        )


def reply_segment(processor: Any, replies: Sequence[ToolReply]) -> Prompt:
    """The tokens after a policy's tool call: its `<|im_end|>`, then one user turn of `<tool_response>` blocks (media
    placeholders, then text), then the assistant's turn opening; media expanded as in any prompt. Special tokens in
    a reply's text (an error may quote what the policy wrote) are dropped: text cannot add placeholders or turns."""
    specials = [t.content for t in processor.tokenizer.added_tokens_decoder.values() if t.special]
    blocks = [
        "<tool_response>\n" + "".join(_PLACEHOLDER[m.kind] for m in reply.media) + _plain(reply.text, specials)
        + "\n</tool_response>"
        for reply in replies
    ]
    segment = "<|im_end|>\n<|im_start|>user\n" + "\n".join(blocks) + "<|im_end|>\n<|im_start|>assistant\n"
    media = [m.processor_inputs() for reply in replies for m in reply.media]
    return build_prompt(processor, [{"role": "user", "content": segment}], media, add_generation_prompt=False,
                        chat_template=_RAW)


def _plain(text: str, specials: Sequence[str]) -> str:
    for token in specials:
        text = text.replace(token, "")
    return text


def extend(sequence: Prompt, ids: torch.Tensor, segment: Prompt | None = None) -> Prompt:
    """`sequence` followed by `ids` and then `segment` (its media after the sequence's, per model input)."""
    parts = [sequence.input_ids, ids.to(sequence.input_ids.dtype)] + ([segment.input_ids] if segment else [])
    mm = dict(sequence.mm)
    for key in MM_KEYS:
        if segment is not None and key in segment.mm:
            mm[key] = torch.cat([mm[key], segment.mm[key]]) if key in mm else segment.mm[key]
    return Prompt(torch.cat(parts), mm, sequence.text + (segment.text if segment else ""))


def advance(conv: Conversation, turn: RolloutResult, processor: Any, spec: ToolsSpec, tools: Mapping[str, Any],
            max_sequence: int | None = None) -> list[ToolReply]:
    """Take one generated turn into `conv`: close it (answer, length, max_turns) or run its calls and append their
    replies. Returns the replies appended."""
    conv.pieces.append((turn.token_ids, turn.logprobs, True))
    conv.texts.append(turn.text)
    conv.turns += 1
    calls = parse_calls(turn.text) if turn.finish_reason == "stop" and turn.text.endswith(CLOSE) else []
    if turn.finish_reason == "length" or not calls:
        conv.sequence = extend(conv.sequence, turn.token_ids)
        conv.finish = "length" if turn.finish_reason == "length" else "answer"
        return []
    if conv.turns > spec.max_turns:
        conv.sequence = extend(conv.sequence, turn.token_ids)
        conv.finish = "max_turns"
        return []
    replies = [_within_budget(conv, run_call(item, tools, conv.context), spec) for item in calls]
    segment = reply_segment(processor, replies)
    longer = extend(conv.sequence, turn.token_ids, segment)
    if max_sequence is not None and len(longer) > max_sequence:
        conv.sequence = extend(conv.sequence, turn.token_ids)
        conv.finish = "length"
        return []
    conv.sequence = longer
    conv.pieces.append((segment.input_ids, torch.zeros(len(segment.input_ids)), False))
    conv.texts.append(segment.text)
    conv.replies += replies
    return replies


def _within_budget(conv: Conversation, reply: ToolReply, spec: ToolsSpec) -> ToolReply:
    left = spec.max_visual_tokens - conv.visual_tokens
    if reply.visual_tokens > left:
        return ToolReply.failure("visual_budget", f"the reply's {reply.visual_tokens} visual tokens are over the"
                                 f" {left} left of max_visual_tokens={spec.max_visual_tokens}")
    conv.visual_tokens += reply.visual_tokens
    return reply


def continue_rollouts(
    engine: RolloutEngine, processor: Any, conversations: Sequence[Conversation], params: SamplingParams,
    spec: ToolsSpec, tools: Mapping[str, Any],
) -> list[ToolRollout]:
    """Generate every open conversation to its end, a turn at a time over the batch (see the module doc). `spec` must
    be the `ToolsSpec` the conversations' `ToolMedia` was built with (one object for the tools and the limits)."""
    if any(c.context is not None and c.context.spec != spec for c in conversations):
        raise ConfigError("the rollout's ToolsSpec differs from the one its tools' ToolMedia was built with")
    turn_params = replace(params, n=1, max_tokens=spec.max_tokens_per_turn, stop=(*params.stop, CLOSE))
    max_sequence = getattr(engine, "max_prompt_tokens", None)
    turn = 0
    while open_ := [c for c in conversations if c.finish is None]:
        seed = None if params.seed is None else params.seed + turn
        results = engine.generate([c.sequence for c in open_], replace(turn_params, seed=seed))
        with ThreadPoolExecutor(max_workers=min(8, len(open_))) as pool:
            list(pool.map(lambda pair: advance(*pair, processor, spec, tools, max_sequence), zip(open_, results,
                                                                                                 strict=True)))
        turn += 1
    tokens = (processor.video_token, processor.image_token)
    return [c.result(tokens) for c in conversations]


def tool_rollouts(
    engine: RolloutEngine, processor: Any, prompts: Sequence[Prompt], contexts: Sequence[ToolContext | None],
    params: SamplingParams, spec: ToolsSpec, tools: Mapping[str, Any],
) -> list[ToolRollout]:
    """`params.n` multi-turn rollouts per prompt, prompt-major; `contexts[i]` is prompt i's media for the tools and
    `tools` the tools offered, by name."""
    conversations = [Conversation.start(p, ctx, i, s) for i, (p, ctx) in enumerate(zip(prompts, contexts, strict=True))
                     for s in range(params.n)]
    return continue_rollouts(engine, processor, conversations, params, spec, tools)
