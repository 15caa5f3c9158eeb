"""Prompts from processed media, and the batched forward (positions, teacher-forced log-probs)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from evr1.errors import Evr1Error
from evr1.models import build_prompt, chat_messages, load_processor
from evr1.models.forward import collate, response_logits, response_logprobs, rope_positions, token_types
from evr1.models.testing import process_image, process_video, random_frames, tiny_spec, video_prompts


def _image(fam: str, seed: int = 7) -> np.ndarray:
    return random_frames(fam, seed, frames=1, cells=(2, 3))[0]


def test_prompt_equals_the_processor_on_raw_frames(fam: str, processor) -> None:
    frames, image = random_frames(fam, 1, frames=4), _image(fam)
    video = process_video(processor, frames, fps=4.0, stride=2)
    prompt = build_prompt(processor, "What colour?", [video, process_image(processor, image)])

    text = processor.apply_chat_template(chat_messages("What colour?", ["video", "image"]), tokenize=False,
                                         add_generation_prompt=True)
    if fam in ("qwen3-vl", "qwen3.5"):  # the official layout: the per-frame groups replace the template's wrapper
        text = text.replace("<|vision_start|><|video_pad|><|vision_end|>", "<|video_pad|>")
    reference = processor(text=[text], videos=[frames], images=[image], video_metadata=video["video_metadata"],
                          do_sample_frames=False, return_tensors="pt")
    assert prompt.input_ids.tolist() == reference["input_ids"][0].tolist()
    assert prompt.mm.keys() <= set(reference.keys())
    for key, value in prompt.mm.items():
        assert torch.equal(value, reference[key]), key
    assert torch.equal(token_types(prompt.input_ids, processor), reference["mm_token_type_ids"][0])


def test_qwen3_video_has_one_timestamped_group_per_temporal_patch(model_cache) -> None:
    processor = load_processor(tiny_spec("qwen3-vl", model_cache))
    # 6 frames taken every 2nd frame of a 4 fps video: times 0, .5, ..., 2.5 s; patches of 2 frames
    # are stamped with their mean time: 0.25, 1.25, 2.25 (printed with one decimal).
    video = process_video(processor, random_frames("qwen3-vl", 0, frames=6, cells=(2, 2)), fps=4.0, stride=2)
    text = build_prompt(processor, "Q", [video]).text
    groups = re.findall(r"<([0-9.]+) seconds><\|vision_start\|>((?:<\|video_pad\|>)+)<\|vision_end\|>", text)
    assert [t for t, _ in groups] == ["0.2", "1.2", "2.2"]
    # 64x64 frames: 4x4 patches of 16 px, merged 2x2 -> 4 tokens per temporal patch
    assert [pads.count("<|video_pad|>") for _, pads in groups] == [4, 4, 4]
    assert "<|vision_start|><0" not in text  # no outer wrapper around the frames


def test_qwen25_prompt_carries_seconds_per_grid(model_cache) -> None:
    processor = load_processor(tiny_spec("qwen2.5-vl", model_cache))
    video = process_video(processor, random_frames("qwen2.5-vl", 0), fps=4.0, stride=2)  # sampled at 2 fps
    prompt = build_prompt(processor, "Q", [video])
    assert prompt.mm["second_per_grid_ts"].tolist() == [1.0]  # 2 frames per temporal patch / 2 fps


def test_prompt_errors_name_the_problem(fam: str, processor) -> None:
    video = process_video(processor, random_frames(fam, 0))
    with pytest.raises(Evr1Error, match="media item 0 has keys"):
        build_prompt(processor, "Q", [{"pixel_values_videos": video["pixel_values_videos"]}])
    messages = chat_messages("Q", ["video", "video"])
    with pytest.raises(Evr1Error, match="2 video placeholder"):
        build_prompt(processor, messages, [video])


def test_a_qwen3_video_without_its_frame_times_is_refused(model_cache) -> None:
    processor = load_processor(tiny_spec("qwen3-vl", model_cache))
    video = process_video(processor, random_frames("qwen3-vl", 0))
    bare = {k: v for k, v in video.items() if k != "video_metadata"}
    with pytest.raises(Evr1Error, match="timestamps"):
        build_prompt(processor, "Q", [bare])


def test_text_only_prompt(fam, processor) -> None:
    prompt = build_prompt(processor, "Hello")
    opened = "<think>\n" if fam == "qwen3.5" else ""  # Qwen3.5's template opens the thinking block
    assert prompt.mm == {} and prompt.text.endswith("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n" + opened)


def test_collate_left_pads_prompts_and_right_pads_responses(fam: str, processor, model) -> None:
    prompts = video_prompts(processor, fam, ["a", "a longer question"])
    batch = collate(prompts, pad_id=0, config=model.config, responses=[[5, 6, 7], [8]])
    lengths = [len(p) for p in prompts]
    width = max(lengths)
    assert batch.prompt_length == width and batch.input_ids.shape == (2, width + 3)
    for row, prompt in enumerate(prompts):
        start = width - len(prompt)
        assert batch.attention_mask[row, :start].sum() == 0
        assert torch.equal(batch.input_ids[row, start:width], prompt.input_ids)
    assert batch.input_ids[0, width:].tolist() == [5, 6, 7] and batch.input_ids[1, width:].tolist() == [8, 0, 0]
    assert batch.attention_mask[1, width:].tolist() == [1, 0, 0]
    n_video_tokens = int((batch.mm_token_type_ids == 2).sum())
    merged = int(batch.mm["video_grid_thw"].prod(-1).sum()) // 4
    assert n_video_tokens == merged and batch.mm["video_grid_thw"].shape[0] == 2


def test_explicit_positions_equal_the_models_own(fam: str, processor, model) -> None:
    """For an unpadded prompt the model's internal M-RoPE positions and ours give the same logits."""
    prompt = video_prompts(processor, fam, ["What colour is the square?"])[0]
    batch = collate([prompt], 0, model.config)
    with torch.no_grad():
        ours = model(**batch.model_inputs(), position_ids=rope_positions(model, batch)[0]).logits
        model.model.rope_deltas = None
        theirs = model(**batch.model_inputs()).logits
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_pixels_change_the_logits(fam: str, processor, model) -> None:
    first, second = (build_prompt(processor, "Q", [process_video(processor, random_frames(fam, s))]) for s in (1, 2))
    with torch.no_grad():
        logits = [model(**collate([p], 0, model.config).model_inputs()).logits[0, -1] for p in (first, second)]
    assert torch.isfinite(logits[0]).all() and not torch.allclose(logits[0], logits[1])


