"""`MediaLoader`: a record's media as model-ready tensors, from the cache or decoded live.

    loader = MediaLoader(data.video, data.image, data.cache, processor, data.data_root)
    for media in loader.load(record): media.pixel_values, media.grid_thw, media.timestamps, ...

`processor` is an HF Qwen-VL processor (its `video_processor` and `image_processor` are used) or a
`FamilyProcessors` pair. Modes (`CacheSpec.mode`): `prefer` reads the cache and decodes live on a
miss, `only` makes a miss an error naming the record, `bypass` always decodes live. A damaged entry
is a cache error: `prefer` decodes live and logs the entry (the next `cache build` rebuilds it),
`only` fails the record naming the entry and the cache file. A damaged cache file
(`CacheFileError`) stops the loader when it is made, in every mode that reads the cache.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from evr1.data.cache import (
    SCHEMA_VERSION,
    CacheError,
    DamagedEntryError,
    SourceDigests,
    TensorCache,
    entry_key,
    processor_identity,
    source_identity,
)
from evr1.data.decode import check_decoder, check_file
from evr1.data.frame_sampling import Geometry
from evr1.data.live import PIXELS_VERSION, MediaInfo, Prepared, prepare_image, prepare_video
from evr1.data.patches import Normaliser, OutputPool, Patches, from_buffer
from evr1.data.records import MediaRef, Record
from evr1.errors import ConfigError, Evr1Error
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

_log = logging.getLogger(__name__)


class CacheMissError(Evr1Error):
    """`only` mode and no cache entry for a record's media."""


