"""Training data: records, prompts and synthetic tasks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from evr1.specs.base import PositiveInt, RegistryName, Spec
from evr1.specs.media import CacheSpec, ImageSpec, VideoSpec


class PromptSpec(Spec):
    """How a record becomes the user turn: the question, lettered options, then the instruction.

    `chat_template`: a Jinja file rendering the chat in place of the processor's own template (None),
    e.g. a fine-tuned model's; it gets what HF chat templates get (`messages`, `add_generation_prompt`)
    and must write each media item's placeholder as the processor's template does. `evr1 data prompt`
    prints the prompt a record gets. `thinking`: the chat template's thinking switch (`enable_thinking`,
    Qwen3.5's templates: True opens `<think>` for the model, False gives an empty thinking block); None
    leaves the template's default (Qwen3.5: thinking on) and passes nothing.
    """

    system: str | None = None  # None: the chat template's default system prompt
    instruction: str = "Give the final answer inside <answer></answer>."
    chat_template: str | None = None
    thinking: bool | None = None


class SynthSpec(Spec):
    """Synthetic data written to `out` before training when `out/train.jsonl` is missing."""

    tasks: tuple[str, ...] = ("quickstart",)  # `quickstart`, `all`, or task names of evr1.data.synth
    out: str = "data/quickstart"
    n_train: PositiveInt = 256
    n_val: PositiveInt = 64
    seed: int = 0
    blank_control: bool = True  # also `<out>-blank/`: the same records with blanked media


class DataSpec(Spec):
    """Training and validation data, and how their media are prepared.

    `train`/`val` name JSON/JSONL or Parquet files, Hugging Face datasets saved with `save_to_disk`
    (local only: nothing is downloaded), or folders of record files. `columns` maps record fields to
    the names the files use (e.g. `{"problem": "question", "answer": "solution"}`); in tables, columns
    that are no record field are ignored. `data_root` is where media paths are resolved; by default
    each record file's own folder. `max_failed_records`: the share of training records whose media
    may fail to load (each is dropped and logged in `data_failures.jsonl`) before the run stops; at
    least one is allowed unless it is 0.
    """

    train: tuple[str, ...] = ()  # record files or folders; one path alone is read as a one-element tuple
    val: tuple[str, ...] = ()  # likewise
    columns: dict[str, str] = Field(default_factory=dict)  # record field -> column name in the files
    data_root: str | None = None
    prompt: PromptSpec = Field(default_factory=PromptSpec)
    synth: SynthSpec | None = None
    video: VideoSpec = Field(default_factory=VideoSpec)
    image: ImageSpec = Field(default_factory=ImageSpec)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    sampler: RegistryName("samplers") | None = None
    modality_ratio: dict[Literal["video", "image", "text"], Annotated[float, Field(ge=0)]] | None = None
    max_failed_records: Annotated[float, Field(ge=0, le=1)] = 0.01

    @field_validator("train", "val", mode="before")
    @classmethod
    def _one_path(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("columns")
    @classmethod
    def _record_fields(cls, value: dict[str, str]) -> dict[str, str]:
        from evr1.data.records import Record
        from evr1.errors import suggest

        for field in value:
            if field not in Record.model_fields:
                raise ValueError(f"{field!r} is not a record field.{suggest(field, Record.model_fields)}"
                                 f" Record fields: {', '.join(Record.model_fields)}")
        return value
