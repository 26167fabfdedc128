"""One chat-formatted prompt string per request, built by the checkpoint's own chat template.

Both backends use this string, so a difference between them is a difference of the engines, never
of the prompt.
"""

from __future__ import annotations

from typing import Any


def chat_text(processor: Any, prompt: str, n_images: int) -> str:
    content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": prompt}]
    messages = [{"role": "user", "content": content}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def needs_special_tokens(processor: Any, text: str) -> bool:
    """Whether tokenizing ``text`` should add BOS: not when the chat template already wrote it
    (Gemma 3, LLaVA), else the prompt starts with two. transformers' own rule; vLLM is told the same."""
    bos = processor.tokenizer.bos_token
    return not (bos is not None and text.startswith(bos))


def strip_after_eos(token_ids: list[int], stop_ids: set[int]) -> tuple[int, ...]:
    """Generated ids up to (not including) the first end-of-sequence or padding id."""
    for i, token in enumerate(token_ids):
        if token in stop_ids:
            return tuple(token_ids[:i])
    return tuple(token_ids)
