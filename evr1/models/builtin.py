"""Built-in `models`: one tiny random-init model per family (and MoE variant), for tests and the CPU quickstart.

Each entry is a `TinyModel`; `evr1.models.load_model(ModelSpec(name=...))` builds its HF
directory once under the spec's cache dir and loads it like any checkpoint.
"""

from __future__ import annotations

from evr1.models.tiny import TinyModel
from evr1.registry import MODELS

for _family in ("qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5"):
    _name = f"tiny-{_family}"
    MODELS.register(_name, TinyModel(name=_name, family=_family))
for _family in ("qwen3-vl", "qwen3.5"):  # the mixture-of-experts variants
    _name = f"tiny-{_family}-moe"
    MODELS.register(_name, TinyModel(name=_name, family=_family, moe=True))
