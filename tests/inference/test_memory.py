"""The memory a batch holds (inference/memory.py) against numbers worked out by hand from the
published configs: KV bytes per token = layers x 2 x KV heads x head size x 2 bytes (bf16)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from candlebench.inference.memory import BatchMemory, batch_memory, kv_bytes

# config.json of Qwen2.5-VL-7B-Instruct, Qwen3-VL-8B-Instruct and gemma-3-12b-it (their text models)
QWEN2_5_7B = SimpleNamespace(hidden_size=3584, num_attention_heads=28, num_key_value_heads=4, num_hidden_layers=28)
QWEN3_8B = SimpleNamespace(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, num_hidden_layers=36,
                           head_dim=128)
GEMMA3_12B = SimpleNamespace(hidden_size=3840, num_attention_heads=16, num_key_value_heads=8, num_hidden_layers=48,
                             head_dim=256, sliding_window=1024,
                             layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 8)


@pytest.mark.unit
def test_kv_bytes_per_token_match_the_hand_computed_ones():
    assert kv_bytes(QWEN2_5_7B, 1, 2) == 28 * 2 * 4 * 128 * 2 == 57_344  # 56 KiB
    assert kv_bytes(QWEN3_8B, 1, 2) == 36 * 2 * 8 * 128 * 2 == 147_456  # 144 KiB
    # 1,531 prompt + 128 new tokens: 8 global layers hold them all, 40 sliding layers their last 1,024
    assert kv_bytes(GEMMA3_12B, 1659, 2) == 8 * 8192 * 1659 + 40 * 8192 * 1024 == 444_268_544


@pytest.mark.unit
def test_a_batch_of_128_forecast_requests_of_the_7b():
    # 8.29e9 parameters in bf16; 128 requests of 1,531 + 128 tokens
    need = BatchMemory(weights=16_583_000_000, kv_per_request=kv_bytes(QWEN2_5_7B, 1659, 2), tokens=1659, batch=128)
    assert need.kv == 57_344 * 1659 * 128 == 12_177_113_088
    assert need.total == 16_583_000_000 + 12_177_113_088
    assert need.line(80 * 10**9) == ("memory at batch 128 x 1659 tokens: weights 16.6 GB + KV cache 12.2 GB "
                                     "(56 KiB a token) = 28.8 GB of the GPU's 80.0 GB, activations on top")


def test_a_loaded_models_weights_are_its_parameters_bytes():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, vocab_size=256, tie_word_embeddings=True)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    # embeddings 256x64; per layer q 64x64+64, k and v 64x32+32 each, o 64x64, MLP 3x64x128, two norms of 64; final norm
    params = 256 * 64 + 2 * (64 * 64 + 64 + 2 * (64 * 32 + 32) + 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64
    need = batch_memory(model, tokens=10, batch=3)
    assert need.weights == 2 * params
    assert need.kv == 3 * 2 * (2 * 1 * 32 * 2) * 10
