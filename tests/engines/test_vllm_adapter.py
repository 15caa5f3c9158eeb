"""The vLLM engine's adapter code, without vLLM (it cannot be installed here).

vLLM's output classes are stood in for by plain dataclasses shaped like `RequestOutput`,
`CompletionOutput` and `Logprob`; the `LLM` object by a recorder. Everything else is real: tiny
models' HF processors check that the frames and metadata handed to vLLM make, through the same
processors and the official prompt layout, exactly our prompt tokens and pixel tensors.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest
import torch
from vllm_processing import processed_as_vllm_does

from evr1.engines import RolloutEngine, SamplingParams
from evr1.engines.vllm import VLLMEngine, _load_on_worker, import_vllm
from evr1.engines.vllm_adapter import (
    INSTALL_HINT,
    MediaTokens,
    PixelLayout,
    checkpoint_name,
    collapse_placeholders,
    engine_kwargs,
    gpu_requests,
    request_seed,
    rollout_results,
    sampling_kwargs,
    stop_token_ids,
    video_metadata,
    vllm_request,
    weight_batches,
)
from evr1.errors import ConfigError, Evr1Error
from evr1.models import build_prompt
from evr1.models.testing import process_image, process_video, random_frames
from evr1.registry import ENGINES
from evr1.specs import ModelSpec, ResourcesSpec, RolloutSpec

V, I, S, E = "<|video_pad|>", "<|image_pad|>", "<|vision_start|>", "<|vision_end|>"


# -- stand-ins for vLLM's output classes (the edge) ----------------------------------------------
@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    outputs: list[CompletionOutput]
    prompt_token_ids: list[int] | None = None


def completion(index: int, tokens: list[int], reason: str, text: str = "", extra: int | None = None) -> CompletionOutput:
    steps = []
    for t in tokens:
        step = {t: Logprob(-0.1 * (t % 7) - 0.05)}
        if extra is not None and extra != t:
            step[extra] = Logprob(-9.0)  # a higher-ranked token vLLM may list besides the sampled one
        steps.append(step)
    return CompletionOutput(index, text, tokens, steps, reason, tokens[-1] if reason == "stop" else None)


# -- placeholders ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("family", "expanded", "collapsed", "times"),
    [
        ("qwen2.5-vl", f"a{S}{V * 3}{E}b{S}{I * 2}{E}c", f"a{S}{V}{E}b{S}{I}{E}c", []),
        ("qwen2-vl", f"{S}{V}{E}{S}{V * 5}{E}", f"{S}{V}{E}{S}{V}{E}", []),
        (
            "qwen3-vl",
            f"x<0.4 seconds>{S}{V * 2}{E}<1.9 seconds>{S}{V * 2}{E}y{S}{I * 4}{E}<12.0 seconds>{S}{V}{E}",
            f"x{V}y{S}{I}{E}{V}",
            [[0.4, 1.9], [12.0]],
        ),
        ("qwen3-vl", "no media at all", "no media at all", []),
    ],
)
def test_collapse_undoes_the_expansion(family: str, expanded: str, collapsed: str, times: list) -> None:
    out = collapse_placeholders(expanded, family)
    assert out.text == collapsed and out.timestamps == times


@pytest.mark.parametrize(
    ("seconds", "stamps", "expected"),
    [
        (1.0, None, {"fps": 2.0, "frames_indices": [0, 1, 2, 3], "total_num_frames": 4}),
        (0.5, None, {"fps": 4.0, "frames_indices": [0, 1, 2, 3], "total_num_frames": 4}),
        (None, None, {"fps": 2.0, "frames_indices": [0, 1, 2, 3], "total_num_frames": 4}),
        (None, [0.4, 1.9], {"fps": 10.0, "frames_indices": [4, 4, 19, 19], "total_num_frames": 20}),
    ],
)
def test_video_metadata_reproduces_the_timing(seconds, stamps, expected) -> None:
    meta = video_metadata(4, seconds_per_patch=seconds, timestamps=stamps, patch=2)
    assert meta == expected | {"do_sample_frames": False}


def test_video_metadata_needs_one_timestamp_per_temporal_patch() -> None:
    with pytest.raises(Evr1Error, match="3 timestamps for 4 frames"):
        video_metadata(4, seconds_per_patch=None, timestamps=[0.0, 1.0, 2.0], patch=2)


def _media(processor, fam: str):
    video = process_video(processor, random_frames(fam, 3, frames=5, cells=(2, 3)), fps=4.0, stride=3)
    image = process_image(processor, random_frames(fam, 4, frames=1, cells=(3, 2))[0])
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "video"}, {"type": "text", "text": "Q?"}]}]
    return messages, image, video


def test_request_media_rebuild_our_prompt_exactly(processor, fam: str) -> None:
    """The prompt text, frames and metadata given to vLLM, run through the HF processor (as vLLM
    does), give back our prompt's token ids, pixel values and timing."""
    messages, image, video = _media(processor, fam)
    prompt = build_prompt(processor, messages, [image, video])
    request = vllm_request(prompt, fam, MediaTokens.of(processor), PixelLayout.of(processor.image_processor),
                           PixelLayout.of(processor.video_processor))
    assert request["mm_processor_kwargs"] == {"do_sample_frames": False, "do_resize": False}
    assert request["prompt"].count(I) == 1 and request["prompt"].count(V) == 1
    [frames], [(video_frames, _)] = request["multi_modal_data"]["image"], request["multi_modal_data"]["video"]
    assert frames.dtype == np.uint8 and video_frames.dtype == np.uint8 and len(video_frames) == 6  # 5 + 1 pad
    again = processed_as_vllm_does(processor, request)
    assert again["input_ids"][0].tolist() == prompt.input_ids.tolist()
    for key in prompt.mm:
        assert torch.equal(again[key], prompt.mm[key]), key


