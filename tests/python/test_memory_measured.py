"""Inference memory against published vLLM measurements (tests/data/published_memory.json).

Each row is a vLLM V1 start-up log on H100 (llm-d/llm-d-benchmark, config_explorer/
empirical-vllm-memory-results.md @4f4d449): the driver-visible memory (79.18 GiB), utilisation 0.9,
the weights, the profiled activation peak, non-torch memory and the KV cache vLLM allocated.
capplan must agree within 3% on the weights, on everything that is not the cache, and on the cache
itself where the cache is a large share of memory (where it is a small remainder, 3% of the rest is
many percent of it). The sampler factor was fitted on the Llama-3.1-8B row only; the others check it.
"""
import json
from pathlib import Path

import pytest

import capplan

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "published_memory.json").read_text())
ROWS = {r["id"]: r for r in DATA["kv_cache_capacity_measurements"]}

CASES = [  # id, catalog model, tp, weights format, weights GiB key
    ("llmd-llama31-8b-h100-v1", "Llama-3.1-8B", 1, "bf16", "weights_gib"),
    ("llmd-qwen3-32b-h100-tp1", "Qwen3-32B", 1, "bf16", "weights_gib"),
    ("llmd-qwen3-32b-h100-tp2", "Qwen3-32B", 2, "bf16", "weights_gib_per_gpu"),
    ("llmd-llama33-70b-fp8-h100-tp2", "Llama-3.1-70B", 2, "fp8", "weights_gib_per_gpu"),
]


def _kv_reported(rep):
    return rep.get("available_kv_cache_gib", rep.get("available_kv_cache_gib_per_gpu"))


@pytest.mark.parametrize("row_id,model,tp,fmt,wkey", CASES, ids=[c[0] for c in CASES])
def test_vllm_h100_memory(row_id, model, tp, fmt, wkey):
    row = ROWS[row_id]
    rep = row["reported"]
    accel = {"name": "H100-visible", "vendor": "NVIDIA",
             "memory": {"capacity": "79.18 GiB", "bandwidth": "3.35 TB/s"},  # vLLM's total_gpu_memory in the log
             "peak_dense_flops": {"bf16": "989.5 TFLOP/s", "fp8": "1979 TFLOP/s"}}
    r = capplan.estimate({
        "model": model, "system": {"accelerator": accel, "count": tp}, "parallelism": {"tp": tp},
        "precision": {"weights": fmt, "compute": "bf16"},
        # the runs: vLLM OpenAI server on H100: 8192 batched tokens, 1024 sequences, 128-token blocks
        "inference": {"input_tokens": 1000, "output_tokens": 1, "batch": 1, "memory_utilization": 0.9,
                      "prefill_chunk_tokens": 8192, "max_num_seqs": 1024, "kv_block_tokens": 128}})
    m = r.memory
    gib = capplan.Quantity("1 GiB").si
    weights = m.weights_bytes.si / gib
    not_cache = (m.weights_bytes + m.activations_bytes + m.logits_bytes + m.overhead_bytes).si / gib
    kv_free = m.usable_bytes.si / gib - not_cache
    measured_not_cache = rep[wkey] + rep["activation_peak_gib"] + rep["non_torch_gib"]
    assert weights == pytest.approx(rep[wkey], rel=0.03), row["source"]
    assert not_cache == pytest.approx(measured_not_cache, rel=0.03), row["source"]
    if _kv_reported(rep) > 0.3 * 79.18 * 0.9:
        assert kv_free == pytest.approx(_kv_reported(rep), rel=0.03), row["source"]


def test_published_kv_bytes_per_token():
    # DeepSeek ISCA'25 paper Table 1 (see published_memory.json): 70.272 KB, 327.680 KB, 516.096 KB per token.
    for model, kb in (("DeepSeek-V3", 70.272), ("Qwen2.5-72B", 327.680), ("Llama-3.1-405B", 516.096)):
        r = capplan.estimate({"model": model, "system": {"accelerator": "H200"},
                              "inference": {"input_tokens": 10, "output_tokens": 1, "batch": 1}})
        assert r.memory.kv_cache_bytes_per_token.si == pytest.approx(kb * 1000), model
