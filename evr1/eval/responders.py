"""Who answers the questions: a model through a rollout engine, or a script (known responses).

A responder `prepare`s one record (media from the cache or decoded live, prompt built with
`evr1.models.build_prompt`) in a worker thread, and `respond`s to a batch of prepared samples on
the main thread. A sample whose preparation fails carries the error and is scored 0. A responder that `chooses`
(a model whose engine gives logits) also prepares, when asked, the prompt of an official choice by logits
(`evr1.eval.logit_choice`) and makes the choices of a batch (`choose`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evr1.data.records import Record
from evr1.eval.eval_prompt import PromptMode, eval_question_text, prompt_hash
from evr1.eval.logit_choice import LogitChoice
from evr1.rewards.contract import Shown


@dataclass
class Prepared:
    """One record ready for generation (or the reason it is not)."""

    record: Record
    text: str  # the rendered prompt (chat text for a model, the question for a script)
    prompt: Any = None  # evr1.models.Prompt for a model
    error: str | None = None
    shown: Shown | None = None  # what the model saw (clip-clock frame times, sizes) and its box units
    cache_hits: int = 0
    choice_prompt: Any = None  # the prompt of the official choice by logits, when asked for one

    @property
    def prompt_hash(self) -> str:
        return prompt_hash(self.text)


def media_prompt(processor: Any, loader: Any, messages: Any, refs: Sequence[Any], owner: str) -> tuple[Any, list[Any]]:
    """Load the media `refs` (from the cache, else decoded live) and build the prompt of `messages` around them."""
    from evr1.models import build_prompt

    media = [loader.load_media(ref, owner) for ref in refs]
    return build_prompt(processor, messages, [m.processor_inputs() for m in media]), media


def too_long(prompt: Any, limit: int | None) -> str | None:
    """Why `prompt` cannot be generated from (over `limit` tokens), or None."""
    if limit is not None and len(prompt) > limit:
        return f"prompt has {len(prompt)} tokens, over max_prompt_tokens={limit}"
    return None


class Responder(Protocol):
    chooses: bool  # whether it makes official choices by logits (`prepare(..., choice=)` and `choose`)

    def prepare(self, record: Record, choice: LogitChoice | None = None) -> Prepared: ...

    def respond(self, batch: Sequence[Prepared]) -> list[str]: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass
class ScriptedResponder:
    """Answers from a table `{record id: response}`; ids missing from it (or mapped to None) get `default`, and
    with `default=None` they fail ("no response given"). `choices` `{record id: letter}`: official choices by logits
    recorded where the model ran (a sample without one gets none: given responses hold no logits)."""

    responses: Mapping[str, str | None]
    mode: PromptMode = "direct"
    default: str | None = ""
    asked: list[str] = field(default_factory=list)
    choices: Mapping[str, str] = field(default_factory=dict)

    @property
    def chooses(self) -> bool:
        return bool(self.choices)

    def choose(self, batch: Sequence[Prepared], choice: LogitChoice) -> list[dict[str, Any]]:
        """The recorded choices of `batch` (`{}` for a sample without one)."""
        return [{"choice": self.choices[p.record.id]} if p.record.id in self.choices else {} for p in batch]

    def response(self, record_id: str) -> str | None:
        given = self.responses.get(record_id)
        return self.default if given is None else given

    def prepare(self, record: Record, choice: LogitChoice | None = None) -> Prepared:
        error = "no response given" if self.response(record.id) is None else None
        return Prepared(record, eval_question_text(record, self.mode), error=error)

    def respond(self, batch: Sequence[Prepared]) -> list[str]:
        self.asked += [p.record.id for p in batch]
        return [self.response(p.record.id) or "" for p in batch]

    def describe(self) -> dict[str, Any]:
        return {"responder": "scripted", "prompt_mode": self.mode}


def engine_chooses(engine: Any) -> bool:
    """Whether `engine` gives next-token logits for answers chosen among candidate tokens (`choice_logits`: the HF
    engine)."""
    return callable(getattr(engine, "choice_logits", None))


class EngineResponder:
    """Greedy answers of a rollout engine, with media from a `MediaLoader` (cache or live)."""

    def __init__(self, engine: Any, processor: Any, loader: Any, params: Any, *, mode: PromptMode = "direct",
                 model: str = "?", max_prompt_tokens: int | None = None) -> None:
        from evr1.data.prompting import box_units_of

        self.engine, self.processor, self.loader, self.params = engine, processor, loader, params
        self.mode, self.model, self.max_prompt_tokens = mode, model, max_prompt_tokens
        self.box_units = box_units_of(processor)

    @property
    def chooses(self) -> bool:
        return engine_chooses(self.engine)

    def prepare(self, record: Record, choice: LogitChoice | None = None) -> Prepared:
        """The generation prompt of `record` and, with `choice`, the prompt of its official choice (same media)."""
        from evr1.data.prompting import shown_of
        from evr1.models import build_prompt, chat_messages

        question = eval_question_text(record, self.mode)
        kinds = [m.kind for m in record.media]
        try:
            prompt, media = media_prompt(self.processor, self.loader, chat_messages(question, kinds), record.media, record.id)
            chosen = None if choice is None else build_prompt(
                self.processor, chat_messages(choice.question(record), kinds), [m.processor_inputs() for m in media],
                answer_prefix=choice.answer_prefix)
        except Exception as exc:  # noqa: BLE001 - this sample fails (bad video, prompt error); the run goes on
            return Prepared(record, question, error=f"{type(exc).__name__}: {exc}")
        return Prepared(record, prompt.text, prompt, shown=shown_of(media, self.box_units), choice_prompt=chosen,
                        cache_hits=sum(m.cache_hit for m in media), error=too_long(prompt, self.max_prompt_tokens))

    def choose(self, batch: Sequence[Prepared], choice: LogitChoice) -> list[dict[str, Any]]:
        """The official choice of each sample of `batch` (prepared with `choice`), as its row `official` holds it."""
        logits = self.engine.choice_logits([p.choice_prompt for p in batch], choice.candidates(self.processor))
        return [choice.made(row) for row in logits.tolist()]

    def respond(self, batch: Sequence[Prepared]) -> list[str]:
        results = self.engine.generate([p.prompt for p in batch], self.params)
        return [r.text for r in sorted(results, key=lambda r: r.prompt_index)]

    def describe(self) -> dict[str, Any]:
        p = self.params
        sampling = {} if p.greedy else {"temperature": p.temperature, "top_p": p.top_p, "top_k": p.top_k}  # unused if greedy
        decoding = {"greedy": p.greedy, **sampling, "max_tokens": p.max_tokens}
        return {"responder": "engine", "engine": type(self.engine).__name__, "model": self.model, "prompt_mode": self.mode,
                "decoding": decoding}
