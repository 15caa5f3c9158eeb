"""The vLLM rollout engine (GPU only; `pip install -e '.[vllm]'`): a thin adapter over vLLM's public API.

vLLM calls used, all public (docs.vllm.ai, "LLM class" and "Sleep mode"; checked against the
vLLM 0.33 source):
- `vllm.LLM(model=..., enable_sleep_mode=..., logprobs_mode="processed_logprobs", ...)` and
  `LLM.generate(prompts, sampling_params)` with prompt dicts `{"prompt", "multi_modal_data",
  "mm_processor_kwargs"}` ("Multimodal Inputs": videos as frame arrays with metadata);
- `LLM.sleep(level=1)` / `LLM.wake_up()` in colocated mode (weights offloaded to CPU, KV cache
  freed while the learner trains on the same GPU);
- `LLM.collective_rpc(fn, args=...)` for weight sync: `fn(worker, ...)` runs in every worker and
  calls the model's `load_weights(iterable of (checkpoint name, tensor))`, the loader vLLM itself
  uses for HF checkpoints (tensor-parallel shards are cut by it). The engine core runs in this
  process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`): vLLM's inter-process messages cannot carry a
  function or tensors, its tensor-parallel workers take pickled CPU tensors. Afterwards the
  prefix and encoder caches are reset (their entries were computed with the old weights).
Everything else (requests, sampling settings, outputs, weight names, placement) is in
`evr1.engines.vllm_adapter` and tested without vLLM. Not yet run on a GPU
(`tests/engines/test_vllm_engine_gpu.py`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from evr1.engines.base import RolloutResult, SamplingParams, Weights
from evr1.engines.vllm_adapter import (
    MediaTokens,
    PixelLayout,
    check_prompt_tokens,
    engine_kwargs,
    missing_vllm_message,
    request_seed,
    rollout_results,
    sampling_kwargs,
    stop_token_ids,
    vllm_request,
    weight_batches,
)
from evr1.errors import Evr1Error
from evr1.models.prompts import Prompt
from evr1.specs import ModelSpec, RolloutSpec

SYNC_BATCH_BYTES = 1 << 30  # weights per collective_rpc call
IN_PROCESS = "VLLM_ENABLE_V1_MULTIPROCESSING"


def import_vllm() -> Any:
    """`vllm`, or an `Evr1Error` saying how to install it."""
    try:
        import vllm
    except ImportError as exc:
        import torch

        raise Evr1Error(missing_vllm_message(exc, cuda=torch.cuda.is_available())) from None
    return vllm


def _load_on_worker(worker: Any, batch: list[tuple[str, Any]]) -> int:
    """Runs inside each vLLM worker (via `collective_rpc`): load a batch of checkpoint-named tensors."""
    worker.model_runner.model.load_weights(batch)
    return len(batch)


class VLLMEngine:
    """Rollouts from vLLM, with the weights the learner sends; colocated or on GPUs of its own."""

    version: int  # weight updates received

    def __init__(
        self,
        llm: Any,
        processor: Any,
        family: str,
        stop_ids: Sequence[int],
        *,
        colocate: bool,
        max_prompt_tokens: int | None = None,
        sampling_params_cls: Any = None,
        cpu_weights: bool = False,
    ) -> None:
        self.llm, self.family, self.colocate, self.cpu_weights = llm, family, colocate, cpu_weights
        self.stop_ids = tuple(stop_ids)
        self.max_prompt_tokens = max_prompt_tokens
        self.sampling_params_cls = sampling_params_cls or import_vllm().SamplingParams
        self.tokens = MediaTokens.of(processor)
        self.image_layout = PixelLayout.of(processor.image_processor)
        self.video_layout = PixelLayout.of(processor.video_processor)
        to_id = processor.tokenizer.convert_tokens_to_ids
        self.banned = (int(to_id(self.tokens.image)), int(to_id(self.tokens.video)))
        self.version = 0
        self.asleep = False

    @classmethod
    def from_spec(cls, model: ModelSpec, rollout: RolloutSpec, *, device: str = "cuda", seed: int = 0) -> VLLMEngine:
        """Start vLLM on the model of `model` with the settings of `rollout` (`device` must be CUDA)."""
        if os.environ.setdefault(IN_PROCESS, "0") != "0":
            raise Evr1Error(
                f"evr1 syncs weights into vLLM's engine in its own process; unset {IN_PROCESS} "
                f"(it is {os.environ[IN_PROCESS]!r}) or set it to 0"
            )
        vllm = import_vllm()
        if device != "cuda":
            raise Evr1Error(f"the vllm engine runs on CUDA only (asked for {device!r}); use rollout.engine='hf'")
        from transformers import GenerationConfig

        from evr1.models.families import processor_family
        from evr1.models.loading import load_processor, model_path

        path = model_path(model)
        processor = load_processor(model)
        stops = stop_token_ids(GenerationConfig.from_pretrained(path).eos_token_id, processor.tokenizer.eos_token_id)
        llm = vllm.LLM(**engine_kwargs(path, model, rollout, seed=seed))
        engine = cls(llm, processor, processor_family(processor), stops, colocate=rollout.colocate,
                     max_prompt_tokens=rollout.max_prompt_tokens, sampling_params_cls=vllm.SamplingParams,
                     cpu_weights=rollout.tensor_parallel_size > 1)
        engine.sleep()
        return engine

    # -- colocation -----------------------------------------------------------------------
    def sleep(self) -> None:
        """Free the GPU for the learner (colocated mode): weights to CPU, KV cache dropped."""
        if self.colocate and not self.asleep:
            self.llm.sleep(level=1)
            self.asleep = True

    def wake(self) -> None:
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False

    # -- generation -----------------------------------------------------------------------
    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[RolloutResult]:
        """`params.n` responses per prompt, ordered prompt-major (`prompt_index * n + sample_index`).

        vLLM's prompt tokens are checked against ours: the learner scores the responses after them.
        """
        requests = []
        for i, prompt in enumerate(prompts):
            if self.max_prompt_tokens is not None and len(prompt) > self.max_prompt_tokens:
                raise Evr1Error(f"prompt {i} has {len(prompt)} tokens, over max_prompt_tokens={self.max_prompt_tokens}")
            requests.append(vllm_request(prompt, self.family, self.tokens, self.image_layout, self.video_layout, i))
        sampling = [
            self.sampling_params_cls(**sampling_kwargs(params, self.stop_ids, self.banned, request_seed(params.seed, i, params.n)))
            for i in range(len(prompts))
        ]
        self.wake()
        try:
            outputs = self.llm.generate(requests, sampling, use_tqdm=False)
        finally:
            self.sleep()
        check_prompt_tokens(outputs, prompts)
        return rollout_results(outputs, params.n, params.stop_token_ids or self.stop_ids, params.stop)

    # -- weights --------------------------------------------------------------------------
    def load_weights(self, weights: Weights) -> None:
        """Load all parameters (a state dict or `(name, tensor)` pairs, HF names) into every worker.

        The prefix and encoder caches are reset after: their entries came from the old weights.
        """
        self.wake()
        try:
            for batch in weight_batches(weights, SYNC_BATCH_BYTES, cpu=self.cpu_weights):
                self.llm.collective_rpc(_load_on_worker, args=(batch,))
            self.llm.reset_prefix_cache()
            self.llm.llm_engine.reset_encoder_cache()
        finally:
            self.sleep()
        self.version += 1

    def sync_from(self, model: Any) -> None:
        """Copy the weights of `model` (the learner's, same architecture) into the engine."""
        self.load_weights(model.state_dict())

