"""Built-in `engines`: `hf` (transformers, CPU or GPU) and `vllm` (GPU; vLLM is imported only when
an engine starts). Each entry has `from_spec(model, rollout, device=)`."""

from __future__ import annotations

from evr1.engines.hf import HFEngine
from evr1.engines.vllm import VLLMEngine
from evr1.registry import ENGINES

ENGINES.register("hf", HFEngine)
ENGINES.register("vllm", VLLMEngine)
