"""What vLLM's input processing makes of a request, done with the HF processor (vLLM is not installed here)."""

from __future__ import annotations


def processed_as_vllm_does(processor, request: dict) -> dict:
    """What vLLM's processing makes of a request: the HF processor on its prompt text and media, with
    the request's processor kwargs and each video's metadata (less `do_sample_frames`, which vLLM
    takes out). With transformers >= 5.10 vLLM expands placeholders by these same rules."""
    from transformers.video_utils import VideoMetadata

    mm = request.get("multi_modal_data", {})
    videos = mm.get("video", [])
    media = {"images": mm["image"]} if "image" in mm else {}
    if videos:
        media |= {"videos": [frames for frames, _ in videos],
                  "video_metadata": [VideoMetadata(**{k: v for k, v in meta.items() if k != "do_sample_frames"})
                                     for _, meta in videos]}
    return processor(text=[request["prompt"]], **media, **request.get("mm_processor_kwargs", {}), return_tensors="pt")