def test_qwen3_videos_collapse_to_the_bare_pad() -> None:
    """vLLM with transformers >= 5.10 expands a Qwen3-VL video's bare pad and keeps the text around
    it: a collapsed video must not keep the chat template's vision_start/end."""
    text = f"q{S}{I * 2}{E}<0.2 seconds>{S}{V * 2}{E}<1.2 seconds>{S}{V * 2}{E}?"
    out = collapse_placeholders(text, "qwen3-vl")
    assert out.text == f"q{S}{I}{E}{V}?" and out.timestamps == [[0.2, 1.2]]


def test_request_without_media_is_plain_text(processor, fam: str) -> None:
    prompt = build_prompt(processor, "Just text?")
    request = vllm_request(prompt, fam, MediaTokens.of(processor), PixelLayout.of(processor.image_processor),
                           PixelLayout.of(processor.video_processor))
    assert request == {"prompt": prompt.text}


def test_request_errors_name_the_prompt(processor, fam: str) -> None:
    messages, image, video = _media(processor, fam)
    prompt = build_prompt(processor, messages, [image, video])
    layouts = (PixelLayout.of(processor.image_processor), PixelLayout.of(processor.video_processor))
    no_video = type(prompt)(prompt.input_ids, {k: v for k, v in prompt.mm.items() if "video" not in k and k != "second_per_grid_ts"}, prompt.text)
    with pytest.raises(Evr1Error, match="prompt 7 has 1 video placeholder"):
        vllm_request(no_video, fam, MediaTokens.of(processor), *layouts, index=7)
    with pytest.raises(Evr1Error, match="prompt 2 has no text"):
        vllm_request(type(prompt)(prompt.input_ids, prompt.mm), fam, MediaTokens.of(processor), *layouts, index=2)
    short = dict(prompt.mm, pixel_values_videos=prompt.mm["pixel_values_videos"][:-1])
    with pytest.raises(Evr1Error, match="do not match the grids"):
        vllm_request(type(prompt)(prompt.input_ids, short, prompt.text), fam, MediaTokens.of(processor), *layouts)


