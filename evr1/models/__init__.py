"""Qwen-VL models: loading from a `ModelSpec`, families, tiny test models, prompts.

Importing this package is cheap (no torch); `evr1.models.forward` needs torch.
"""

from evr1.models.families import FAMILIES, Family, alignment, family
from evr1.models.loading import load_model, load_processor, model_path
from evr1.models.prompts import Prompt, build_prompt, chat_messages
from evr1.models.tiny import TinyModel

__all__ = [
    "FAMILIES",
    "Family",
    "Prompt",
    "TinyModel",
    "alignment",
    "build_prompt",
    "chat_messages",
    "family",
    "load_model",
    "load_processor",
    "model_path",
]
