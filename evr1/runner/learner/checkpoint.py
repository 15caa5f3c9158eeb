"""The learner's side of checkpoints: model, optimizer and scheduler state in a directory; HF export.

Every directory is written atomically: into a temporary sibling first, renamed into place only
when complete, so a crash (even `kill -9`) leaves either the previous version or the new one,
never a half-written directory. Tensors are stored with `torch.save` and read back with
`weights_only=True` (no arbitrary pickles are executed on load).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from evr1.errors import Evr1Error

MODEL_FILE = "model.pt"
OPTIMIZER_FILE = "optimizer.pt"
META_FILE = "learner.json"


@contextmanager
def atomic_directory(target: str | Path) -> Iterator[Path]:
    """Yield a temporary directory that replaces `target` when the block ends without error."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
        old = target.with_name(f".{target.name}.old")
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save_state(
    directory: str | Path,
    model_state: Mapping[str, torch.Tensor],
    optimizer_state: Mapping[str, Any],
    meta: Mapping[str, Any],
) -> None:
    """Write the model and optimizer/scheduler state and JSON metadata into `directory` (atomically)."""
    with atomic_directory(directory) as tmp:
        torch.save({k: v.detach().cpu() for k, v in model_state.items()}, tmp / MODEL_FILE)
        torch.save(dict(optimizer_state), tmp / OPTIMIZER_FILE)
        (tmp / META_FILE).write_text(json.dumps(dict(meta), indent=2, sort_keys=True))


def load_state(directory: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any], dict[str, Any]]:
    """The model state, optimizer/scheduler state and metadata saved by `save_state`."""
    directory = Path(directory)
    missing = [name for name in (MODEL_FILE, OPTIMIZER_FILE, META_FILE) if not (directory / name).is_file()]
    if missing:
        raise Evr1Error(f"{directory} is not a learner checkpoint (missing {', '.join(missing)})")
    model_state = torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True)
    optimizer_state = torch.load(directory / OPTIMIZER_FILE, map_location="cpu", weights_only=True)
    meta = json.loads((directory / META_FILE).read_text())
    return model_state, optimizer_state, meta


def export_hf(
    model: Any,
    processor: Any,
    directory: str | Path,
    state_dict: Mapping[str, torch.Tensor] | None = None,
    adapter_state: Mapping[str, torch.Tensor] | None = None,
) -> Path:
    """Save `model` (with `state_dict` if given: gathered from shards, or LoRA-merged) and `processor` as an HF dir.

    The result loads with `AutoModelForImageTextToText.from_pretrained` and `AutoProcessor.from_pretrained`.
    `adapter_state`: a LoRA model's state dict, whose adapters are also written in peft's format
    into the `lora_adapter/` folder (`evr1.models.lora.save_adapter`, against the base model
    `model` was loaded from).
    """
    directory = Path(directory)
    with atomic_directory(directory) as tmp:
        model.save_pretrained(tmp, state_dict=dict(state_dict) if state_dict is not None else None)
        processor.save_pretrained(tmp)
        if adapter_state is not None:
            from evr1.models.lora import ADAPTER_DIR, save_adapter

            save_adapter(tmp / ADAPTER_DIR, model, adapter_state, base=model.name_or_path)
    return directory