# -- sampling --------------------------------------------------------------------------------------
def test_sampling_kwargs() -> None:
    params = SamplingParams(n=4, temperature=0.7, top_p=0.9, top_k=-1, max_tokens=33, seed=5)
    assert sampling_kwargs(params, (7, 8), (3, 4), request_seed(5, 2, 4)) == {
        "n": 4, "temperature": 0.7, "top_p": 0.9, "top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0, "stop": None,
        "include_stop_str_in_output": False, "max_tokens": 33, "logprobs": 0, "stop_token_ids": [7, 8], "ignore_eos": False,
        "logit_bias": {3: -100.0, 4: -100.0}, "seed": 13, "skip_special_tokens": True,
    }
    tuned = sampling_kwargs(replace(params, min_p=0.05, repetition_penalty=1.2, stop=("</answer>", "\n\n")), (7,), (), None)
    assert (tuned["min_p"], tuned["repetition_penalty"], tuned["stop"]) == (0.05, 1.2, ["</answer>", "\n\n"])
    assert tuned["include_stop_str_in_output"]  # the text keeps the stop string, as the HF engine's does
    greedy = sampling_kwargs(SamplingParams(n=8, top_k=20, greedy=True, stop_token_ids=(9,)), (7,), (), None)
    assert greedy["n"] == 1 and greedy["temperature"] == 0.0 and greedy["top_k"] == 20
    assert greedy["stop_token_ids"] == [9] and greedy["logit_bias"] is None and greedy["seed"] is None
    assert greedy["ignore_eos"]  # given stop ids replace the model's end tokens, as in the HF engine


@pytest.mark.parametrize(("seed", "index", "n", "expected"), [(None, 3, 8, None), (0, 0, 8, 0), (7, 2, 4, 15), (2**63 - 1, 1, 1, 0)])
def test_request_seeds_never_overlap_between_prompts(seed, index, n, expected) -> None:
    assert request_seed(seed, index, n) == expected


@pytest.mark.parametrize(
    ("generation", "tokenizer", "expected"), [(5, 5, (5,)), ([5, 6], 7, (5, 6, 7)), (None, 9, (9,)), ([], None, None)]
)
def test_stop_token_ids(generation, tokenizer, expected) -> None:
    if expected is None:
        with pytest.raises(Evr1Error, match="no end-of-sequence token"):
            stop_token_ids(generation, tokenizer)
    else:
        assert stop_token_ids(generation, tokenizer) == expected


# -- outputs ---------------------------------------------------------------------------------------
def test_outputs_become_prompt_major_results() -> None:
    outputs = [
        RequestOutput("0", [completion(1, [11, 12, 2], "stop", "b", extra=99), completion(0, [13, 14, 15], "length", "a")]),
        RequestOutput("1", [completion(0, [2], "stop"), completion(1, [16, 2], "stop", extra=2)]),
    ]
    results = rollout_results(outputs, 2, [2])
    assert [(r.prompt_index, r.sample_index) for r in results] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [r.token_ids.tolist() for r in results] == [[13, 14, 15], [11, 12, 2], [2], [16, 2]]
    assert [r.finish_reason for r in results] == ["length", "stop", "stop", "stop"]
    assert [r.text for r in results] == ["a", "b", "", ""]
    expected = [-0.1 * (t % 7) - 0.05 for t in (11, 12, 2)]  # the sampled token's, not the extra one's
    assert torch.allclose(results[1].logprobs, torch.tensor(expected))
    assert results[0].token_ids.dtype == torch.long and results[0].logprobs.dtype == torch.float32


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (CompletionOutput(0, "", [1, 2], None, "length"), "0 log-probs for 2 tokens"),
        (completion(0, [1, 2], "abort"), "finished a response with 'abort'"),
        (completion(0, [1, 3], "stop"), "other than a stop token"),
    ],
)
def test_bad_outputs_are_reported(output, message) -> None:
    with pytest.raises(Evr1Error, match=message):
        rollout_results([RequestOutput("0", [output])], 1, [2])


def test_a_response_stopped_by_a_stop_string_keeps_its_tokens_and_text() -> None:
    done = completion(0, [11, 12], "length", "<answer>B</answer>")
    done.finish_reason, done.stop_reason = "stop", "</answer>"  # vLLM: the string that stopped it
    [result] = rollout_results([RequestOutput("0", [done])], 1, [2], ["</answer>"])
    assert (result.finish_reason, result.token_ids.tolist(), result.text) == ("stop", [11, 12], "<answer>B</answer>")
    with pytest.raises(Evr1Error, match="other than a stop token or string"):  # a string not asked for
        rollout_results([RequestOutput("0", [done])], 1, [2], ["</think>"])


def test_missing_samples_are_reported() -> None:
    with pytest.raises(Evr1Error, match=r"samples \[0\] for prompt 0, expected 2"):
        rollout_results([RequestOutput("0", [completion(0, [2], "stop")])], 2, [2])


