"""The peer's (EasyVideoR1's) video cache, modelled for the step benchmark: benchmark code, not part of evr1.

What it stores and reads, from its public code (https://github.com/cyuQ1n/EasyVideoR1, commit 7ab338b:
`scripts/preprocess_videos.py`, `verl/utils/dataset.py`, `verl/workers/rollout/vllm_rollout_spmd.py`,
`verl/workers/fsdp_workers.py`):

- Offline, each video is decoded, sampled and resized (qwen-vl-utils' `fetch_video`: float32 frames
  `(T, C, H, W)`) and saved with `torch.save` as `{"frames", "metadata", ...}` in `<md5 of the path and
  settings>.pt`. evr1's live path makes the same frames bit for bit (`tests/data/test_media_reference.py`),
  so they are made with it here.
- At training time every reader does `torch.load` and runs the HF processor on the frames
  (`do_resize=False`, `do_sample_frames=False`): the dataset (the whole processor, text and video, for
  the prompt ids; its pixels are dropped), the rollout (vLLM runs the processor on the frames it is
  given) and the learner (the video processor, once per prompt for both its passes). Three reads a step.

`PeerLoader` has `MediaLoader.load_media`'s signature, so evr1's `RecordPrompter` in the rollout and
learner workers reads through it; `PeerDataset.read` is the dataset's pass. `tests/test_bench_peer_loader.py`
checks that both give the model the same inputs as evr1's cache and live paths.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from evr1.data.frame_sampling import Geometry
from evr1.data.live import MediaInfo, prepare_video, video_frames
from evr1.data.loader import ProcessedMedia
from evr1.data.records import MediaRef, Record
from evr1.specs import VideoSpec


def artifact(out_dir: Path, ref: MediaRef, spec: VideoSpec) -> Path:
    """The `.pt` file of a video: named by a digest of its path and the settings, as the peer names it."""
    digest = hashlib.md5(f"{ref.path}_{spec.model_dump_json()}".encode()).hexdigest()[:16]
    return out_dir / f"{digest}.pt"


def build_peer_cache(records: Iterable[Record], spec: VideoSpec, processor: Any, data_root: Path, out_dir: Path) -> int:
    """Write the `.pt` file of every video of `records` that has none; returns how many were written."""
    geometry = Geometry.of(processor.video_processor)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = 0
    for ref in (m for r in records for m in r.media if m.kind == "video"):
        path = artifact(out_dir, ref, spec)
        if path.exists():
            continue
        frames, _ = video_frames(data_root / ref.path, spec, geometry, ref.start, ref.end)
        info = prepare_video(data_root / ref.path, spec, geometry, ref.start, ref.end).info  # metadata, as stored there
        metadata = {"fps": info.video_fps, "frames_indices": list(info.frame_indices), "total_num_frames": info.total_frames}
        tmp = path.with_suffix(".part")
        torch.save({"frames": frames.to(torch.float32), "metadata": metadata, "info": info.to_json()}, tmp)
        tmp.rename(path)
        written += 1
    return written


def _load(out_dir: Path, ref: MediaRef, spec: VideoSpec) -> dict[str, Any]:
    if ref.kind != "video":
        raise ValueError(f"the peer's cache holds videos only, not {ref.kind} {ref.path!r}")
    return torch.load(artifact(out_dir, ref, spec), map_location="cpu", weights_only=False)  # as the peer loads it


def _video_inputs(processor: Any, entry: dict[str, Any]) -> dict[str, Any]:
    return processor.video_processor(
        videos=[entry["frames"]], video_metadata=[entry["metadata"]], do_resize=False, do_sample_frames=False,
        return_tensors="pt",
    )


class PeerLoader:
    """A rollout's or learner's read of the peer's cache: `torch.load`, then the HF video processor."""

    def __init__(self, spec: VideoSpec, processor: Any, out_dir: Path, clock: str = "clip") -> None:
        self.spec, self.processor, self.out_dir, self.clock = spec, processor, Path(out_dir), clock

    def load_media(self, ref: MediaRef, record_id: str = "?") -> ProcessedMedia:
        entry = _load(self.out_dir, ref, self.spec)
        out = _video_inputs(self.processor, entry)
        info = MediaInfo.from_json(entry["info"])
        return ProcessedMedia("video", ref.path, out["pixel_values_videos"], out["video_grid_thw"], info, False, self.clock)


class PeerDataset:
    """The peer's dataset pass: `torch.load`, then the whole processor (prompt text and video) for the prompt ids."""

    def __init__(self, spec: VideoSpec, processor: Any, out_dir: Path) -> None:
        self.spec, self.processor, self.out_dir = spec, processor, Path(out_dir)

    def read(self, record: Record, text: str) -> dict[str, Any]:
        """The processor's output for `record` with its chat-formatted prompt `text`."""
        entries = [_load(self.out_dir, ref, self.spec) for ref in record.media]
        return self.processor(
            text=[text], videos=[e["frames"] for e in entries], video_metadata=[e["metadata"] for e in entries],
            do_resize=False, do_sample_frames=False, add_special_tokens=False, return_tensors="pt",
        )
