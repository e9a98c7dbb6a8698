"""Inference speed against published measurements (tests/data/published_inference.json, each row
cited there) and its invariants.

Fitted rows (the efficiency defaults in src/inference_perf.cpp were derived from them) are marked
'fit'; the others check. Tolerances: 20% at batch 1, 25% under concurrency (the issue's targets).
"""
import functools
import json
import pathlib

import pytest

import capplan
from published_support import ms as _ms, nccl_allreduce as _nccl, poisson_70b as _poisson_70b, run_published as _run
from published_support import saturated_published


_PUBLISHED = json.loads((pathlib.Path(__file__).parents[1] / "data" / "published_inference.json").read_text())


# What a published row's "checked" list may name: the simulation's value, and the row's field (whose
# recorded statistic must be the one compared).
_METRICS = {
    "ttft_median": (lambda i: _ms(i.ttft_s), "ttft_ms", "median"),
    "ttft_mean": (lambda i: _ms(i.ttft_mean_s), "ttft_ms", "mean"),
    "tpot_mean": (lambda i: _ms(i.tpot_mean_s), "tpot_ms", "mean"),
    "itl_median": (lambda i: _ms(i.itl_s), "itl_ms", "median"),
    "e2e_mean": (lambda i: _ms(i.e2e_mean_s), "e2e_ms", "mean"),
    "throughput": (lambda i: float(i.throughput_tokens_per_s), "throughput_tokens_per_s", None),
}


# Known gap (docs/formulas.md section 11b), pinned where it shows: decode at tp > 1 and small batches under
# an engine's own all-reduce kernel comes out 15-40% fast. NCCL's 20-25 us per all-reduce used to hide the
# launch gaps between a CUDA graph's kernels and low-occupancy kernels, which capplan does not cost; the
# rows below fell outside their tolerance when the engines' kernels (about 6 us) replaced NCCL's time.
DECODE_GAP = (-0.40, -0.15)
DECODE_GAP_ROWS = {("InferenceX", 4, "tpot_mean"), ("poisson", 4, "itl_median"), ("poisson", 4, "e2e_mean"), ("NIM", 500, "tpot")}


def _in_gap(modelled, published):
    lo, hi = DECODE_GAP
    return lo <= modelled / published - 1 <= hi


def _assert_checked_within_25_percent(inference, row, gap=()):
    assert row["checked"], "a row without checks is documentation, not a test"
    for name in row["checked"]:
        modelled, field, stat = _METRICS[name]
        assert stat is None or row[field]["stat"].startswith(stat), (name, row[field]["stat"])
        if name in gap:
            assert _in_gap(modelled(inference), row[field]["value"]), name
            continue
        assert modelled(inference) == pytest.approx(row[field]["value"], rel=0.25), name


def _checked(**match):
    return [m for m in _PUBLISHED["latency_measurements"]
            if m.get("checked") and all(m.get(k) == v for k, v in match.items())]


# TPOT at batch 1. gpt-fast (pytorch-labs/gpt-fast README, A100-80GB, tokens/s at batch 1 -> ms per token);
# NIM 1.8.0 (Llama-3.3-70B, same shapes as 3.1-70B, fp8, H100 TP2, ITL = (e2e - TTFT)/(out - 1)).
TPOT_BATCH1 = [
    ("gpt-fast Llama-2-7B bf16 A100 tp1", "Llama-2-7B", "A100-80GB-SXM", 1, "bf16", 5, 200, 9.53),
    ("gpt-fast Llama-2-7B bf16 A100 tp2", "Llama-2-7B", "A100-80GB-SXM", 2, "bf16", 5, 200, 5.92),
    ("gpt-fast Llama-2-7B int8 weight-only A100", "Llama-2-7B", "A100-80GB-SXM", 1, "int8", 5, 200, 6.43),
    ("gpt-fast Llama-2-7B bf16 A100 tp8", "Llama-2-7B", "A100-80GB-SXM", 8, "bf16", 5, 200, 3.04),
    ("gpt-fast Llama-2-70B bf16 A100 tp2", "Llama-2-70B", "A100-80GB-SXM", 2, "bf16", 5, 200, 46.9),
    ("gpt-fast Llama-2-70B bf16 A100 tp4", "Llama-2-70B", "A100-80GB-SXM", 4, "bf16", 5, 200, 26.31),
    ("gpt-fast Llama-2-70B bf16 A100 tp8", "Llama-2-70B", "A100-80GB-SXM", 8, "bf16", 5, 200, 16.0),
    ("gpt-fast Mixtral-8x7B bf16 A100 tp2 (MoE)", "Mixtral-8x7B", "A100-80GB-SXM", 2, "bf16", 5, 200, 10.34),
    ("gpt-fast Mixtral-8x7B bf16 A100 tp8 (MoE)", "Mixtral-8x7B", "A100-80GB-SXM", 8, "bf16", 5, 200, 4.39),
    ("NIM Llama-3.1-70B fp8 H100 tp2 5000/500", "Llama-3.1-70B", "H100-SXM", 2, "fp8", 5000, 500, 18.58),
    ("NIM Llama-3.1-70B fp8 H100 tp2 500/2000", "Llama-3.1-70B", "H100-SXM", 2, "fp8", 500, 2000, 18.91),
]