# -- weights ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "expected"),
    [("lm_head.weight", "lm_head.weight"), ("module.model.visual.x", "model.visual.x"),
     ("_orig_mod.module._orig_mod.model.language_model.y", "model.language_model.y")],
)
def test_checkpoint_names(name: str, expected: str) -> None:
    assert checkpoint_name(name) == expected


def test_weight_batches_are_bounded() -> None:
    weights = {"module.a": torch.zeros(10), "b": torch.zeros(20), "c": torch.zeros(5), "d": torch.zeros(100)}  # 4 B each
    batches = list(weight_batches(weights, max_bytes=120))
    assert [[name for name, _ in b] for b in batches] == [["a", "b"], ["c"], ["d"]]  # d alone: larger than the bound
    pairs = list(weight_batches(iter(weights.items()), max_bytes=10_000))
    assert len(pairs) == 1 and [n for n, _ in pairs[0]] == ["a", "b", "c", "d"]
    trained = torch.nn.Linear(2, 2).weight
    [[(_, kept)]] = weight_batches({"w": trained}, 100)
    [[(_, sent)]] = weight_batches({"w": trained}, 100, cpu=True)  # for pickling to tensor-parallel workers
    assert kept is trained and sent.device.type == "cpu" and not sent.requires_grad and torch.equal(sent, trained)


# -- engine settings and placement -----------------------------------------------------------------
def test_engine_kwargs() -> None:
    rollout = RolloutSpec(engine="vllm", max_prompt_tokens=1000, max_response_tokens=24, tensor_parallel_size=2,
                          gpu_memory_utilization=0.8, colocate=False, enforce_eager=True)
    kwargs = engine_kwargs("/m", ModelSpec(name="/m"), rollout, seed=3)
    assert kwargs == {
        "model": "/m", "dtype": "bfloat16", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.8,
        "enforce_eager": True, "enable_sleep_mode": False, "max_model_len": 1024, "logprobs_mode": "processed_logprobs", "seed": 3,
    }
    assert engine_kwargs("/m", ModelSpec(dtype="float32"), RolloutSpec())["enable_sleep_mode"] is True
    with pytest.raises(ConfigError, match="no vLLM equivalent"):
        engine_kwargs("/m", ModelSpec(attn_implementation="eager"), RolloutSpec())


@pytest.mark.parametrize(("temperature", "ok"), [(0.0, True), (0.01, True), (2.0, True), (0.005, False), (2.5, False)])
def test_temperatures_vllm_cannot_sample_at_are_refused_at_config_time(temperature: float, ok: bool) -> None:
    n = 1 if temperature == 0 else 8
    if ok:
        RolloutSpec(engine="vllm", temperature=temperature, n=n)
    else:
        with pytest.raises(ValueError, match=f"the vllm engine samples at temperature 0 or in \\[0.01, 2\\] \\(got {temperature}\\)"):
            RolloutSpec(engine="vllm", temperature=temperature, n=n)
    RolloutSpec(engine="hf", temperature=temperature, n=n)  # the HF engine samples at any temperature


@pytest.mark.parametrize(("temperature", "ok"), [(0.0, True), (0.01, True), (2.0, True), (0.005, False), (2.5, False)])
def test_temperatures_vllm_cannot_sample_at_are_refused(temperature: float, ok: bool) -> None:
    calls = [lambda: engine_kwargs("/m", ModelSpec(), RolloutSpec(temperature=temperature, n=1)),
             lambda: sampling_kwargs(SamplingParams(temperature=temperature), (2,), (), None)]
    for call in calls:
        if ok:
            call()
        else:
            with pytest.raises(ConfigError, match=f"in \\[0.01, 2\\] \\(got {temperature}\\)"):
                call()


def test_engine_core_must_run_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weight sync calls a function with tensors in vLLM's workers: impossible across its engine-core process."""
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    with pytest.raises(Evr1Error, match="set it to 0"):
        VLLMEngine.from_spec(ModelSpec(), RolloutSpec(engine="vllm"))
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING")
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(Evr1Error, match="needs vLLM"):
        VLLMEngine.from_spec(ModelSpec(), RolloutSpec(engine="vllm"))
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"


