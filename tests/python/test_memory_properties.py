"""Property tests of the memory model over seeded random scenarios: memory never shrinks when the
load or a format grows, and sharded parts divide by their group size."""
import random

import pytest

import capplan

MODELS = ["Llama-3.1-8B", "Llama-3.1-70B", "Mixtral-8x7B", "Qwen3-30B-A3B", "DeepSeek-V3", "Gemma-2-9B",
          "Mistral-7B", "Phi-3-mini", "Qwen2.5-7B", "GPT-3-175B"]
RNG = random.Random(20261130)


def _inference(model, tp, batch, ctx, kv="bf16", weights="bf16"):
    return capplan.estimate({
        "model": model, "system": {"preset": "HGX-H200"}, "parallelism": {"tp": tp},
        "precision": {"weights": weights, "kv_cache": kv, "compute": "bf16"},
        "inference": {"input_tokens": ctx, "output_tokens": 1, "batch": batch}}).memory


def _training(model, **training):
    par = training.pop("parallelism", {"tp": 8})
    return capplan.estimate({
        "model": model, "system": {"preset": "DGX-H100", "count": 64}, "parallelism": par,
        "training": {"seq_len": 4096, "global_batch": 256, **training}}).memory


@pytest.mark.parametrize("seed", range(12))
def test_inference_memory_monotone(seed):
    rng = random.Random(seed)
    model = rng.choice(MODELS)
    tp = rng.choice([1, 2, 4, 8]) if model != "Phi-3-mini" else rng.choice([1, 2, 4])
    batch, ctx = rng.randint(1, 64), rng.randint(1, 16384)
    base = _inference(model, tp, batch, ctx).per_device_bytes
    assert _inference(model, tp, batch + rng.randint(1, 64), ctx).per_device_bytes >= base
    assert _inference(model, tp, batch, ctx + rng.randint(1, 8192)).per_device_bytes >= base
    assert _inference(model, tp, batch, ctx, kv="fp8").per_device_bytes <= base
    assert _inference(model, tp, batch, ctx, kv="fp32").per_device_bytes >= base
    assert _inference(model, tp, batch, ctx, weights="int4").weights_bytes < _inference(model, tp, batch, ctx).weights_bytes


@pytest.mark.parametrize("model", MODELS[:5])
def test_weights_divide_by_tp(model):
    w1 = _inference(model, 1, 1, 16).weights_bytes.si
    for tp in (2, 4, 8):
        wt = _inference(model, tp, 1, 16).weights_bytes.si
        # replicated norms/routers (and MLA down-projections) make it a little more than w1 / tp
        assert w1 / tp <= wt <= w1 / tp * 1.12, (model, tp)


@pytest.mark.parametrize("seed", range(6))
def test_training_memory_monotone_and_sharded(seed):
    rng = random.Random(100 + seed)
    model = rng.choice(["Llama-3.1-8B", "Llama-3.1-70B", "Mixtral-8x7B", "GPT-3-175B"])
    recompute = rng.choice(["none", "selective", "full"])
    base = _training(model, micro_batch=1, recompute=recompute)
    assert _training(model, micro_batch=2, recompute=recompute).per_device_bytes >= base.per_device_bytes
    longer = capplan.estimate({"model": model, "system": {"preset": "DGX-H100", "count": 64}, "parallelism": {"tp": 8},
                               "training": {"seq_len": 8192, "global_batch": 256, "recompute": recompute}}).memory
    assert longer.per_device_bytes >= base.per_device_bytes
    # ZeRO stages: optimizer states / dp at stage 1, gradients too at 2, weights too at 3 (dp = 64 / 8 = 8)
    z = [_training(model, zero=k, recompute=recompute) for k in range(4)]
    assert z[1].optimizer_bytes.si == pytest.approx(z[0].optimizer_bytes.si / 8)
    assert z[2].gradients_bytes.si == pytest.approx(z[1].gradients_bytes.si / 8)
    assert z[3].weights_bytes.si == pytest.approx(z[2].weights_bytes.si / 8)
    assert z[0].per_device_bytes >= z[1].per_device_bytes >= z[2].per_device_bytes
    # full recomputation never needs more activation memory than none
    full = _training(model, recompute="full")
    none = _training(model, recompute="none")
    assert full.activations_bytes <= none.activations_bytes


def test_zero_paper_16_bytes_per_parameter():
    # ZeRO (Rajbhandari et al. 2020, §3.1): mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per parameter.
    m = capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM"},
                          "training": {"seq_len": 16, "global_batch": 1}}).memory
    states = (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.master_weights_bytes).si
    assert states == pytest.approx(16 * 8_030_261_248)