@pytest.mark.parametrize("label,model,accel,tp,w,inp,out,tpot", TPOT_BATCH1, ids=[r[0] for r in TPOT_BATCH1])
def test_tpot_batch1_within_20_percent(label, model, accel, tp, w, inp, out, tpot):
    modelled = _ms(_run(model, accel, tp, w, inp, out, nccl=_nccl(label)).inference.tpot_s)
    if ("NIM", inp, "tpot") in DECODE_GAP_ROWS:
        assert _in_gap(modelled, tpot), label
        return
    assert modelled == pytest.approx(tpot, rel=0.20), label


# TTFT at batch 1: TensorRT-LLM v0.5 and v0.9.0 performance tables (gptSessionBenchmark, output 1
# token, FP8 engines with an FP8 KV cache on H100/H200/L40S, FP16 on A100) and NIM 1.8.0. Fits: the
# A100 16-bit GEMM efficiency (v0.5 Llama-2-7B 2048), the H100 FP8 one (jointly with training; v0.9
# 2048-token rows) and the 2.4 ms prefill-step overhead (median over the v0.9 Hopper 128-token rows).
# The A100's compute/memory 2-norm near the ridge was fitted to cuBLAS GEMM times (catalog), not to
# these rows; without it the A100 128-token rows were 22-26% low. MoE prefill: the expert GEMMs run at
# the catalog's grouped-kernel efficiency (H100/H200 from published fused-MoE kernel times, not from
# these rows); without it the Mixtral FP8 2048-token rows were 56-58% low. Known gap (docs/formulas.md
# section 14): Mixtral fp16 A100 128 tokens.
TTFT_BATCH1 = [
    ("TRT-LLM v0.5 Llama-2-7B fp16 A100 2048 (fit)", "Llama-2-7B", "A100-80GB-SXM", 1, "fp16", 2048, 2, 133),
    ("TRT-LLM v0.5 Llama-2-70B fp16 A100 tp4 2048", "Llama-2-70B", "A100-80GB-SXM", 4, "fp16", 2048, 2, 377),
    ("TRT-LLM v0.5 Llama-2-7B fp16 A100 128", "Llama-2-7B", "A100-80GB-SXM", 1, "fp16", 128, 2, 16),
    ("TRT-LLM v0.5 Llama-2-70B fp16 A100 tp4 128", "Llama-2-70B", "A100-80GB-SXM", 4, "fp16", 128, 2, 47),
    ("TRT-LLM v0.5 Llama-2-7B fp8 H100 128", "Llama-2-7B", "H100-SXM", 1, "fp8", 128, 2, 7),
    ("TRT-LLM v0.5 Llama-2-7B fp8 H100 2048", "Llama-2-7B", "H100-SXM", 1, "fp8", 2048, 2, 36),
    ("TRT-LLM v0.5 Llama-2-70B fp8 H100 tp4 2048", "Llama-2-70B", "H100-SXM", 4, "fp8", 2048, 2, 109),
    ("TRT-LLM v0.5 Llama-2-7B fp8 L40S 128", "Llama-2-7B", "L40S", 1, "fp8", 128, 2, 14),
    ("TRT-LLM v0.5 Llama-2-7B fp8 L40S 2048 (fit: L40S keeps the mean)", "Llama-2-7B", "L40S", 1, "fp8", 2048, 2, 73),
    ("NIM Llama-3.1-70B fp8 H100 tp2 5000", "Llama-3.1-70B", "H100-SXM", 2, "fp8", 5000, 500, 406.77),
    ("NIM Llama-3.1-70B fp8 H100 tp2 500", "Llama-3.1-70B", "H100-SXM", 2, "fp8", 500, 2000, 47.77),
    ("TRT-LLM v0.9 Llama-2-7B fp8 H100 128 (fit)", "Llama-2-7B", "H100-SXM", 1, "fp8", 128, 2, 6.3),
    ("TRT-LLM v0.9 Llama-2-7B fp8 H100 2048 (fit)", "Llama-2-7B", "H100-SXM", 1, "fp8", 2048, 2, 30.8),
    ("TRT-LLM v0.9 Mistral-7B fp8 H100 128 (fit)", "Mistral-7B", "H100-SXM", 1, "fp8", 128, 2, 6.5),
    ("TRT-LLM v0.9 Mistral-7B fp8 H100 2048 (fit)", "Mistral-7B", "H100-SXM", 1, "fp8", 2048, 2, 32.4),
    ("TRT-LLM v0.9 Llama-2-70B fp8 H100 tp4 128 (fit)", "Llama-2-70B", "H100-SXM", 4, "fp8", 128, 2, 19.6),
    ("TRT-LLM v0.9 Llama-2-70B fp8 H100 tp8 2048 (fit)", "Llama-2-70B", "H100-SXM", 8, "fp8", 2048, 2, 85.1),
    ("TRT-LLM v0.9 Mixtral-8x7B fp8 H100 tp2 2048 (MoE)", "Mixtral-8x7B", "H100-SXM", 2, "fp8", 2048, 2, 89.5),
    ("TRT-LLM v0.9 Mixtral-8x7B fp8 H100 tp2 128 (fit, MoE)", "Mixtral-8x7B", "H100-SXM", 2, "fp8", 128, 2, 13.4),
    ("TRT-LLM v0.9 Llama-2-7B fp8 H200 128 (fit)", "Llama-2-7B", "H200", 1, "fp8", 128, 2, 5.7),
    ("TRT-LLM v0.9 Llama-2-7B fp8 H200 2048", "Llama-2-7B", "H200", 1, "fp8", 2048, 2, 30.2),
    ("TRT-LLM v0.9 Mistral-7B fp8 H200 128 (fit)", "Mistral-7B", "H200", 1, "fp8", 128, 2, 5.9),
    ("TRT-LLM v0.9 Mistral-7B fp8 H200 2048", "Mistral-7B", "H200", 1, "fp8", 2048, 2, 31.7),
    ("TRT-LLM v0.9 Llama-2-70B fp8 H200 tp4 128 (fit)", "Llama-2-70B", "H200", 4, "fp8", 128, 2, 17.8),
    ("TRT-LLM v0.9 Llama-2-70B fp8 H200 tp4 2048", "Llama-2-70B", "H200", 4, "fp8", 2048, 2, 103.0),
    ("TRT-LLM v0.9 Mixtral-8x7B fp8 H200 tp2 128 (fit, MoE)", "Mixtral-8x7B", "H200", 2, "fp8", 128, 2, 12.1),
    ("TRT-LLM v0.9 Mixtral-8x7B fp8 H200 tp2 2048 (MoE)", "Mixtral-8x7B", "H200", 2, "fp8", 2048, 2, 87.7),
    ("TRT-LLM v0.9 Llama-2-7B fp16 A100 128", "Llama-2-7B", "A100-80GB-SXM", 1, "fp16", 128, 2, 16.2),
    ("TRT-LLM v0.9 Mistral-7B fp16 A100 128", "Mistral-7B", "A100-80GB-SXM", 1, "fp16", 128, 2, 16.3),
    ("TRT-LLM v0.9 Llama-2-70B fp16 A100 tp4 128", "Llama-2-70B", "A100-80GB-SXM", 4, "fp16", 128, 2, 45.6),
    ("TRT-LLM v0.9 Llama-2-7B fp16 A100 2048", "Llama-2-7B", "A100-80GB-SXM", 1, "fp16", 2048, 2, 132.4),
    ("TRT-LLM v0.9 Mistral-7B fp16 A100 2048", "Mistral-7B", "A100-80GB-SXM", 1, "fp16", 2048, 2, 139.6),
    ("TRT-LLM v0.9 Mixtral-8x7B fp16 A100 tp2 2048 (MoE)", "Mixtral-8x7B", "A100-80GB-SXM", 2, "fp16", 2048, 2, 160.9),
    ("TRT-LLM v0.9 Llama-2-70B fp16 A100 tp8 2048", "Llama-2-70B", "A100-80GB-SXM", 8, "fp16", 2048, 2, 249.2),
    ("TRT-LLM v0.9 Llama-2-7B fp8 L40S 128", "Llama-2-7B", "L40S", 1, "fp8", 128, 2, 14.1),
    ("TRT-LLM v0.9 Llama-2-7B fp8 L40S 2048 (fit: L40S keeps the mean)", "Llama-2-7B", "L40S", 1, "fp8", 2048, 2, 80.1),
    ("TRT-LLM v0.9 Mistral-7B fp8 L40S 128", "Mistral-7B", "L40S", 1, "fp8", 128, 2, 15.4),
    ("TRT-LLM v0.9 Mistral-7B fp8 L40S 2048 (fit: L40S keeps the mean)", "Mistral-7B", "L40S", 1, "fp8", 2048, 2, 87.3),
]


