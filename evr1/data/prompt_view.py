"""The prompt an experiment gives one record, as `evr1 data prompt` prints it.

The prompt is built by the same `RecordPrompter` the rollout uses (the experiment's processor, chat
template, prompt settings, media settings and cache), so its text and token count are the run's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from evr1.data.records import Record, RecordError, scan_records
from evr1.errors import ConfigError


@dataclass(frozen=True)
class PromptView:
    header: str  # the record, where it is, and the token counts
    text: str  # the prompt text, media placeholders included


def pick_record(file: Path, index: int, record_id: str | None, columns: dict[str, str] | None = None) -> tuple[Record, int]:
    """The record at `index` (counting every JSON object or row of `file` from 0) or with id `record_id`, and its
    line. A record that breaks the schema raises its `RecordError` (file:line, field)."""
    found = list(scan_records(file, columns))
    if record_id is not None:
        matches = [(where, r) for where, r in found if isinstance(r, Record) and r.id == record_id]
        if not matches:
            raise ConfigError(f"{file} holds no valid record with id {record_id!r}")
        where, result = matches[0]
    else:
        if index >= len(found):
            raise ConfigError(f"--index {index}: {file} holds {len(found)} records (counted from 0)")
        where, result = found[index]
    if isinstance(result, list):
        first = result[0]
        raise RecordError(first.file, first.line, first.field, first.message)
    return result, where.line


def collapse_runs(text: str, tokens: tuple[str, ...]) -> str:
    """`text` with each run of one of `tokens` written once, with its length: `<|video_pad|>×64`."""
    for token in tokens:
        text = re.sub(f"(?:{re.escape(token)})+", lambda m, t=token: f"{t}×{len(m.group(0)) // len(t)}", text)
    return text


def prompt_view(experiment, records: Path | None, index: int = 0, record_id: str | None = None,
                collapse: bool = True, tools: tuple[str, ...] = ()) -> PromptView:
    """The prompt `experiment` builds for a record of `records` (default: its first `data.train` file), offering the
    registered `tools` (their schemas through the chat template) when given."""
    from evr1.data.loader import MediaLoader
    from evr1.data.prompting import RecordPrompter, load_chat_template
    from evr1.models import load_processor

    data = experiment.data
    if records is None:
        if not data.train:
            raise ConfigError("the experiment has no data.train file: pass --records FILE")
        records = Path(data.train[0])
    if not records.exists():
        raise ConfigError(f"--records {records} does not exist")
    record, line = pick_record(records, index, record_id, data.columns)
    load_chat_template(data.prompt)  # a broken template is said before the model loads
    processor = load_processor(experiment.model)
    root = Path(data.data_root) if data.data_root is not None else records.parent
    prompter = RecordPrompter(processor, MediaLoader(data.video, data.image, data.cache, processor, root), data.prompt,
                              tools=tools)
    prompt = prompter(record)
    ids, tokenizer = prompt.input_ids, processor.tokenizer
    video = int((ids == tokenizer.convert_tokens_to_ids(processor.video_token)).sum())
    image = int((ids == tokenizer.convert_tokens_to_ids(processor.image_token)).sum())
    limit = experiment.rollout.max_prompt_tokens
    over = f"; over rollout.max_prompt_tokens={limit}: a run drops this record" if len(prompt) > limit else ""
    header = (f"record {record.id!r} ({records}:{line}): {len(prompt)} tokens ({len(prompt) - video - image} text, {video} video,"
              f" {image} image){over}")
    text = collapse_runs(prompt.text, (processor.video_token, processor.image_token)) if collapse else prompt.text
    return PromptView(header, text)
