"""Tiny random-init Qwen-VL models (about half a million parameters) saved as normal HF directories.

A `TinyModel` describes one: family, small text and vision configs, vocabulary size and seed.
`materialize(cache_dir)` builds it once (model, tokenizer, image and video processors, chat
template) into `<cache_dir>/<name>-<hash>` and returns that directory, which every part then
loads with `from_pretrained` like any checkpoint. The hash covers everything that shapes the
files, so a changed config never reuses a stale directory; a file lock makes concurrent builders
(several workers on one machine) wait for the first.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evr1.models.families import PATCH_SIZE, SPATIAL_MERGE, Family, alignment, media_family
from evr1.models.tokenizer import EOS_TOKEN, PAD_TOKEN, train_tokenizer

FORMAT_VERSION = 1  # bump when the way directories are written changes
DONE_MARKER = ".evr1-complete"


def _layer_types(layers: int) -> list[str]:
    """Qwen3.5's hybrid pattern: every 4th layer full attention, the others Gated DeltaNet; the last layer is
    always full attention, so even a 2-layer model has one of each."""
    return ["full_attention" if (i + 1) % 4 == 0 or i == layers - 1 else "linear_attention" for i in range(layers)]


def _text_config(fam: Family, hidden: int, layers: int, heads: int, mlp_ratio: int, moe: bool) -> dict[str, Any]:
    head_dim = hidden // heads
    # Qwen3.5 rotates a quarter of each head in full size; here half, so the three M-RoPE sections are non-empty.
    rotary = head_dim // 2 if fam == "qwen3.5" else head_dim
    # mrope splits the rotary/2 frequencies between time, height and width.
    quarter = rotary // 8
    rope: dict[str, Any] = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": [rotary // 2 - 2 * quarter, quarter, quarter],
    }
    if fam in ("qwen3-vl", "qwen3.5"):
        rope["mrope_interleaved"] = True
    config: dict[str, Any] = {
        "hidden_size": hidden,
        "intermediate_size": mlp_ratio * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": max(1, heads // 2),
        "max_position_embeddings": 8192,
        "rope_parameters": rope,
    }
    if fam in ("qwen3-vl", "qwen3.5"):
        config["head_dim"] = head_dim
    if fam == "qwen3.5":
        rope["partial_rotary_factor"] = 0.5
        config |= {
            "layer_types": _layer_types(layers),
            "linear_num_key_heads": max(1, heads // 2),
            "linear_num_value_heads": heads,
            "linear_key_head_dim": head_dim,
            "linear_value_head_dim": head_dim,
            "linear_conv_kernel_dim": 4,
        }
    if moe:
        config |= {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": hidden // 2}
        if fam == "qwen3.5":
            config["shared_expert_intermediate_size"] = hidden // 2
    return config


def _vision_config(fam: Family, width: int, depth: int, out: int, mlp_ratio: int) -> dict[str, Any]:
    common = {"depth": depth, "num_heads": 2, "patch_size": PATCH_SIZE[fam], "spatial_merge_size": SPATIAL_MERGE}
    if fam == "qwen2-vl":
        return common | {"embed_dim": width, "hidden_size": out, "mlp_ratio": mlp_ratio}
    if fam == "qwen2.5-vl":
        return common | {
            "hidden_size": width,
            "intermediate_size": mlp_ratio * width,
            "out_hidden_size": out,
            "window_size": 4 * alignment(fam),
            "fullatt_block_indexes": [depth - 1],
            "tokens_per_second": 2,
        }
    vision = common | {
        "hidden_size": width,
        "intermediate_size": mlp_ratio * width,
        "out_hidden_size": out,
        "num_position_embeddings": 256,
    }
    return vision if fam == "qwen3.5" else vision | {"deepstack_visual_indexes": [0]}  # Qwen3.5 has no deepstack


@dataclass(frozen=True)
class TinyModel:
    """A random-init Qwen-VL model (about 0.5M parameters) that trains on a laptop CPU in seconds.

    `moe`: the family's mixture-of-experts variant (Qwen3-VL-MoE, Qwen3.5-MoE: 4 experts, 2 per token).
    """

    name: str
    family: Family
    moe: bool = False
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    mlp_ratio: int = 4
    vision_width: int = 64
    vision_depth: int = 2
    vocab_size: int = 512
    seed: int = 0
    # Pixel budgets written into the processors (callers usually pass their own per call).
    min_patches: int = 4
    max_patches: int = 64
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """What `evr1 list models` says of the model."""
        names = {"qwen2-vl": "Qwen2-VL", "qwen2.5-vl": "Qwen2.5-VL", "qwen3-vl": "Qwen3-VL", "qwen3.5": "Qwen3.5"}
        kind = names[self.family] + (" MoE" if self.moe else "")
        hybrid = ", Gated DeltaNet + full attention" if self.family == "qwen3.5" else ""
        return f"A random-init {kind} ({self.layers} layers of width {self.hidden}{hybrid}) for tests and the CPU quickstart."

    def key(self) -> str:
        """A short hash of everything that shapes the saved files."""
        import tokenizers
        import transformers

        blob = json.dumps(
            [asdict(self), FORMAT_VERSION, transformers.__version__, tokenizers.__version__], sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def directory(self, cache_dir: str | Path) -> Path:
        return Path(cache_dir).expanduser() / f"{self.name}-{self.key()}"

    def materialize(self, cache_dir: str | Path) -> Path:
        """The model's HF directory under `cache_dir`, built on first use."""
        from filelock import FileLock

        target = self.directory(cache_dir)
        if (target / DONE_MARKER).exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            if (target / DONE_MARKER).exists():
                return target
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                self.save(tmp)
                (tmp / DONE_MARKER).write_text(json.dumps(asdict(self), sort_keys=True))
                if target.exists():  # an interrupted earlier build
                    shutil.rmtree(target)
                tmp.rename(target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return target

    def save(self, path: Path) -> None:
        """Build the tokenizer, processor and random-init model and save them into `path`."""
        import torch
        from transformers import GenerationConfig

        tokenizer = train_tokenizer(self.family, self.vocab_size)
        processor = self._processor(tokenizer)
        config = self._config(tokenizer)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = _model_class(self.family, self.moe)(config)
        model.generation_config = GenerationConfig(
            eos_token_id=[tokenizer.convert_tokens_to_ids(EOS_TOKEN), tokenizer.convert_tokens_to_ids(PAD_TOKEN)],
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=None,
        )
        model.save_pretrained(path)
        processor.save_pretrained(path)

    def _config(self, tokenizer: Any) -> Any:
        ids = tokenizer.convert_tokens_to_ids
        text = _text_config(self.family, self.hidden, self.layers, self.heads, self.mlp_ratio, self.moe) | {
            "vocab_size": len(tokenizer),
            "bos_token_id": None,
            "eos_token_id": ids(EOS_TOKEN),
            "pad_token_id": tokenizer.pad_token_id,
        }
        vision = _vision_config(self.family, self.vision_width, self.vision_depth, self.hidden, self.mlp_ratio)
        return _config_class(self.family, self.moe)(
            text_config=text | self.extra.get("text", {}),
            vision_config=vision | self.extra.get("vision", {}),
            image_token_id=ids("<|image_pad|>"),
            video_token_id=ids("<|video_pad|>"),
            vision_start_token_id=ids("<|vision_start|>"),
            vision_end_token_id=ids("<|vision_end|>"),
            tie_word_embeddings=False,
        )

    def _processor(self, tokenizer: Any) -> Any:
        from transformers import Qwen2VLImageProcessor

        unit = alignment(self.family) ** 2
        size = {"shortest_edge": self.min_patches * unit, "longest_edge": self.max_patches * unit}
        vision = {"patch_size": PATCH_SIZE[self.family], "merge_size": SPATIAL_MERGE, "temporal_patch_size": 2}
        if media_family(self.family) == "qwen3-vl":  # Qwen3.5 ships Qwen3-VL's processors
            from transformers import Qwen3VLProcessor, Qwen3VLVideoProcessor

            half = {"image_mean": [0.5] * 3, "image_std": [0.5] * 3}
            image = Qwen2VLImageProcessor(size=size, **vision, **half)
            video = Qwen3VLVideoProcessor(
                size=size, **vision, **half, do_sample_frames=False, cap_pixels_per_frame=False
            )
            return Qwen3VLProcessor(image_processor=image, video_processor=video, tokenizer=tokenizer,
                                    chat_template=tokenizer.chat_template)
        from transformers import Qwen2_5_VLProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

        image = Qwen2VLImageProcessor(size=size, **vision)
        video = Qwen2VLVideoProcessor(size=size, **vision, cap_pixels_per_frame=False)
        cls = Qwen2VLProcessor if self.family == "qwen2-vl" else Qwen2_5_VLProcessor
        return cls(image_processor=image, video_processor=video, tokenizer=tokenizer,
                   chat_template=tokenizer.chat_template)


def _classes(fam: Family, moe: bool) -> tuple[str, str]:
    """The names of the HF config and model classes of a family (or its MoE variant)."""
    if moe and fam not in ("qwen3-vl", "qwen3.5"):
        raise ValueError(f"{fam} has no mixture-of-experts variant")
    stem = {"qwen2-vl": "Qwen2VL", "qwen2.5-vl": "Qwen2_5_VL", "qwen3-vl": "Qwen3VL", "qwen3.5": "Qwen3_5"}[fam]
    stem += "Moe" if moe else ""
    return f"{stem}Config", f"{stem}ForConditionalGeneration"


def _config_class(fam: Family, moe: bool = False) -> Any:
    import transformers

    return getattr(transformers, _classes(fam, moe)[0])


def _model_class(fam: Family, moe: bool = False) -> Any:
    import transformers

    return getattr(transformers, _classes(fam, moe)[1])