@pytest.mark.parametrize("label,model,accel,tp,w,inp,out,ttft", TTFT_BATCH1, ids=[r[0] for r in TTFT_BATCH1])
def test_ttft_batch1_within_20_percent(label, model, accel, tp, w, inp, out, ttft):
    kv = "fp8" if w == "fp8" and label.startswith("TRT-LLM") else None  # the TensorRT-LLM engines' FP8 KV cache
    assert _ms(_run(model, accel, tp, w, inp, out, kv=kv, nccl=_nccl(label)).inference.ttft_s) == pytest.approx(ttft, rel=0.20), label


# MoE on H200: DeepSeek-R1 (DeepSeek-V3's architecture), native FP8, 8x H200, attention tensor-parallel
# over 8 and the experts over ep 8 (or 4 x expert-TP 2), batch 1, 600 output tokens, TensorRT-LLM
# v0.21.0rc2 through trtllm-serve (issue NVIDIA/TensorRT-LLM#5929, LLMPerf p50). The PyTorch backend
# runs prefill outside CUDA graphs: prefill_dispatch "eager" (36.6 us of host work per kernel, from
# SGLang's measurements, not these rows). Model: -6% / -13% at 1,600 tokens, -1% / -6% at 8,192 (ep 8 /
# ep 4); with graph dispatch -48% / -52% and -16% / -20%. KV-cache format not stated (bf16 taken).
# Known gaps (docs/formulas.md section 14): the ITL (-25% to -28%: TensorRT-LLM 0.21's decode step is
# ~3 ms longer at batch 1), and tp 8 without expert parallelism (TTFT -29% / -32%: 256-wide expert slices).
DSR1_H200 = [({"tp": 8, "ep": 8}, 1600, 124.11), ({"tp": 8, "ep": 4, "etp": 2}, 1600, 134.36),
             ({"tp": 8, "ep": 8}, 8192, 352.81), ({"tp": 8, "ep": 4, "etp": 2}, 8192, 370.07)]


