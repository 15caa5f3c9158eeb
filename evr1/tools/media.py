"""`ToolMedia`: the loaders and settings the built-in video tools read media with, made once per engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evr1.data.loader import MediaLoader, ProcessedMedia
from evr1.data.records import Record
from evr1.specs import CacheSpec, ImageSpec, ToolsSpec, VideoSpec
from evr1.tools.base import ToolContext


@dataclass
class ToolMedia:
    """`seek_loader` reads spans with the data's `VideoSpec` under the tools' per-call pixel budget, from the tensor
    cache where it holds an entry for that span and those settings (`CacheSpec.mode` as for prompts), else decoded
    live; its image modality (geometry, normalisation) also serves `zoom`."""

    spec: ToolsSpec
    seek_loader: MediaLoader

    @classmethod
    def build(
        cls, spec: ToolsSpec, video: VideoSpec, image: ImageSpec, cache: CacheSpec, processor: Any,
        data_root: str | Path | None = None,
    ) -> ToolMedia:
        return cls(spec, MediaLoader(seek_spec(spec, video), image, cache, processor, data_root))

    @property
    def video(self) -> VideoSpec:
        """The `VideoSpec` a `seek` span is sampled with (what `evr1 cache build` needs to hold its entries)."""
        return self.seek_loader.modalities["video"].spec

    def context(self, record: Record, shown: list[ProcessedMedia]) -> ToolContext | None:
        """The tool context of `record` whose media the prompt shows as `shown`: its first video; None without one."""
        for ref, media in zip(record.media, shown, strict=True):
            if ref.kind == "video":
                return ToolContext(self, ref, media, record.id)
        return None


def seek_spec(spec: ToolsSpec, video: VideoSpec) -> VideoSpec:
    """The data's `VideoSpec` with one `seek` reply's pixel budget as its `total_pixels`."""
    return VideoSpec.model_validate({**video.model_dump(), "total_pixels": spec.seek_total_pixels})
