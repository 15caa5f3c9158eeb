"""One record schema for training and evaluation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evr1.problem_types import ProblemType


class MediaRef(BaseModel):
    """A video or image, by path relative to the data root; videos may name a clip in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["video", "image"]
    path: str
    start: float | None = Field(default=None, ge=0)
    end: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _clip(self) -> MediaRef:
        if self.kind == "image" and (self.start is not None or self.end is not None):
            raise ValueError("an image has no clip start/end")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"clip end ({self.end}) must be after start ({self.start})")
        return self


class Record(BaseModel):
    """A question about media with a verifiable answer (and optionally an offline trajectory)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    problem: str
    problem_type: ProblemType
    answer: Any
    options: list[str] | None = None
    media: list[MediaRef] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    offline_response: str | None = None
    offline_logprobs: list[float] | None = None

    @field_validator("problem_type", mode="before")
    @classmethod
    def _canonical_type(cls, value: Any) -> ProblemType:
        return ProblemType.parse(value)

    @model_validator(mode="after")
    def _offline(self) -> Record:
        if self.offline_logprobs is not None and self.offline_response is None:
            raise ValueError("offline_logprobs given without offline_response")
        return self

    @property
    def modality(self) -> Literal["video", "image", "video+image", "text"]:
        kinds = {m.kind for m in self.media}
        if kinds == {"video", "image"}:
            return "video+image"
        return next(iter(kinds)) if kinds else "text"  # type: ignore[return-value]