@pytest.mark.parametrize("parallelism,inp,ttft", DSR1_H200, ids=[f"ep{p['ep']}-{i}" for p, i, _ in DSR1_H200])
def test_moe_on_h200_with_expert_parallelism_within_20_percent(parallelism, inp, ttft):
    r = capplan.estimate({"model": "DeepSeek-V3", "system": {"preset": "HGX-H200", "count": 8},
                          "parallelism": parallelism, "precision": {"weights": "fp8", "compute": "fp8"},
                          "inference": {"input_tokens": inp, "output_tokens": 600, "batch": 1, "prefill_dispatch": "eager"}})
    assert r.system.parallelism.ep == parallelism["ep"]
    assert _ms(r.inference.ttft_s) == pytest.approx(ttft, rel=0.20)


def test_narrow_tensor_parallel_expert_slices_are_flagged():
    # The known gap, said where it applies: 2048 / 8 = 256-wide slices, not whole experts over ep.
    def notes(parallelism):
        return capplan.estimate({"model": "DeepSeek-V3", "system": {"preset": "HGX-H200", "count": 8},
                                 "parallelism": parallelism, "precision": {"weights": "fp8", "compute": "fp8"},
                                 "inference": {"input_tokens": 1600, "output_tokens": 600, "batch": 1}}).notes
    assert any("split 8 ways into 256-wide slices" in n for n in notes({"tp": 8}))
    assert not any("slices" in n for n in notes({"tp": 8, "ep": 8}))
    assert not any("slices" in n for n in notes({"tp": 8, "ep": 4, "etp": 2}))  # 1024 wide: +3% per token, measured


def test_moe_prefill_cost_per_token_matches_the_engine_without_its_fixed_part():
    # The same rows' TTFT from 1,600 to 8,192 tokens grows by 228.70 ms (ep 8) and 235.71 ms (ep 4):
    # the engine's per-request host work cancels, what is left is the prefill compute (model: 232.3 ms).
    def ttft(parallelism, inp):
        return _ms(capplan.estimate({"model": "DeepSeek-V3", "system": {"preset": "HGX-H200", "count": 8},
                                     "parallelism": parallelism, "precision": {"weights": "fp8", "compute": "fp8"},
                                     "inference": {"input_tokens": inp, "output_tokens": 600, "batch": 1}}).inference.ttft_s)
    for parallelism, measured in (({"tp": 8, "ep": 8}, 352.81 - 124.11), ({"tp": 8, "ep": 4, "etp": 2}, 370.07 - 134.36)):
        assert ttft(parallelism, 8192) - ttft(parallelism, 1600) == pytest.approx(measured, rel=0.10)


# Under concurrency: NIM 1.8.0 Llama-3.3-70B fp8 on 2x H100 (TP2), 5000 in / 500 out, closed loop;
# the fp8 profile's KV cache is taken as fp8. AIPerf reports means: the simulation's means are compared
# (TPOT +2.8% / +3.7%), and the deployment's output tokens/s (623.4 / 814.37: -8.7% / -12.8%). Its mean
# TTFT, +118% / +112%, is a known gap (docs/formulas.md section 14): identical requests in a closed loop
# arrive in convoys in the simulation, each waiting out another's prefill; NIM's do not.
@pytest.mark.parametrize("users,tpot,tokens_per_s", [(25, 38.75, 623.4), (50, 59.73, 814.37)])
def test_latency_under_concurrency_within_25_percent(users, tpot, tokens_per_s):
    r = _run("Llama-3.1-70B", "H100-SXM", 2, "fp8", 5000, 500, kv="fp8", concurrency=users)
    assert r.inference.method == "simulation"
    assert _ms(r.inference.tpot_mean_s) == pytest.approx(tpot, rel=0.25)
    assert float(r.inference.throughput_tokens_per_s) == pytest.approx(tokens_per_s, rel=0.25)
    assert r.inference.ttft_p99_s >= r.inference.ttft_p90_s >= r.inference.ttft_s


# Under open-loop load, dense: SGLang serving Llama-3.3-70B (bf16, 4x H200, TP 4) to Poisson arrivals,
# prompts and answers uniform on 1..1024 tokens (datacrunch-research/h200-benchmarks; rows and quotes in
# tests/data/published_inference.json). SGLang then ran prefill outside CUDA graphs: eager dispatch.
# Model against measured at 1 / 2 / 4 requests/s: median TTFT -6% / -1% / -7%, median ITL -9% / -15% / -25%,
# mean e2e -14% / -12% / -25% (SGLang's own all-reduce kernel; the 4/s ITL and e2e are the decode gap above).
# At 8 requests/s the benchmark is at its knee (not checked, see the row's notes); at 16 both are saturated and
# the output tokens/s is checked (+18%).
_POISSON = _checked(arrival="poisson", model="Llama-3.1-70B")


