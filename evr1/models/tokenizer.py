"""An offline Qwen-style tokenizer for tiny test models: byte-level BPE trained on the fly.

It uses the Qwen2 pre-tokenisation pipeline, the Qwen chat special tokens and a chat template in
the layout of each family, so prompts look like real Qwen-VL prompts, only with a small
vocabulary. Byte-level BPE encodes any text; the training corpus only decides which strings are
short. Training is deterministic (same corpus and size, same vocabulary).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from evr1.models.families import Family

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

# The special tokens of the Qwen2/2.5/3-VL tokenizers (ids differ: ours are 0..13).
SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Added but not special: they stay in decoded text (answers are parsed from them).
TAG_TOKENS: tuple[str, ...] = ("<think>", "</think>", "<answer>", "</answer>")

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
DEFAULT_SYSTEM = "You are a helpful assistant."

_CORPUS_LINES = (
    "You are a helpful assistant.",
    "Watch the video and answer the question.",
    "Look at the image and answer the question.",
    "What colour is the square in the video? What color is the ball in the image?",
    "Which object appears first? Which direction does the dot move: left, right, up or down?",
    "How many objects are there? How many times does the light flash? Count the shapes.",
    "When does the event happen? Give the start and end time in seconds.",
    "Where is the object? Give the bounding box as [x1, y1, x2, y2].",
    "Is the statement true or false? Answer yes or no.",
    "Options: A. red B. green C. blue D. yellow E. white F. black",
    "Answer with the option's letter from the given choices directly.",
    "Think step by step inside <think> </think> tags, then give the final answer inside <answer> </answer> tags.",
    "<think>The square is red, so the answer is A.</think><answer>A</answer>",
    "<think>The dot moves to the left.</think><answer>B</answer>",
    "<answer>C</answer> <answer>D</answer> <answer>yes</answer> <answer>no</answer>",
    "The answer is 0 1 2 3 4 5 6 7 8 9 10 12 15 20 25 30 50 100.",
    "<0.5 seconds> <1.0 seconds> <1.5 seconds> <2.0 seconds> <2.5 seconds> <3.0 seconds> <4.0 seconds>",
    "circle square triangle star left right up down top bottom middle first second third last",
    "red green blue yellow orange purple pink brown grey gray white black",
    "the a an of in on at to is are was were what which who when where why how this that these those",
    "video image frame scene person object shape colour color number time start end before after",
    "0.1 0.2 0.25 0.3 0.4 0.5 0.6 0.7 0.75 0.8 0.9 1.0",
)


def chat_template(fam: Family) -> str:
    """A Jinja chat template in the Qwen layout: `<|im_start|>role\\n...<|im_end|>\\n`.

    Images and videos become `<|vision_start|><|image_pad|><|vision_end|>` (and `video_pad`); the
    processor expands each pad into one token per visual patch (per frame with timestamps for
    Qwen3-VL). Qwen2/2.5-VL add the default system message when none is given; Qwen3-VL does not.
    Qwen3.5's has the thinking switch of its checkpoints: the generation prompt opens `<think>\n`, or
    with `enable_thinking=False` (a template argument) gives an empty `<think>\n\n</think>\n\n` block.
    """
    default_system = fam in ("qwen2-vl", "qwen2.5-vl")
    system = (
        "{%- if messages[0]['role'] != 'system' -%}"
        "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' -}}"
        "{%- endif -%}"
        if default_system
        else ""
    )
    return (
        system + "{%- for message in messages -%}"
        "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
        "{%- if message['content'] is string -%}"
        "{{- message['content'] -}}"
        "{%- else -%}"
        "{%- for item in message['content'] -%}"
        "{%- if item['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
        "{%- elif item['type'] == 'video' -%}{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
        "{%- elif item['type'] == 'text' -%}{{- item['text'] -}}"
        "{%- endif -%}"
        "{%- endfor -%}"
        "{%- endif -%}"
        "{{- '<|im_end|>\\n' -}}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}" + (_THINKING_SWITCH if fam == "qwen3.5" else "")
        + "{%- endif -%}"
    )


_THINKING_SWITCH = (
    "{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\\n\\n</think>\\n\\n' -}}"
    "{%- else -%}{{- '<think>\\n' -}}{%- endif -%}"
)


def train_tokenizer(fam: Family, vocab_size: int = 512) -> PreTrainedTokenizerBase:
    """The family's tokenizer class (`Qwen2Tokenizer`; `Qwen3_5Tokenizer` for Qwen3.5, whose pre-tokenisation
    differs) with `vocab_size` entries (specials first), trained on a fixed corpus."""
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE

    if fam == "qwen3.5":
        from transformers import Qwen3_5Tokenizer as TokenizerClass
        from transformers.models.qwen3_5.tokenization_qwen3_5 import PRETOKENIZE_REGEX
    else:
        from transformers import Qwen2Tokenizer as TokenizerClass
        from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    fixed = SPECIAL_TOKENS + TAG_TOKENS
    if vocab_size < 256 + len(fixed):
        raise ValueError(f"vocab_size {vocab_size} is below the {256 + len(fixed)} byte and special tokens")
    bpe = Tokenizer(BPE())
    # The same pipeline the tokenizer class rebuilds on load, so the saved files round-trip exactly.
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(fixed),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_CORPUS_LINES, trainer)
    model = json.loads(bpe.to_str())["model"]
    tokenizer = TokenizerClass(
        vocab=model["vocab"],
        merges=[tuple(m) for m in model["merges"]],
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        unk_token=PAD_TOKEN,
        extra_special_tokens=[t for t in SPECIAL_TOKENS if t not in (EOS_TOKEN, PAD_TOKEN)],
    )
    tokenizer.add_tokens(list(TAG_TOKENS))
    tokenizer.chat_template = chat_template(fam)
    return tokenizer
