"""Records to model prompts: the question text, lettered options, the instruction, and the media.

`RecordPrompter` is what the rollout, the learner and the evaluation share, so a record always
becomes the same tokens. Media come from a `MediaLoader` (the tensor cache or live decoding);
each record's prompt is built once and reused by every pass that needs it, and what the model was
shown of it (`shown_of`: frame times on the clip clock and the prompt clock's offset from it, fps,
shown and original size) is kept for the rewards. A record whose media cannot be loaded raises `MediaLoadError`, naming the record and
the file; `attempt` returns that failure as a value (the training loop drops such records).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evr1.data.cache import CacheError
from evr1.data.frame_sampling import MediaError
from evr1.data.loader import CacheMissError, MediaLoader, ProcessedMedia
from evr1.data.records import MediaRef, Record
from evr1.errors import ConfigError, Evr1Error
from evr1.rewards.contract import BoxUnits, Shown, model_box_units
from evr1.specs import PromptSpec


@dataclass(frozen=True)
class MediaFailure:
    """A record whose media cannot be loaded: the file (as the record names it) and why, with the
    fields of the cache build's failure report (`reason`: the `MediaError` code, or `cache_miss` /
    `cache_error` for the tensor cache)."""

    record: str
    file: str
    kind: str
    reason: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


class MediaLoadError(Evr1Error):
    """A record's media cannot be loaded; `failure` says which record, which file and why."""

    def __init__(self, failure: MediaFailure) -> None:
        self.failure = failure
        what = "" if failure.kind == "prompt" else f"{failure.kind} {failure.file!r} cannot be loaded: "
        super().__init__(f"record {failure.record!r}: {what}{failure.detail}")


def _load_failure(record: Record, ref: MediaRef, exc: Exception) -> MediaFailure:
    if isinstance(exc, MediaError):
        reason, detail = exc.reason, exc.detail
    else:
        reason, detail = ("cache_miss" if isinstance(exc, CacheMissError) else "cache_error"), str(exc)
    return MediaFailure(record.id, ref.path, ref.kind, reason, detail)


def training_question_text(record: Record, spec: PromptSpec) -> str:
    """The user text: problem, then options as `A. text` lines (when given), then the instruction."""
    parts = [record.problem.strip()]
    if record.options:
        parts.append("\n".join(f"{string.ascii_uppercase[i]}. {text}" for i, text in enumerate(record.options)))
    if spec.instruction:
        parts.append(spec.instruction)
    return "\n".join(parts)


def shown_of(media: Sequence[ProcessedMedia], box_units: BoxUnits | None = None) -> Shown | None:
    """What the model is shown of a record, for the rewards: its first video, else its first image."""
    item = next((m for m in media if m.kind == "video"), media[0] if media else None)
    if item is None:
        return None
    info = item.info
    source = (info.source_width, info.source_height) if info.source_width and info.source_height else None
    if item.kind == "image":
        return Shown((info.width, info.height), source, box_units=box_units)
    return Shown((info.width, info.height), source, info.timestamps, info.sample_fps, box_units, item.clock_offset)


def box_units_of(processor: Any) -> BoxUnits:
    """The units the model of an HF Qwen-VL `processor` answers boxes in (its family's convention)."""
    from evr1.models.families import family

    return model_box_units(family(processor))


def load_chat_template(spec: PromptSpec) -> str | None:
    """The text of `spec.chat_template` (None: the processor's own), checked to parse as Jinja; a missing or
    broken file is a `ConfigError` naming it (and the line)."""
    if spec.chat_template is None:
        return None
    import jinja2

    path = Path(spec.chat_template)
    if not path.is_file():
        raise ConfigError(f"data.prompt.chat_template: {path} does not exist")
    text = path.read_text(encoding="utf-8")
    try:
        jinja2.Environment().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"data.prompt.chat_template: {path}:{exc.lineno}: not a valid Jinja template ({exc.message})") from None
    return text


def too_long(record: Record, length: int, limit: int) -> MediaFailure:
    """The data failure of a record whose prompt has `length` tokens, over `limit` (rollout.max_prompt_tokens)."""
    return MediaFailure(record.id, "", "prompt", "prompt_too_long",
                        f"the prompt has {length} tokens, over rollout.max_prompt_tokens={limit}")


class RecordPrompter:
    """Builds (and memoises by record id) the prompt of each record. With `max_tokens`, a prompt longer than
    that is a failure of its record (`too_long`), as media that cannot be loaded are."""

    def __init__(self, processor: Any, loader: MediaLoader, spec: PromptSpec, max_tokens: int | None = None, *,
                 tools: Sequence[str] = ()) -> None:
        from evr1.tools.template import tool_schemas

        self.processor, self.loader, self.spec, self.max_tokens = processor, loader, spec, max_tokens
        self.chat_template = load_chat_template(spec)
        self.tools, self.tool_schemas = tuple(tools), tool_schemas(tools)  # offered to the model, by name
        self.box_units = box_units_of(processor)
        self._memo: dict[str, Any] = {}
        self.shown: dict[str, Shown] = {}  # record id -> what the model was shown (records with media)
        self.cache_hits = 0
        self.media_loaded = 0

    def __call__(self, record: Record) -> Any:
        from evr1.models.prompts import build_prompt, chat_messages
        from evr1.tools.template import check_shown

        if record.id not in self._memo:
            media = [self._load(record, ref) for ref in record.media]
            self.media_loaded += len(media)
            self.cache_hits += sum(m.cache_hit for m in media)
            messages = chat_messages(training_question_text(record, self.spec), [m.kind for m in media], self.spec.system)
            prompt = build_prompt(self.processor, messages, [m.processor_inputs() for m in media], chat_template=self.chat_template,
                                  tools=self.tool_schemas, thinking=self.spec.thinking)
            check_shown(prompt.text, self.tools)
            if self.max_tokens is not None and len(prompt) > self.max_tokens:
                raise MediaLoadError(too_long(record, len(prompt), self.max_tokens))
            self._memo[record.id] = prompt
            shown = shown_of(media, self.box_units)
            if shown is not None:
                self.shown[record.id] = shown
        return self._memo[record.id]

    def _load(self, record: Record, ref: MediaRef) -> ProcessedMedia:
        try:
            return self.loader.load_media(ref, record.id)
        except (MediaError, CacheMissError, CacheError) as exc:
            raise MediaLoadError(_load_failure(record, ref, exc)) from None

    def many(self, records: Sequence[Record]) -> list[Any]:
        return [self(r) for r in records]

    def attempt(self, record: Record) -> Any:
        """The record's prompt, or its `MediaFailure` (media that cannot be loaded, a prompt over `max_tokens`)."""
        try:
            return self(record)
        except MediaLoadError as exc:
            return exc.failure

    def forget(self) -> dict[str, int]:
        """Drop memoised prompts and what was shown, and return the media counts since the last call (call once per step)."""
        stats = {"media/loaded": self.media_loaded, "media/cache_hits": self.cache_hits}
        self._memo.clear()
        self.shown = {}
        self.media_loaded = self.cache_hits = 0
        return stats