@pytest.mark.parametrize("row", _POISSON, ids=lambda m: f"{m['rate_per_s']}-per-s")
def test_dense_latency_under_poisson_load_within_25_percent(row):
    r = _poisson_70b(row["rate_per_s"])
    assert r.method == "simulation" and r.preemptions == 0  # the cache holds every request, even past capacity
    _assert_checked_within_25_percent(r, row, {m for k, rate, m in DECODE_GAP_ROWS if k == "poisson" and rate == row["rate_per_s"]})
    assert r.itl_p99_s >= r.itl_p90_s >= r.itl_s  # a prompt's step shows in the tail of the token gaps


# Dense under a burst on A100: GPUStack's vLLM v0.11.0 serving Qwen3-32B bf16 on one A100 80 GB, every
# request sent at once (500 of 2000/100 and of 4000/200, 100 of 32000/100; tests/data/published_inference.json).
# The cache beside 61 GiB of weights holds a few requests, so they run in waves (the simulation preempts):
# mean TTFT +10% / +11% / +14%, mean TPOT +7% / +7%, median ITL -7% / -8% / -5%, output tokens/s -11% / -10%.
# Each row lists what it checks (the 32K answers stopped early; the 128/4 burst is API-server bound).
_BURST = _checked(arrival="burst")


@pytest.mark.parametrize("row", _BURST, ids=lambda m: f"{m['input_tokens']}-{m['output_tokens']}")
def test_dense_latency_under_a_burst_on_a100_within_25_percent(row):
    r = capplan.estimate({"model": row["model"], "system": {"accelerator": row["gpu"], "count": 1},
                          "precision": {"weights": "bf16", "compute": "bf16"},
                          "inference": {"input_tokens": row["input_tokens"], "output_tokens": row["output_tokens"],
                                        "prefill_dispatch": row["engine_settings"]["prefill_dispatch"],
                                        "workload": {"arrival": "constant_rate", "rate_per_s": 1e6,
                                                     "requests": row["requests"]}}}).inference
    _assert_checked_within_25_percent(r, row)


# MoE under concurrency: vLLM, Qwen3-30B-A3B bf16 on one H100, 2048 in / 1024 out, 10 concurrent, 100
# prompts with the first wave counted (benchmark_serving --max-concurrency 10 --num-prompt 100; vllm-project/vllm
# PR #23151, before its tuned MoE config). vLLM runs 2,048-token steps beyond its CUDA-graph capture sizes:
# eager dispatch. Median TTFT 300.05 ms (model -10%), median TPOT 13.17 ms (-3%).
def test_moe_latency_under_concurrency_within_25_percent():
    r = capplan.estimate({"model": "Qwen3-30B-A3B", "system": {"accelerator": "H100-SXM", "count": 1},
                          "precision": {"weights": "bf16", "compute": "bf16"},
                          "inference": {"input_tokens": 2048, "output_tokens": 1024, "concurrency": 10,
                                        "prefill_dispatch": "eager",
                                        "workload": {"requests": 100, "warmup_requests": 0}}})
    assert r.inference.method == "simulation"
    assert _ms(r.inference.ttft_s) == pytest.approx(300.05, rel=0.25)
    assert _ms(r.inference.tpot_s) == pytest.approx(13.17, rel=0.25)


# MoE under concurrency with random lengths: SemiAnalysis InferenceX, TensorRT-LLM 1.1.0rc2.post2 (PyTorch
# backend: eager prefill dispatch, reserved KV admission) serving DeepSeek-R1 FP8 on 8x H200, TP 8 x EP 8,
# closed loops of 4-64 users, lengths uniform on [0.8 L, L] (tests/data/published_inference.json, 14 rows).
# Model against measured: median TTFT -13% ... +6%, mean TPOT -35% ... -2% (the engine's own all-reduce kernel;
# the 4-user rows are the decode gap above). The mean TTFT is not compared:
# a few multi-second TTFTs per run carry it (p99 1.4-12 s against medians of 0.1-0.4 s).
_INFERENCEX = _checked(benchmark="InferenceX")


@pytest.mark.parametrize("row", _INFERENCEX,
                         ids=lambda m: f"{m['input_tokens']}-{m['output_tokens']}-c{m['concurrency']}")
def test_moe_latency_with_random_lengths_within_25_percent(row):
    inp, out, users = row["input_tokens"], row["output_tokens"], row["concurrency"]
    settings = row["engine_settings"]
    r = capplan.estimate({
        "model": row["model"], "system": {"preset": "HGX-H200", "count": 8}, "parallelism": {"tp": 8, "ep": 8},
        "precision": {"weights": "fp8", "compute": "fp8", "kv_cache": "fp8"},
        "inference": {"input_tokens": inp, "output_tokens": out, "concurrency": users,
                      "prefill_chunk_tokens": settings["max_num_tokens"], "kv_admission": settings["kv_admission"],
                      "prefill_dispatch": settings["prefill_dispatch"],
                      "workload": {"requests": row["requests"], "warmup_requests": 0,
                                   "input": {"kind": "uniform", "min": int(0.8 * inp), "max": inp},
                                   "output": {"kind": "uniform", "min": int(0.8 * out), "max": out}}}}).inference
    _assert_checked_within_25_percent(r, row, {m for k, c, m in DECODE_GAP_ROWS if k == "InferenceX" and c == users})