def test_forward_with_video_and_image(fam: str, processor, model) -> None:
    media = [process_video(processor, random_frames(fam, 3)), process_image(processor, _image(fam))]
    prompt = build_prompt(processor, "Describe", media)
    with torch.no_grad():
        out = model(**collate([prompt], 0, model.config).model_inputs())
    assert out.logits.shape == (1, len(prompt), len(processor.tokenizer))
    assert torch.isfinite(out.logits).all()


def test_response_logprobs_equal_full_forward_log_softmax(fam: str, processor, model) -> None:
    prompts = video_prompts(processor, fam, ["short", "a much longer question here"])
    responses = [[40, 41, 42, 43], [50, 51]]
    logprobs, mask = response_logprobs(model, prompts, responses, pad_id=0)
    assert mask.tolist() == [[True] * 4, [True, True, False, False]]
    for row, (prompt, response) in enumerate(zip(prompts, responses)):
        ids = torch.cat([prompt.input_ids, torch.tensor(response)])
        with torch.no_grad():
            model.model.rope_deltas = None
            types = token_types(ids, model.config)[None]
            full = model(input_ids=ids[None], mm_token_type_ids=types, **prompt.mm).logits
        expected = full[0, len(prompt) - 1 : -1].log_softmax(-1).gather(-1, torch.tensor(response)[:, None])[:, 0]
        assert torch.allclose(logprobs[row, : len(response)], expected, atol=1e-5)
    assert logprobs[1, 2:].eq(0).all()


def test_response_logits_carry_gradients(processor, model, fam: str) -> None:
    prompts = video_prompts(processor, fam, ["q"])
    logits, targets, _ = response_logits(model, prompts, [[3, 4]], pad_id=0)
    assert logits.shape[:2] == targets.shape == (1, 2)
    logits.sum().backward()
    assert model.lm_head.weight.grad is not None
    model.zero_grad(set_to_none=True)
