"""Prompts: chat text plus processed media, tokenised with each media placeholder expanded.

`build_prompt` takes what the HF image/video processors output (one mapping per image or video,
e.g. from the tensor cache) and expands the placeholders with the processor's own rules, so a
prompt built from cached tensors is token-for-token the one `processor(text, videos=...)` makes
from raw frames. Qwen3-VL videos become one `<t seconds><|vision_start|>...<|vision_end|>` group
per temporal patch, with timestamps from the video's metadata (the official Qwen3-VL layout: the
chat template's own `<|vision_start|><|video_pad|><|vision_end|>` wrapper is replaced whole).
evr1's metadata counts a clip's frames from the clip's first frame, so a clipped video's timestamps
start near 0 (qwen-vl-utils passes source-video indices, which count from the video's start): the
clock the grounding rewards read answers on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evr1.errors import Evr1Error
from evr1.models.families import processor_family

if TYPE_CHECKING:
    import torch

VIDEO_KEYS = ("pixel_values_videos", "video_grid_thw")
IMAGE_KEYS = ("pixel_values", "image_grid_thw")
# Model inputs a prompt may carry besides token ids, in the order they are concatenated.
MM_KEYS = ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw", "second_per_grid_ts")


@dataclass(frozen=True)
class Prompt:
    """A tokenised prompt and its model-ready media tensors (keys from `MM_KEYS`)."""

    input_ids: torch.Tensor  # (L,) int64
    mm: Mapping[str, torch.Tensor] = field(default_factory=dict)
    text: str = ""  # the expanded prompt text, for logs

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def chat_messages(question: str, media_kinds: Sequence[str] = (), system: str | None = None) -> list[dict[str, Any]]:
    """One user turn: the media placeholders (in order), then the question."""
    content: list[dict[str, Any]] = [{"type": kind} for kind in media_kinds]
    content.append({"type": "text", "text": question})
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system is not None else []
    return messages + [{"role": "user", "content": content}]


def _kind(item: Mapping[str, Any], index: int) -> str:
    if all(k in item for k in VIDEO_KEYS):
        return "video"
    if all(k in item for k in IMAGE_KEYS):
        return "image"
    raise Evr1Error(
        f"media item {index} has keys {sorted(item)}; expected a video processor output "
        f"({', '.join(VIDEO_KEYS)}) or an image processor output ({', '.join(IMAGE_KEYS)})"
    )


def _metadata(item: Mapping[str, Any]) -> Any:
    """The item's `VideoMetadata` (HF processors return a one-element list), or None."""
    from transformers.video_utils import VideoMetadata

    meta = item.get("video_metadata")
    if isinstance(meta, (list, tuple)):
        meta = meta[0] if meta else None
    if isinstance(meta, Mapping) and not isinstance(meta, VideoMetadata):
        meta = VideoMetadata(**meta)
    return meta


def _as_tensor(value: Any, dtype: Any = None) -> torch.Tensor:
    import torch

    tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    return tensor.to(dtype) if dtype is not None else tensor


def _video_inputs(processor: Any, fam: str, item: Mapping[str, Any], index: int) -> dict[str, Any]:
    import torch

    grid = _as_tensor(item["video_grid_thw"], torch.long).reshape(-1, 3)
    if grid.shape[0] != 1:
        raise Evr1Error(f"media item {index}: pass one mapping per video (video_grid_thw has {grid.shape[0]} rows)")
    inputs: dict[str, Any] = {"pixel_values_videos": _as_tensor(item["pixel_values_videos"]), "video_grid_thw": grid}
    meta = _metadata(item)
    if fam == "qwen3-vl":
        if meta is None or meta.fps is None or meta.frames_indices is None:
            raise Evr1Error(
                f"media item {index}: Qwen3-VL prompts need frame timestamps; pass `video_metadata` with the"
                " video's fps and the sampled frames_indices (the video processor returns it with return_metadata=True)"
            )
        inputs["video_metadata"] = [meta]
    if fam == "qwen2.5-vl":
        seconds = item.get("second_per_grid_ts")
        if seconds is None:
            fps = meta.sampled_fps if meta is not None else 24.0  # the processor's own fallback
            seconds = [processor.video_processor.temporal_patch_size / fps]
        inputs["second_per_grid_ts"] = _as_tensor(seconds, torch.float32).reshape(1)
    return inputs


def _image_inputs(item: Mapping[str, Any]) -> dict[str, Any]:
    import torch

    grid = _as_tensor(item["image_grid_thw"], torch.long).reshape(-1, 3)
    return {"pixel_values": _as_tensor(item["pixel_values"]), "image_grid_thw": grid}


def build_prompt(
    processor: Any,
    messages: str | Sequence[Mapping[str, Any]],
    media: Sequence[Mapping[str, Any]] = (),
    *,
    add_generation_prompt: bool = True,
    chat_template: str | None = None,
    answer_prefix: str = "",
    tools: Sequence[Mapping[str, Any]] = (),
    thinking: bool | None = None,
) -> Prompt:
    """Render `messages` with the chat template (`chat_template`, a Jinja text, else the processor's own)
    and expand its media placeholders.

    `messages` is a chat (list of `{"role", "content"}`) whose image/video items appear in the same
    order as `media`, or a plain question (then the media come first, in order). Each media item
    is the output of the family's image or video processor for one image or video. `answer_prefix` is text
    put at the start of the assistant's turn, after the template's generation prompt (e.g. "Answer:"). `tools`: function
    schemas the template renders (its `tools=`; see `evr1.tools.template`). `thinking` is passed to the template as
    `enable_thinking` (Qwen3.5's switch) unless None.
    """
    import torch

    fam = processor_family(processor)
    kinds = [_kind(item, i) for i, item in enumerate(media)]
    if isinstance(messages, str):
        messages = chat_messages(messages, kinds)
    offered = {"tools": list(tools)} if tools else {}
    switch = {} if thinking is None else {"enable_thinking": thinking}
    text = processor.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=add_generation_prompt,
                                         chat_template=chat_template, **offered, **switch) + answer_prefix

    video_items = [_video_inputs(processor, fam, m, i) for i, (m, k) in enumerate(zip(media, kinds)) if k == "video"]
    image_items = [_image_inputs(m) for m, k in zip(media, kinds) if k == "image"]
    if fam == "qwen3-vl":  # each frame gets its own vision_start/end group
        group = f"{processor.vision_start_token}{processor.video_token}{processor.vision_end_token}"
        text = text.replace(group, processor.video_token)
    counts = {"video": text.count(processor.video_token), "image": text.count(processor.image_token)}
    for kind, items in (("video", video_items), ("image", image_items)):
        if counts[kind] != len(items):
            raise Evr1Error(
                f"the prompt has {counts[kind]} {kind} placeholder(s) but {len(items)} {kind}(s) were given"
            )
    videos = [processor.replace_video_token(item, video_idx=0) for item in video_items]
    images = [processor.replace_image_token(item, image_idx=0) for item in image_items]
    [expanded], _ = processor.get_text_with_replacements([text], images, videos)
    input_ids = torch.tensor(processor.tokenizer(expanded)["input_ids"], dtype=torch.long)

    items = image_items + video_items
    present = [key for key in MM_KEYS if any(key in item for item in items)]
    mm = {key: torch.cat([item[key] for item in items if key in item]) for key in present}
    return Prompt(input_ids=input_ids, mm=mm, text=expanded)