# Throughput under maximum load: TensorRT-LLM's perf-overview table (tests/data/published_inference.json
# "saturated_throughput": trtllm-bench, requests queued at an infinite rate, exact lengths), Llama 3.1 8B,
# 3.3 70B and 3.1 405B in FP8 on H100/H200 at TP 1-8, ten input/output shapes each (60 rows), and the MoE
# Qwen3-235B-A22B on 8 H200s with attention data parallelism (10 rows; its H100 rows, +11% to +63%, are
# a known gap): none fitted. Run with the default graph dispatch (with eager, the 405B H100 2048/128 row
# reads -25.5%; docs/formulas.md section 12).
# TensorRT-LLM reserves each request's whole output when it admits it (kv_admission "reserve"); with
# vLLM's on-demand admission five of them came out 6-32% low, from preemptions.
_SAT = _PUBLISHED["saturated_throughput"]
SATURATED = [(i, shape, value) for i, t in enumerate(_SAT["tables"]) if "not_checked" not in t
             for shape, value in t["output_tokens_per_s"].items()]


def _label(i, shape):
    t = _SAT["tables"][i]
    adp = "-adp" if t.get("parallelism", {}).get("attention_dp") else ""
    return f"{t['model']}-{t['accelerator']}-tp{t['tp']}{adp}-{t.get('formats', {}).get('weights', 'fp8')}-{shape}"


@functools.lru_cache(maxsize=None)
def _saturated(i, shape):
    return saturated_published(_SAT["tables"][i], shape)


@pytest.mark.parametrize("i,shape,tokens_per_s", SATURATED, ids=[_label(i, sh) for i, sh, _ in SATURATED])
def test_saturated_throughput_within_25_percent(i, shape, tokens_per_s):
    # Dense FP8: from -23% (405B, 2048/128) to +4% (70B on H200, 128/2048); prefill-heavy shapes are the
    # lowest. MoE (Qwen3-235B-A22B on 8 H200s, attention data parallelism, experts over ep 8): -16%
    # (128/128) to +21% (20000/2000). Dense FP4 on B200/GB200 (added 2026-12-05, predicted once): -21%
    # (405B on GB200, 128/128) to +26% (70B on B200, 128/4096: a shape with a documented gap, bounded at 35%).
    gap = _SAT["tables"][i].get("known_gap_shapes", {}).get(shape)
    assert _saturated(i, shape) == pytest.approx(tokens_per_s, rel=0.35 if gap else 0.25)


def test_saturated_throughput_median_error_within_10_percent():
    errors = sorted(_saturated(i, sh) / v - 1 for i, sh, v in SATURATED)
    assert abs(errors[len(errors) // 2]) < 0.10  # -2.1% over the 110 rows (70 FP8, 40 dense FP4)


def test_one_user_waits_for_nobody_and_a_counted_first_wave_raises_the_mean():
    base = {"model": "Qwen3-30B-A3B", "system": {"accelerator": "H100-SXM", "count": 1},
            "precision": {"weights": "bf16", "compute": "bf16"}}
    # One user: every request is prefilled alone, so each TTFT is the batch-1 prefill.
    one = capplan.estimate({**base, "inference": {"input_tokens": 2048, "output_tokens": 64, "concurrency": 1,
                                                   "workload": {"requests": 5, "warmup_requests": 0}}}).inference
    alone = capplan.estimate({**base, "inference": {"input_tokens": 2048, "output_tokens": 64, "batch": 1}}).inference
    assert one.simulated_requests == 5
    assert float(one.ttft_mean_s) == pytest.approx(float(alone.ttft_s), rel=1e-9)
    # Ten users at once: counting the first wave (ten 2,048-token prompts queued behind 8,192-token
    # steps) raises the mean above the steady state's, and the tail with it.
    def ten(**workload):
        return capplan.estimate({**base, "inference": {"input_tokens": 2048, "output_tokens": 1024, "concurrency": 10,
                                                        "workload": {"requests": 100, **workload}}}).inference
    steady, counted = ten(), ten(warmup_requests=0)
    assert float(counted.ttft_mean_s) > float(steady.ttft_mean_s) and counted.ttft_p99_s > steady.ttft_p99_s
    with pytest.raises(capplan.ConfigError, match="/inference/workload/warmup_requests"):
        ten(warmup_requests=-1)
    with pytest.raises(capplan.ConfigError, match="/inference/workload/turnaround"):
        ten(turnaround="-1 ms")
    with pytest.raises(capplan.UnitError, match="/inference/workload/turnaround"):
        ten(turnaround="1 GB")


def test_never_slower_with_more_bandwidth_or_flops_and_ttft_grows_with_input():
    base = dict(capplan.entry("H100-SXM"))
    base.pop("$schema", None)

    def accel(bw_scale=1.0, flops_scale=1.0):
        a = {**base, "memory": {**base["memory"]}, "peak_dense_flops": dict(base["peak_dense_flops"])}
        a["memory"]["bandwidth"] = f"{3.35 * bw_scale} TB/s"
        a["peak_dense_flops"]["bf16"] = f"{989.5 * flops_scale} TFLOP/s"
        return a

    def run(a, inp=2000):
        return capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": a},
                                 "inference": {"input_tokens": inp, "output_tokens": 200, "batch": 8}}).inference
    ref = run(accel())
    for faster in (accel(bw_scale=1.5), accel(flops_scale=1.5), accel(1.5, 1.5)):
        f = run(faster)
        assert f.ttft_s <= ref.ttft_s and f.tpot_s <= ref.tpot_s
    ttfts = [run(accel(), inp).ttft_s for inp in (100, 1000, 4000, 16000)]
    assert all(b > a for a, b in zip(ttfts, ttfts[1:]))


