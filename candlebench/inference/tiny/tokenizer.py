"""Tiny deterministic tokenizers for the random-weight VLM fixtures.

A byte-level BPE (~500 entries) is trained with ``tokenizers`` on :data:`CORPUS` (the words of a
forecast prompt, digits, ``<score>`` tags, newlines) and wrapped in ``PreTrainedTokenizerFast`` with
the special tokens and chat template of one model family. Byte-level means every string encodes
(unknown words fall back to bytes), so any prompt the engine builds can be tokenized.

Literal newline tokens (``"\\n"``, ``"\\n\\n"``, ``"\\n\\n\\n"``, ``"\\n\\n\\n\\n"``) are added as
(non-special) added tokens for every family: vLLM's Gemma 3 processor looks them up by their literal
text in ``get_vocab()``; a byte-level vocabulary only has ``"Ċ"``.

Public API: :data:`FAMILIES`, :data:`CORPUS`, :data:`CHAT_TEMPLATES`, :func:`build_tokenizer`,
:func:`family_tokens`.
"""

from __future__ import annotations

from typing import Any

FAMILIES = ("qwen2_5_vl", "qwen3_vl", "gemma3", "gemma4", "llava", "llama", "llama3")
# "llama": a plain Llama tokenizer (no <image>, no pad, no chat template), as original LLaVA-repo
# checkpoints ship it.

#: Target size of the trained BPE vocabulary (byte alphabet + merges), before special tokens.
BPE_VOCAB_SIZE = 500

CORPUS_LINES = [
    "You are a professional financial analyst.",
    "You are a helpful assistant.",
    "The first image is the daily candlestick chart and the second image is the weekly chart.",
    "Each chart shows the last 50 candles of the stock, with the moving averages MA5 in black,",
    "MA20 in blue and MA90 in purple, and a volume panel below the price.",
    "Green candles mean the close is above the open; red candles mean the close is below the open.",
    "Red candles mean the price went up in the A-share convention.",
    "Stock code: 600519. Market: PSE. Time frame: daily. Cutoff: 2021-06-30.",
    "Stock code: 000001, 300750, JFC, ALI, BDO, SM, TEL, AC, MER, URC.",
    "Based on the charts, predict the return of the stock over the next 5 trading days",
    "and over the next 30 trading days.",
    "Give a score between 0 and 100, where 0 means a strong fall, 50 means flat and 100 means a strong rise.",
    "Answer with the score inside tags, for example <score>73</score>, then explain your reasoning.",
    "Answer with one word: up or down. The trend is up. The trend is down.",
    "Open, high, low, close, volume, amount. Date, open, high, low, close.",
    "2021-01-04, 10.25, 10.80, 10.10, 10.75, 1234500",
    "2021-01-05, 10.75, 11.20, 10.60, 11.05, 987600",
    "The price broke above the resistance level with rising volume; support held near the low.",
    "Bullish engulfing, bearish engulfing, doji, hammer, shooting star, head and shoulders.",
    "The moving average crossed; momentum is strong; the stock is overbought or oversold.",
    "Evidence: candle 12 closes above MA20; candle 40 has the highest volume.",
    "<score>0</score> <score>25</score> <score>50</score> <score>75</score> <score>100</score>",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 20 30 40 50 60 70 80 90 99 100 0.5 1.5 -2.3% +4.1%",
    "Score: 64. Reason: the trend is up and the volume is rising.",
    "USER: ASSISTANT: user assistant model system",
]

#: The fixed training corpus: several passes over the lines with newline runs of varying length.
CORPUS: str = "\n".join(
    line + "\n" * (1 + i % 3) for _ in range(3) for i, line in enumerate(CORPUS_LINES)
)

NEWLINE_TOKENS = ["\n", "\n\n", "\n\n\n", "\n\n\n\n"]

# --- chat templates -------------------------------------------------------------------------------
# Written for these fixtures, following each family's published prompt format. Content may be a
# string or a list of {"type": "image"} / {"type": "text", "text": ...} items (an item holding an
# "image"/"url"/"path" key counts as an image).

_IS_IMAGE = "item['type'] == 'image' or 'image' in item"

QWEN2_5_VL_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if " + _IS_IMAGE + " %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

GEMMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% set ns = namespace(system='') %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{% if message['content'] is string %}{% set ns.system = message['content'] + '\n\n' %}"
    "{% else %}{% set ns.system = message['content'][0]['text'] + '\n\n' %}{% endif %}"
    "{% else %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% if message['role'] == 'user' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if " + _IS_IMAGE + " %}<start_of_image>"
    "{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<end_of_turn>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

# Gemma 4 turns: "<|turn>user\n...<turn|>\n", a system turn of its own, and one "<|image|>" per
# image (both processors expand it to <|image> + soft tokens + <image|>).
GEMMA4_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if " + _IS_IMAGE + " %}<|image|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<turn|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|turn>model\n{% endif %}"
)

