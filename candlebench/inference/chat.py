"""One chat-formatted prompt string per request, built by the checkpoint's own chat template.

Both backends use this string, so a difference between them is a difference of the engines, never
of the prompt.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from jinja2 import Environment, meta

from candlebench.core.errors import UserError

# A reasoning block of a few hundred tokens is cut short; thinking models need thousands.
THINKING_BUDGET = 1024


class ThinkingUndecided(UserError, ValueError):
    pass


# Where the images go in the user turn. images_first is the protocol every published prompt here
# uses; text_first puts the task text before them, so that a prefix cache (vLLM) shares the whole
# instruction across samples instead of only the system preamble (~22% fewer prefill tokens for
# the forecast prompt). It changes what the model reads, so it is a labelled variant in the run key.
LAYOUTS = ("images_first", "text_first")


def chat_text(processor: Any, prompt: str, n_images: int, template_kwargs: Mapping[str, Any] | None = None,
              layout: str = "images_first") -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"infer.prompt_layout={layout}: one of {list(LAYOUTS)}")
    images = [{"type": "image"} for _ in range(n_images)]
    text = [{"type": "text", "text": prompt}]
    content = images + text if layout == "images_first" else text + images
    messages = [{"role": "user", "content": content}]
    return processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, **dict(template_kwargs or {})
    )


_OPENS_REASONING = re.compile(r"<\s*(?:think|thinking|reasoning)\s*>\s*$", re.I)


def reasoning_opener(processor: Any, template_kwargs: Mapping[str, Any] | None = None) -> str:
    """The reasoning block's opening tag (with the whitespace after it) when the chat template writes
    it at the end of the generation prompt, else "". Qwen3-VL-Thinking's template does, with no
    switch: the model's text then starts inside the block and holds no ``<think>`` of its own, so
    the backends record it with this opener in front, and every task's parser sees the block (and
    flags a budget cut as an unclosed one) as it would on a model that writes the tag itself."""
    found = _OPENS_REASONING.search(chat_text(processor, "?", 0, template_kwargs))
    return found.group(0) if found else ""


def reasoning_in_text(answer: str | None, reasoning: str | None = None, opened: bool = False,
                      closed: bool = True) -> str | None:
    """The text as the in-process backends record it (the reasoning block inside it), from what a
    server or another harness hands over apart: ``reasoning`` returned on its own (a server's
    ``reasoning_content``) goes back into a block, closed before ``answer`` unless ``closed`` is
    False (the budget ran out inside it); ``opened``, without it: the chat template opened the
    block in the prompt, so ``answer`` starts inside it, as :func:`reasoning_opener` records. Every
    task's parser then flags a reasoning cut by the budget as it does in process."""
    if reasoning:
        return f"<think>\n{reasoning}" + (f"</think>\n{answer or ''}" if closed else "")
    if opened:
        return f"<think>\n{answer or ''}"
    return answer


def check_thinking(processor: Any, name: str, template_kwargs: Mapping[str, Any], max_new_tokens: int) -> None:
    """A chat template with a thinking switch (Qwen3 style ``enable_thinking``) must be told which way
    to go, in the model config and so in the run key: left to its default, a thinking model spends a
    short budget inside ``<think>`` and never answers. Thinking on, or a template that opens the
    reasoning block itself, needs a budget that fits it."""
    if reasoning_opener(processor, template_kwargs) and max_new_tokens < THINKING_BUDGET:
        raise ThinkingUndecided(
            f"model {name}: its chat template opens a reasoning block in the prompt, and max_new_tokens={max_new_tokens} "
            f"would cut it; give it at least {THINKING_BUDGET} (model.max_new_tokens, or infer.generation.max_new_tokens)"
        )
    # Probed only where the template reads the switch: rendered with a variable it does not read,
    # transformers takes it for a processor argument and warns ("Kwargs passed to processor.__call__")
    # once per job.
    if "enable_thinking" not in template_variables(processor):
        return
    default = chat_text(processor, "?", 0)
    off = chat_text(processor, "?", 0, {"enable_thinking": False})
    if default == off:
        return  # no switch in this template
    if "enable_thinking" not in template_kwargs:
        raise ThinkingUndecided(
            f"model {name}: its chat template thinks unless told otherwise; set "
            "model.chat_template_kwargs.enable_thinking=false (answer directly), or =true with "
            f"model.max_new_tokens of at least {THINKING_BUDGET} (a reasoning block first)"
        )
    if template_kwargs["enable_thinking"] and max_new_tokens < THINKING_BUDGET:
        raise ThinkingUndecided(
            f"model {name}: thinking is on but max_new_tokens={max_new_tokens} would cut the reasoning block; "
            f"give it at least {THINKING_BUDGET} (model.max_new_tokens, or infer.generation.max_new_tokens)"
        )


def template_variables(processor: Any) -> set[str]:
    """The variables the processor's chat template reads (its default one, where it has several)."""
    template = processor.chat_template
    if isinstance(template, dict):
        template = template.get("default") or next(iter(template.values()), "")
    return meta.find_undeclared_variables(Environment().parse(template or ""))


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