@pytest.mark.parametrize(
    ("gpus", "learners", "rollout", "expected"),
    [
        (0, 2, {}, (0.0, (0.0, 0.0), False)),
        (1, 1, {}, (0.5, (0.5,), True)),
        (4, 3, {}, (0.5, (0.5, 1.0, 1.0), True)),
        (4, 2, {"colocate": False, "tensor_parallel_size": 2}, (2.0, (1.0, 1.0), False)),
    ],
)
def test_gpu_requests(gpus: int, learners: int, rollout: dict, expected: tuple) -> None:
    got = gpu_requests(ResourcesSpec(num_gpus=gpus, learner_workers=learners), RolloutSpec(**rollout))
    assert (got.rollout, got.learners, got.colocated) == expected


@pytest.mark.parametrize(
    ("gpus", "learners", "rollout", "message"),
    [
        (2, 1, {"tensor_parallel_size": 2}, "tensor_parallel_size must be 1"),
        (3, 2, {"colocate": False, "tensor_parallel_size": 2}, "needs 2 GPU"),
    ],
)
def test_impossible_placements(gpus: int, learners: int, rollout: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        gpu_requests(ResourcesSpec(num_gpus=gpus, learner_workers=learners), RolloutSpec(**rollout))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"engine": "hf", "tensor_parallel_size": 2}, "tensor_parallel_size only apply to the vllm engine"),
        ({"engine": "hf", "colocate": False, "enforce_eager": True}, "colocate, enforce_eager only apply"),
        ({"gpu_memory_utilization": 1.0}, "less than 1"),
        ({"gpu_memory_utilization": 0.0}, "greater than 0"),
        ({"tensor_parallel_size": 0}, "greater than 0"),
    ],
)
def test_rollout_spec_rejects_nonsense(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RolloutSpec(**fields)


def test_resources_need_a_gpu_per_learner() -> None:
    with pytest.raises(ValueError, match=r"learner_workers \(3\) > num_gpus \(2\)"):
        ResourcesSpec(num_gpus=2, learner_workers=3)
    assert ResourcesSpec(num_gpus=0, learner_workers=3).learner_workers == 3  # CPU: any number


# -- the engine against a stand-in LLM (the edge) --------------------------------------------------
def test_missing_vllm_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` fails, installed or not
    assert ENGINES.get("vllm") is VLLMEngine
    with pytest.raises(Evr1Error) as info:
        import_vllm()
    assert "pip install -e '.[vllm]'" in str(info.value) and INSTALL_HINT in str(info.value)
    with pytest.raises(Evr1Error, match="needs vLLM"):
        ENGINES.get("vllm").from_spec(ModelSpec(), RolloutSpec(engine="vllm"))


@dataclass
class FakeParams:  # vllm.SamplingParams: keyword arguments only
    kwargs: dict

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@dataclass
class FakeWorker:
    loaded: list = field(default_factory=list)

    @property
    def model_runner(self):
        return self

    @property
    def model(self):
        return self

    def load_weights(self, batch) -> None:
        self.loaded.append([name for name, _ in batch])


class FakeLLM:
    """Records what the engine asks of `vllm.LLM` and answers like it (two tokens, then a stop); its
    prompt token ids come from the HF processor on the request, as vLLM's do (`tamper` spoils them)."""

    def __init__(self, processor, tamper: bool = False) -> None:
        self.processor, self.tamper = processor, tamper
        self.calls: list[str] = []
        self.workers = [FakeWorker(), FakeWorker()]  # tensor parallel: every worker loads every batch
        self.requests: list = []
        self.llm_engine = self

    def sleep(self, level: int) -> None:
        self.calls.append(f"sleep{level}")

    def wake_up(self) -> None:
        self.calls.append("wake")

    def generate(self, requests, sampling, use_tqdm=True):
        self.calls.append("generate")
        self.requests.append((requests, sampling))
        n = sampling[0].kwargs["n"]
        outputs = []
        for i, request in enumerate(requests):
            ids = processed_as_vllm_does(self.processor, request)["input_ids"][0].tolist()
            if self.tamper:
                ids.insert(len(ids) // 2, ids[0])
            outputs.append(RequestOutput(str(i), [completion(j, [5 + j, 2], "stop", f"r{j}") for j in range(n)], ids))
        return outputs

    def collective_rpc(self, fn, args=()):
        self.calls.append("rpc")
        return [fn(w, *args) for w in self.workers]

    def reset_prefix_cache(self) -> bool:
        self.calls.append("reset_prefix")
        return True

    def reset_encoder_cache(self) -> None:  # on `LLM.llm_engine`
        self.calls.append("reset_encoder")


def test_engine_generates_and_syncs_weights_around_sleep(processor, fam: str) -> None:
    llm = FakeLLM(processor)
    engine = VLLMEngine(llm, processor, fam, (2,), colocate=True, max_prompt_tokens=10_000, sampling_params_cls=FakeParams)
    assert isinstance(engine, RolloutEngine)
    engine.sleep()  # as from_spec leaves it: asleep until needed
    messages, image, video = _media(processor, fam)
    prompts = [build_prompt(processor, messages, [image, video]), build_prompt(processor, "text only?")]
    results = engine.generate(prompts, SamplingParams(n=3, max_tokens=4, seed=10))
    assert llm.calls == ["sleep1", "wake", "generate", "sleep1"]
    assert [(r.prompt_index, r.sample_index) for r in results] == [(i, j) for i in range(2) for j in range(3)]
    requests, sampling = llm.requests[0]
    assert [s.kwargs["seed"] for s in sampling] == [10, 13]
    assert set(sampling[0].kwargs["logit_bias"]) == set(engine.banned)
    assert "multi_modal_data" in requests[0] and "multi_modal_data" not in requests[1]

    engine.load_weights({"module.a": torch.zeros(3), "b": torch.zeros(2)})
    assert llm.calls[-5:] == ["wake", "rpc", "reset_prefix", "reset_encoder", "sleep1"] and engine.version == 1
    assert all(w.loaded == [["a", "b"]] for w in llm.workers)
    with pytest.raises(Evr1Error, match="over max_prompt_tokens=10000"):
        engine.generate([type(prompts[0])(torch.zeros(10_001, dtype=torch.long), {}, "x")], SamplingParams())


def test_separate_engine_never_sleeps(processor, fam: str) -> None:
    llm = FakeLLM(processor)
    engine = VLLMEngine(llm, processor, fam, (2,), colocate=False, sampling_params_cls=FakeParams)
    engine.sleep()
    engine.generate([build_prompt(processor, "q?")], SamplingParams(n=1, max_tokens=2))
    engine.load_weights([("w", torch.zeros(1))])
    assert llm.calls == ["generate", "rpc", "reset_prefix", "reset_encoder"]  # no sleep clears them here


def test_prompt_tokens_vllm_made_differently_fail_the_rollout(processor, fam: str) -> None:
    engine = VLLMEngine(FakeLLM(processor, tamper=True), processor, fam, (2,), colocate=False, sampling_params_cls=FakeParams)
    messages, image, video = _media(processor, fam)
    prompts = [build_prompt(processor, messages, [image, video])]
    with pytest.raises(Evr1Error, match=f"vLLM made prompt 0 into {len(prompts[0]) + 1} tokens, evr1 into {len(prompts[0])}"):
        engine.generate(prompts, SamplingParams(n=1, max_tokens=2))


def test_worker_side_load_passes_the_batch_through() -> None:
    worker = FakeWorker()
    assert _load_on_worker(worker, [("x", torch.zeros(1)), ("y", torch.zeros(1))]) == 2
    assert worker.loaded == [["x", "y"]]


def test_qwen35_weight_names_are_the_ones_vllms_loader_maps(model_cache) -> None:
    """vLLM's Qwen3.5 loader (vllm/model_executor/models/qwen3_5.py) takes HF names as they are: the linear-attention
    projections `in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a` (stacked into its fused layers), and, for
    MoE, transformers' fused `experts.gate_up_proj` (E, 2I, H), chunked in two on dim -2 without a transpose."""
    from evr1.models import load_model
    from evr1.models.testing import tiny_spec

    for name in ("qwen3.5", "qwen3.5-moe"):
        model = load_model(tiny_spec(name, model_cache))
        names = [n for batch in weight_batches(model.state_dict(), 1 << 30) for n, _ in batch]
        assert all(n.startswith(("model.language_model.", "model.visual.", "lm_head.")) for n in names)
        linear = {n.rsplit(".", 2)[-2] for n in names if ".linear_attn." in n and n.endswith(".weight")}
        assert linear == {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj", "conv1d", "norm"}
        if name == "qwen3.5-moe":
            text = model.config.get_text_config()
            gate_up = model.state_dict()["model.language_model.layers.0.mlp.experts.gate_up_proj"]
            assert gate_up.shape == (text.num_experts, 2 * text.moe_intermediate_size, text.hidden_size)