def test_chain_and_bottleneck_and_cold_start():
    r = capplan.estimate(capplan.default_scenario())
    d = r.to_dict()
    stages = [c["stage"] for c in d["chain"]]
    assert stages == ["gpu memory", "compute", "scale-up network", "scale-out network", "engine overhead"]
    assert d["bottleneck"] in stages
    assert sum(c["utilization"] for c in d["chain"]) == pytest.approx(1.0)
    # Pipeline stages on two nodes: their sends go over the scale-out network; inside one node they do not.
    def chain(pp):
        return {c["stage"]: c["time_s"] for c in capplan.estimate({
            "model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 8 * pp}, "parallelism": {"tp": 8, "pp": pp},
            "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 8}}).to_dict()["chain"]}
    assert chain(1)["scale-out network"] == 0.0 and chain(2)["scale-out network"] > 0.0
    cold = d["cold_start"]
    assert [c["stage"] for c in cold["chain"]] == ["storage", "host_memory", "host_link", "engine_init"]
    assert cold["total_s"] == pytest.approx(sum(c["time_s"] for c in cold["chain"]))


def test_concurrency_beyond_memory_is_infeasible_with_reasons_and_still_simulated():
    r = _run("Llama-3.1-70B", "H100-SXM", 2, "fp8", 5000, 500, concurrency=100)
    assert r.feasible is False and "KV cache" in r.reasons[-1]
    assert r.inference.method == "simulation" and r.inference.preemptions > 0


def test_sliding_window_models_and_pcie_cards_under_concurrency():
    # Gemma-2 (alternating 4096-token windows) on two PCIe L40S cards: the simulation sizes its cache
    # at the request length, so it neither refuses the requests nor preempts when memory says they fit.
    r = capplan.estimate({"model": "Gemma-2-27B", "system": {"accelerator": "L40S", "count": 2},
                          "parallelism": {"tp": 2}, "inference": {"input_tokens": 6000, "output_tokens": 2000,
                                                                  "concurrency": 8}})
    assert r.memory.fits is True and r.inference.method == "simulation" and r.inference.preemptions == 0
    assert isinstance(r.inference.throughput_tokens_per_s, float)  # a rate of tokens, not a time
    assert "time to first token" in repr(r) and "cold start not computed" in repr(r)  # no storage tier named


def test_open_loop_workload_distributions_and_trace(tmp_path):
    base = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM"}}
    poisson = capplan.estimate({**base, "inference": {
        "input_tokens": 1000, "output_tokens": 200,
        "workload": {"arrival": "poisson", "rate_per_s": 4, "requests": 300, "seed": 7,
                     "input": {"kind": "lognormal", "sigma": 0.6}, "output": {"kind": "uniform", "min": 50, "max": 350}}}})
    i = poisson.inference
    assert i.method == "simulation" and i.simulated_requests == 300
    assert i.ttft_p99_s >= i.ttft_p90_s >= i.ttft_s and i.tpot_p99_s >= i.tpot_s
    again = capplan.estimate({**base, "inference": {
        "input_tokens": 1000, "output_tokens": 200,
        "workload": {"arrival": "poisson", "rate_per_s": 4, "requests": 300, "seed": 7,
                     "input": {"kind": "lognormal", "sigma": 0.6}, "output": {"kind": "uniform", "min": 50, "max": 350}}}})
    assert again.to_dict()["inference"] == poisson.to_dict()["inference"]  # seeded: reproducible

    trace = tmp_path / "trace.csv"
    trace.write_text("input_tokens,output_tokens,arrival_s\n800,100,0.0\n1200,300,0.5\n400,50,0.9\n")
    scenario = tmp_path / "s.json"
    import json as _json
    scenario.write_text(_json.dumps({**base, "inference": {"input_tokens": 1200, "output_tokens": 300, "workload": {
        "arrival": "trace", "trace": "trace.csv", "input": "trace", "output": "trace", "requests": 3}}}))
    t = capplan.estimate(scenario)
    assert t.inference.simulated_requests == 3
    trace.write_text("input_tokens,output_tokens,arrival_s\n800,100,0.0\n1200,oops,0.5\n")
    with pytest.raises(capplan.ConfigError) as e:
        capplan.estimate(scenario)
    assert "line 3" in str(e.value)
    with pytest.raises(capplan.ConfigError) as e:  # a closed loop needs its users
        capplan.estimate({**base, "inference": {"input_tokens": 10, "output_tokens": 5, "workload": {"arrival": "closed_loop"}}})
    assert e.value.field == "/inference/concurrency"


def test_roofline_points_lie_under_the_roof_and_decode_intensity_matches_the_batch():
    # Default scenario: Llama-3.1-70B bf16, tp=8, 50 users -> one decode step at batch 50.
    r = capplan.estimate(capplan.default_scenario())
    roof = r.to_dict()["roofline"]
    assert roof["peak_flops_per_s"] == pytest.approx(989.5e12)   # H200 dense BF16 (catalog, NVIDIA datasheet)
    assert roof["memory_bytes_per_s"] == pytest.approx(4.8e12)   # H200 HBM3e
    assert {o["phase"] for o in roof["ops"]} == {"prefill", "decode"}
    for o in roof["ops"]:
        # Williams et al. 2009: attained FLOP/s <= min(peak, bandwidth x intensity), launches only slow it.
        if o["flops"] > 0:
            assert o["flops"] / o["time_s"] <= min(roof["peak_flops_per_s"],
                                                   roof["memory_bytes_per_s"] * o["flops"] / o["bytes"]) * 1.0001
        assert o["bound"] in ("compute", "memory")
    # Hand calculation: a decode GEMM reads each bf16 weight (2 bytes) once and does 2 FLOPs with it
    # per token, so at 50 tokens its intensity is ~50 FLOP/byte (activations add a little traffic).
    # (Whether it is memory- or compute-bound depends on the small-GEMM efficiency: H200 has a measured
    # efficiency-by-size curve, under which a 1-GFLOP GEMM takes ~7 us.)
    proj = next(o for o in roof["ops"] if o["phase"] == "decode" and o["op"] == "attention projections")
    assert proj["flops"] / proj["bytes"] == pytest.approx(50, rel=0.06)
    # The decode chain's memory and compute stages are the decode operators' times, split by bound.
    decode = [o for o in roof["ops"] if o["phase"] == "decode"]
    chain = {c["stage"]: c["time_s"] for c in r.to_dict()["chain"]}
    assert chain["gpu memory"] + chain["compute"] == pytest.approx(sum(o["time_s"] for o in decode))


def test_plot_draws_the_charts_with_matplotlib():
    matplotlib = pytest.importorskip("matplotlib")  # capplan[notebook]
    matplotlib.use("Agg")
    r = capplan.estimate(capplan.default_scenario())
    fig = r.plot()
    assert [ax.get_title() for ax in fig.axes] == ["memory per device", "one decode or training step through the chain",
                                                   "cold start", "roofline of the main operators"]
    assert fig.axes[3].get_xscale() == "log"


def test_kv_admission_is_checked_and_reserve_never_preempts():
    base = {"model": "Llama-3.1-70B", "system": {"accelerator": "H100-SXM", "count": 2}, "parallelism": {"tp": 2},
            "precision": {"weights": "fp8", "kv_cache": "fp8"}}
    with pytest.raises(capplan.ConfigError, match="/inference/kv_admission.*on_demand, reserve"):
        capplan.estimate({**base, "inference": {"input_tokens": 100, "output_tokens": 10, "concurrency": 4,
                                                "kv_admission": "lazy"}})
    # 100 users of 5000 + 500 tokens overflow the cache: on-demand admission preempts, reserve queues instead.
    def run(admission):
        return capplan.estimate({**base, "inference": {"input_tokens": 5000, "output_tokens": 500, "concurrency": 100,
                                                       "kv_admission": admission}}).inference
    assert run("on_demand").preemptions > 0 and run("reserve").preemptions == 0


def test_attention_data_parallelism_caches_each_ranks_own_requests_whole():
    # Qwen3-235B-A22B (4 KV heads) on 8 H200s with its experts over ep 8. Under tp 8 every rank keeps
    # one of the 4 KV heads for every request (each head held twice); with attention_dp each rank keeps
    # its own eighth of the requests with all 4 heads, so the group's cache bytes per token halve. The
    # attention weights (94 layers x 75.5 M parameters, fp8) and the embeddings are then whole on every rank.
    def run(attention_dp):
        return capplan.estimate({"model": "Qwen3-235B-A22B", "system": {"preset": "HGX-H200", "count": 8},
                                 "parallelism": {"tp": 8, "ep": 8, "attention_dp": attention_dp},
                                 "precision": {"weights": "fp8", "compute": "fp8", "kv_cache": "fp8"},
                                 "inference": {"input_tokens": 1000, "output_tokens": 1000, "batch": 1}}).to_dict()
    tp, dp = run(False), run(True)
    assert dp["system"]["parallelism"]["attention_dp"] is True and "attention_dp" not in tp["system"]["parallelism"]
    per_token = 94 * 2 * 4 * 128  # bytes: layers x (K, V) x heads x head_dim x 1 B
    assert dp["memory"]["kv_cache_bytes_per_token"] == per_token
    assert tp["memory"]["kv_cache_bytes_per_token"] == per_token / 4  # one head per rank
    # Group cache per token: 8 ranks x one head = 2 x per_token under tp; per_token with attention_dp.
    assert dp["inference"]["max_batch"] > 1.5 * tp["inference"]["max_batch"]