# LLaVA-1.5 conversation format: "USER: <image>\n<image>\nquestion ASSISTANT:" (images first).
LLAVA_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{{ message['content'][0]['text'] }}{% endif %}{{ ' ' }}"
    "{% else %}"
    "{{ message['role'].upper() }}: "
    "{% if message['content'] is string %}{{ message['content'] }} "
    "{% else %}"
    "{% for item in message['content'] %}{% if " + _IS_IMAGE + " %}<image>\n{% endif %}{% endfor %}"
    "{% for item in message['content'] %}{% if item['type'] == 'text' %}{{ item['text'] }} {% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)

CHAT_TEMPLATES = {"qwen2_5_vl": QWEN2_5_VL_TEMPLATE, "qwen3_vl": QWEN2_5_VL_TEMPLATE, "gemma3": GEMMA3_TEMPLATE, "gemma4": GEMMA4_TEMPLATE,
                  "llava": LLAVA_TEMPLATE}

# Special tokens, in id order right after the BPE vocabulary is NOT what real checkpoints do, but
# ids only need to be consistent within a fixture. Named roles are passed to the tokenizer wrapper.
_FAMILY_TOKENS: dict[str, dict[str, Any]] = {
    "qwen2_5_vl": {
        "special": [
            "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
        ],
        "roles": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        "model_specific": {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                           "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"},
        "add_bos_token": False,
        "stop": ["<|im_end|>", "<|endoftext|>"],
    },
    "gemma3": {
        "special": [
            "<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
            "<start_of_image>", "<end_of_image>", "<image_soft_token>",
        ],
        "roles": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"},
        "model_specific": {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                           "image_token": "<image_soft_token>"},
        "add_bos_token": True,
        "stop": ["<eos>", "<end_of_turn>"],
    },
    # Gemma 4: the processor also wants the audio markers to exist (it checks them even for images)
    # and adds <|video|> itself when missing.
    "gemma4": {
        "special": [
            "<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<turn|>", "<|image>", "<image|>", "<|image|>",
            "<|video|>", "<|audio>", "<audio|>", "<|audio|>",
        ],
        "roles": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"},
        "model_specific": {"boi_token": "<|image>", "eoi_token": "<image|>", "image_token": "<|image|>",
                           "boa_token": "<|audio>", "eoa_token": "<audio|>", "audio_token": "<|audio|>"},
        "add_bos_token": True,
        "stop": ["<eos>", "<turn|>"],
    },
    "llava": {
        "special": ["<unk>", "<s>", "</s>", "<pad>", "<image>"],
        "roles": {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"},
        "model_specific": {"image_token": "<image>"},
        "add_bos_token": True,
        "stop": ["</s>"],
    },
    "llama": {
        "special": ["<unk>", "<s>", "</s>"],
        "roles": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
        "model_specific": {},
        "add_bos_token": True,
        "stop": ["</s>"],
    },
    # Llama 3 (FinLLaVA's base): header tokens; the base's eos is <|end_of_text|>, chat turns end
    # with <|eot_id|>, and there is no pad token.
    "llama3": {
        "special": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        "roles": {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"},
        "model_specific": {},
        "add_bos_token": True,
        "stop": ["<|end_of_text|>"],
    },
}

# Qwen3-VL shares Qwen2.5-VL's special tokens and turn format.
_FAMILY_TOKENS["qwen3_vl"] = _FAMILY_TOKENS["qwen2_5_vl"]

def family_tokens(family: str) -> dict[str, Any]:
    """The special-token description of a family (``special`` list, named ``roles``,
    ``model_specific`` tokens, ``add_bos_token``, ``stop`` tokens)."""
    if family not in _FAMILY_TOKENS:
        raise ValueError(f"unknown tokenizer family {family!r}; expected one of {FAMILIES}")
    return _FAMILY_TOKENS[family]


def _train_bpe(special: list[str]):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE + len(special),
        min_frequency=1,
        special_tokens=list(special),  # ids 0..len(special)-1, in this order
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([CORPUS], trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in NEWLINE_TOKENS])
    return tok


def build_tokenizer(family: str):
    """A ``PreTrainedTokenizerFast`` for ``family`` (one of :data:`FAMILIES`), with its special
    tokens, ``chat_template`` and (for Gemma 3 / LLaVA) a BOS-adding post-processor. Deterministic:
    the same family always gives the same vocabulary and ids."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    spec = family_tokens(family)
    backend = _train_bpe(spec["special"])
    bos = spec["roles"].get("bos_token")
    if spec["add_bos_token"]:
        bos_id = backend.token_to_id(bos)
        backend.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, bos_id)]),
        ])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        chat_template=CHAT_TEMPLATES.get(family),
        model_max_length=4096,
        padding_side="left",
        clean_up_tokenization_spaces=False,
        extra_special_tokens=dict(spec["model_specific"]) or None,
        **spec["roles"],
    )
    return tokenizer