@dataclass
class ProcessedMedia:
    """One video or image as the model receives it."""

    kind: Literal["video", "image"]
    path: str  # as in the record, relative to the data root
    pixel_values: torch.Tensor  # (seq, C * temporal_patch * patch * patch) float32
    grid_thw: torch.Tensor  # (1, 3) int64
    info: MediaInfo
    cache_hit: bool
    clock: Literal["source", "clip"] = "clip"  # what the prompt's frame times count from (`VideoSpec.clock`)

    @property
    def timestamps(self) -> tuple[float, ...]:
        """Seconds since the clip's first frame (the clip clock) of every sampled frame."""
        return self.info.timestamps

    @property
    def clock_offset(self) -> float:
        """Seconds the prompt's clock is ahead of the clip clock: the clip's start on the source clock, else 0."""
        if self.kind != "video" or self.clock == "clip" or not self.info.video_fps:
            return 0.0
        return self.info.first_frame / self.info.video_fps

    @property
    def second_per_grid_t(self) -> float | None:
        """Seconds covered by one temporal patch (Qwen2.5-VL's `second_per_grid_ts`)."""
        if self.kind != "video" or not self.info.sample_fps:
            return None
        per_patch = -(-len(self.info.frame_indices) // self.info.grid_thw[0])
        return per_patch / self.info.sample_fps

    def processor_inputs(self) -> dict[str, Any]:
        """This item as the HF processors output it (what `evr1.models.build_prompt` takes)."""
        if self.kind == "video":
            return {"pixel_values_videos": self.pixel_values, "video_grid_thw": self.grid_thw,
                    "video_metadata": self.video_metadata()}
        return {"pixel_values": self.pixel_values, "image_grid_thw": self.grid_thw}

    def video_metadata(self) -> dict[str, Any]:
        """The `video_metadata` HF processors take (Qwen3-VL prompt timestamps come from it): the source
        video's frame indices on the source clock (as qwen-vl-utils passes them), counted from the clip's
        first frame on the clip clock."""
        indices = self.info.frame_indices if self.clock == "source" else self.info.clip_indices
        return {"fps": self.info.video_fps, "frames_indices": list(indices), "total_num_frames": self.info.total_frames}


@dataclass(frozen=True)
class FamilyProcessors:
    """A video and an image processor (what an HF `ProcessorMixin` holds)."""

    video_processor: Any
    image_processor: Any


def family_processors(family: str) -> FamilyProcessors:
    """The HF default processors of a Qwen-VL family (no download): qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5
    (Qwen3.5 ships Qwen3-VL's processors)."""
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor, Qwen3VLVideoProcessor

    if family in ("qwen2-vl", "qwen2.5-vl"):
        return FamilyProcessors(Qwen2VLVideoProcessor(), Qwen2VLImageProcessor())
    if family in ("qwen3-vl", "qwen3.5"):
        image = Qwen2VLImageProcessor(patch_size=16, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
        return FamilyProcessors(Qwen3VLVideoProcessor(), image)
    raise ConfigError(f"unknown model family {family!r}; known: qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5")


@dataclass
class _Modality:
    """What one modality needs: its spec, geometry, arithmetic and key parts."""

    spec: VideoSpec | ImageSpec
    geometry: Geometry
    normaliser: Normaliser
    identity: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: VideoSpec | ImageSpec, processor: Any) -> _Modality:
        return cls(spec, Geometry.of(processor), Normaliser.of(processor), processor_identity(processor))


def _shows_times(video_processor: Any) -> bool:
    """Whether prompts of this video processor's family carry frame timestamps (Qwen3-VL)."""
    from transformers import Qwen3VLVideoProcessor

    return isinstance(video_processor, Qwen3VLVideoProcessor)


class MediaLoader:
    """Reads prepared media from the LMDB cache or prepares them live, per `CacheSpec.mode`."""

    def __init__(
        self, video: VideoSpec, image: ImageSpec, cache: CacheSpec, processor: Any, data_root: str | Path | None = None,
        *, pool_buffers: int = 8,
    ) -> None:
        self.cache_spec = cache
        self.data_root = Path(data_root) if data_root is not None else Path.cwd()
        video_processor = getattr(processor, "video_processor", None) or processor
        self.modalities = {
            "video": _Modality.of(video, video_processor),
            "image": _Modality.of(image, getattr(processor, "image_processor", None) or processor),
        }
        try:
            check_decoder(video.decoder)
        except ValueError as exc:
            raise ConfigError(f"data.video.decoder: {exc}") from None
        # only a Qwen3-VL prompt shows frame times; the others time a video from its clip's start
        self.clock = video.clock if _shows_times(video_processor) else "clip"
        if cache.mode == "only" and cache.path is None:
            raise ConfigError("data.cache.mode is 'only' but data.cache.path is not set")
        use_cache = cache.mode != "bypass" and cache.path is not None
        self.cache = TensorCache(cache.path, map_size_gb=cache.map_size_gb) if use_cache else None
        if self.cache is not None:
            self.cache.check()
        self.digests = SourceDigests()
        self._warned = False
        self._damaged: set[bytes] = set()
        self.pool = OutputPool(pool_buffers)  # outputs reuse memory that no tensor uses any more

    # -- keys ---------------------------------------------------------------------------------

    def source(self, ref: MediaRef) -> Path:
        return self.data_root / ref.path

    def key(self, ref: MediaRef, stat: os.stat_result | None = None, store: TensorCache | None = None) -> bytes:
        """The cache key of `ref` under this loader's settings (stats the file unless `stat` is given); the file's
        content digest comes from `self.digests`, with `store` (default: this loader's cache) recording fingerprints."""
        return entry_key(*self.identity(ref, stat, store))

    def identity(self, ref: MediaRef, stat: os.stat_result | None = None, store: TensorCache | None = None) -> tuple:
        """The parts of `ref`'s key: kind, source identity, clip, every setting the pixels depend on with the live
        path's `PIXELS_VERSION` (the prompt's `clock` is not one), processor identity, storage."""
        mod, path = self.modalities[ref.kind], self.source(ref)
        stat = stat if stat is not None else check_file(path)
        content = self.digests.of(path, stat, store if store is not None else self.cache)
        source = source_identity(ref.path, stat, content)
        spec = {**mod.spec.model_dump(mode="json", exclude={"clock"}), "pixels_version": PIXELS_VERSION}
        return ref.kind, source, (ref.start, ref.end), spec, mod.identity, self.cache_spec.storage

    # -- loading ------------------------------------------------------------------------------

    def load(self, record: Record) -> list[ProcessedMedia]:
        """Every media item of `record`, in order."""
        return [self.load_media(ref, record.id) for ref in record.media]

    def load_media(self, ref: MediaRef, record_id: str = "?", out: torch.Tensor | None = None) -> ProcessedMedia:
        """One media item; `out` (float32, the output's shape) is filled when given, else pooled memory."""
        if self.cache is not None:
            hit = self._read(ref, out)
            if hit is not None:
                return hit
            if self.cache_spec.mode == "only":
                raise CacheMissError(
                    f"record {record_id!r}: no cache entry for {ref.kind} {ref.path!r} under the current settings "
                    f"and cache schema {SCHEMA_VERSION} (cache {self.cache_spec.path}, mode 'only'; entries of an older "
                    "schema are never read); rebuild with `evr1 cache build`"
                )
        prepared = self.prepare(ref)
        mod = self.modalities[ref.kind]
        out = out if out is not None else self.pool.empty(prepared.patches.out_shape)
        return self._result(ref, prepared.info, mod.normaliser.apply(prepared.patches, out), cache_hit=False)

    def prepare(self, ref: MediaRef) -> Prepared:
        """Decode, sample and resize live into uint8 patches."""
        mod, path = self.modalities[ref.kind], self.source(ref)
        if ref.kind == "video":
            return prepare_video(path, mod.spec, mod.geometry, ref.start, ref.end)
        return prepare_image(path, mod.spec, mod.geometry)

    def _read(self, ref: MediaRef, out: torch.Tensor | None) -> ProcessedMedia | None:
        if not self.cache.exists():
            return self._fallback(ref, CacheError(f"no cache at {self.cache.path} (build it with `evr1 cache build`)"))
        mod, key = self.modalities[ref.kind], self.key(ref)
        try:
            with self.cache.read(key) as entry:
                if entry is None:
                    return None
                header, payload = entry
                info = MediaInfo.from_json(header["info"])
                data = from_buffer(payload, tuple(header["shape"]), header["dtype"])
                out = out if out is not None else self.pool.empty(tuple(header["out_shape"]))
                if header["dtype"] == "uint8":
                    patches = Patches(data, info.grid_thw, header["temporal_patch_size"])
                    values = mod.normaliser.apply(patches, out)
                else:
                    values = out.copy_(data)
        except (KeyError, TypeError, ValueError) as exc:  # a header that passed its digest but lacks a field
            damaged = DamagedEntryError(f"cache entry {key.decode()[:16]} in {self.cache.file} is damaged: {exc!r}")
            return self._fallback(ref, damaged, key)
        except CacheError as exc:
            return self._fallback(ref, exc, key)
        return self._result(ref, info, values, cache_hit=True)

    def _fallback(self, ref: MediaRef, exc: CacheError, key: bytes | None = None) -> None:
        """`only`: raise; `prefer`: decode live, logging each damaged entry once and any other cause once."""
        if self.cache_spec.mode == "only":
            raise exc
        if isinstance(exc, DamagedEntryError) and key not in self._damaged:
            self._damaged.add(key)
            _log.warning("reading %s live: %s (the next `evr1 cache build` rebuilds it)", ref.path, exc)
        elif not isinstance(exc, DamagedEntryError) and not self._warned:  # prefer: no cache yet means live
            _log.warning("reading %s live: %s", ref.path, exc)
            self._warned = True

    def _result(self, ref: MediaRef, info: MediaInfo, values: torch.Tensor, cache_hit: bool) -> ProcessedMedia:
        grid = torch.tensor([info.grid_thw], dtype=torch.long)
        return ProcessedMedia(ref.kind, ref.path, values, grid, info, cache_hit, self.clock)
