"""Fitted against held-out: capplan's inference predictions against the published rows of
tests/data/published_inference.json, grouped by each row's "role" (issue #18).

    python scripts/validation_report.py           # rewrite docs/validation.md
    python scripts/validation_report.py --check   # exit 1 when docs/validation.md is stale

Runs the installed capplan. Every scenario below is the one tests/python/test_inference_speed.py builds
for that row (the static-batch rows, which no other test runs, excepted), so the errors here are the
ones the tests see. Importable: collect() gives one entry per compared quantity of a row, summarise()
the groups' statistics (tests/python/test_validation.py checks them).
"""
import argparse
import functools
import importlib.util
import json
import pathlib
import statistics
import subprocess
import sys

import capplan


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The tests' own way of running a row (tests/python/published_support.py).
_published = _load("published_support", pathlib.Path(__file__).resolve().parents[1] / "tests" / "python" / "published_support.py")
_ms = _published.ms

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "published_inference.json"
SERVING = ROOT / "tests" / "data" / "published_serving.json"  # issue #18's features: static batches, speculative decoding
ALLREDUCE = ROOT / "tests" / "data" / "published_engine_allreduce.json"  # engines' own all-reduce kernels
CHECKPOINT = ROOT / "tests" / "data" / "published_checkpoint.json"  # checkpoints on a shared file system (issue #20)
LORA = ROOT / "tests" / "data" / "published_lora.json"  # LoRA / QLoRA fine-tuning peak memory (issue #20)
TRAINING = ROOT / "tests" / "data" / "published_training.json"  # pre-training step time and MFU (issue #20)
GPU = ROOT / "tests" / "data" / "gpu"  # steps measured on this project's H200 (issue #24, scripts/device_check.sh)
CALIBRATIONS = ROOT / "models" / "calibration"
DOC = ROOT / "docs" / "validation.md"
BANDS = ROOT / "models" / "uncertainty.json"  # the error bands estimates carry as ranges (issue #22 item 5)
# The quantities whose held-out errors become an estimate's ranges, and the fewest rows a band needs.
BAND_QUANTITIES = ("ttft", "tpot", "e2e", "throughput_saturated", "throughput_static", "training_step",
                   "checkpoint_save", "checkpoint_restore", "lora_memory", "lora_time")
BAND_MIN_ROWS = 10  # deciles of fewer rows would claim an 8-in-10 interval nothing supports

ROLES = ("fitted", "held_out")
QUANTITIES = ("ttft", "tpot", "e2e", "throughput_saturated", "throughput_closed_loop", "throughput_static",
              "speculative_speedup", "throughput_pool", "kv_offload", "prefix_cache", "engine_allreduce",
              "training_step", "training_mfu", "checkpoint_size", "checkpoint_save", "checkpoint_restore", "lora_memory",
              "lora_time", "collective_busbw", "gpu_step", "gpu_step_calibrated", "gpu_training_step", "gpu_training_memory")
# Issue #18's targets on held-out rows: median |error| per quantity, and no row beyond ROW_LIMIT
# without a documented cause.
TARGETS = {"ttft": 0.12, "tpot": 0.12, "throughput_saturated": 0.15, "throughput_static": 0.15,
           "lora_memory": 0.10,  # issue #20: LoRA/QLoRA peak memory within 10%
           "training_step": 0.07,  # issue #20: held-out step time median within 7% (and 80% of rows within 12%)
           "lora_time": 0.07}  # issue #20's training target, for fine-tuning steps and runs too
# Targets of an issue still open: reported (met or missed), not yet a test's bound.
OPEN_TARGETS = {"training_step", "lora_time"}
ROW_LIMIT = 0.35


# A row's "checked" name -> (quantity, modelled value, published field). ITL counts as TPOT (issue #18: "tpot/itl").
# Throughput under a burst or past capacity is the saturated throughput.
_METRICS = {
    "ttft_median": ("ttft", lambda i: _ms(i.ttft_s), "ttft_ms"),
    "ttft_mean": ("ttft", lambda i: _ms(i.ttft_mean_s), "ttft_ms"),
    "tpot_mean": ("tpot", lambda i: _ms(i.tpot_mean_s), "tpot_ms"),
    "itl_median": ("tpot", lambda i: _ms(i.itl_s), "itl_ms"),
    "e2e_mean": ("e2e", lambda i: _ms(i.e2e_mean_s), "e2e_ms"),
    "throughput": ("throughput_saturated", lambda i: float(i.throughput_tokens_per_s), "throughput_tokens_per_s"),
}


def _run(*args, **kwargs):
    return _published.run_published(*args, **kwargs).inference


def _weights(row):
    return next(w for w in ("fp8", "int8", "int4", "bf16", "fp16") if row["precision"].startswith(w))


def _model(row):
    # Published names whose architecture is a catalog model's (the file's _meta.model_mapping).
    name = row["model"].split(" (")[0]
    return {"Llama-3-70B": "Llama-3.1-70B", "DeepSeek-R1": "DeepSeek-V3"}.get(name, name)


def _modelled(row):
    """[(quantity, metric, modelled, published)] for a compared row, as its test runs it."""
    engine, model = row["engine"], _model(row)
    if engine.startswith(("TensorRT-LLM v0.5", "TensorRT-LLM v0.9.0")):
        # Batch-1 TTFT (gptSessionBenchmark); FP8 engines with an FP8 KV cache; 2 output tokens as the test.
        w = _weights(row)
        i = _run(model, row["gpu"], row["tp"], w, row["input_tokens"], 2, kv="fp8" if w == "fp8" else None, nccl=True)
        return [("ttft", "ttft batch 1", _ms(i.ttft_s), row["ttft_ms"]["value"])]
    if engine.startswith("gpt-fast"):  # batch-1 decode after a 5-token prompt
        i = _run(model, row["gpu"], row["tp"], _weights(row), 5, 200, nccl=True)
        return [("tpot", "tpot batch 1", _ms(i.tpot_s), row["tpot_ms"]["value"])]
    if engine.startswith("NVIDIA NIM") and row["concurrency"] == 1:  # NIM's ITL is vLLM's TPOT
        i = _run(model, row["gpu"], row["tp"], "fp8", row["input_tokens"], row["output_tokens"])
        return [("ttft", "ttft batch 1", _ms(i.ttft_s), row["ttft_ms"]["value"]),
                ("tpot", "tpot batch 1", _ms(i.tpot_s), row["itl_ms"]["value"])]
    if engine.startswith("NVIDIA NIM"):  # closed loop, means (AIPerf)
        i = _run(model, row["gpu"], row["tp"], "fp8", row["input_tokens"], row["output_tokens"], kv="fp8",
                 concurrency=row["concurrency"])
        return [("tpot", "tpot_mean", _ms(i.tpot_mean_s), row["itl_ms"]["value"]),
                ("throughput_closed_loop", "throughput", float(i.throughput_tokens_per_s),
                 row["throughput_tokens_per_s"]["value"])]
    if engine.startswith("TensorRT-LLM v0.21"):  # DeepSeek-R1 on 8 H200, batch 1, eager prefill
        ep = int(str(row["ep"]).split()[0]) if row.get("ep") else 1  # ep 4 is 4 x expert-TP 2; none: tp 8 alone
        parallelism = {"tp": 8} if ep == 1 else {"tp": 8, "ep": ep, "etp": 8 // ep} if ep < 8 else {"tp": 8, "ep": 8}
        i = capplan.estimate({"model": model, "system": {"preset": "HGX-H200", "count": 8}, "parallelism": parallelism,
                              "precision": {"weights": "fp8", "compute": "fp8"},
                              "inference": {"input_tokens": row["input_tokens"], "output_tokens": 600, "batch": 1,
                                            "prefill_dispatch": "eager"}}).inference
        return [("ttft", "ttft batch 1", _ms(i.ttft_s), row["ttft_ms"]["value"])]
    if model == "Qwen3-30B-A3B":  # vLLM, 10 users, first wave counted, eager prefill
        i = capplan.estimate({"model": model, "system": {"accelerator": row["gpu"], "count": 1},
                              "precision": {"weights": "bf16", "compute": "bf16"},
                              "inference": {"input_tokens": 2048, "output_tokens": 1024, "concurrency": 10,
                                            "prefill_dispatch": "eager",
                                            "workload": {"requests": 100, "warmup_requests": 0}}}).inference
        return [("ttft", "ttft_median", _ms(i.ttft_s), row["ttft_ms"]["value"]),
                ("tpot", "tpot_median", _ms(i.tpot_s), row["tpot_ms"]["value"])]
    if engine.startswith("vLLM (CI build"):
        # Static batch: vLLM benchmark_latency runs the whole batch together; output tokens/s = batch x output / e2e.
        i = _run(model, row["gpu"], row["tp"], "bf16", row["input_tokens"], row["output_tokens"], batch=row["batch"])
        return [("throughput_static", "throughput", float(i.throughput_tokens_per_s), row["throughput_tokens_per_s"]["value"])]
    return [(_METRICS[m][0], m, _METRICS[m][1](_serving(row)), row[_METRICS[m][2]]["value"]) for m in row["checked"]]


@functools.lru_cache(maxsize=None)
def _serving_cached(key):
    row = json.loads(key)
    if row.get("arrival") == "poisson":  # SGLang, Llama-3.3-70B on 4 H200, uniform 1..1024 lengths, eager prefill
        return _published.poisson_70b(row["rate_per_s"])
    if row.get("arrival") == "burst":  # GPUStack, vLLM, every request at once on one A100
        return capplan.estimate({"model": row["model"], "system": {"accelerator": row["gpu"], "count": 1},
                                 "precision": {"weights": "bf16", "compute": "bf16"},
                                 "inference": {"input_tokens": row["input_tokens"], "output_tokens": row["output_tokens"],
                                               "prefill_dispatch": row["engine_settings"]["prefill_dispatch"],
                                               "workload": {"arrival": "constant_rate", "rate_per_s": 1e6,
                                                            "requests": row["requests"]}}}).inference
    if row.get("benchmark") == "InferenceX":  # DeepSeek-R1 FP8, 8 H200, tp 8 x ep 8, closed loop, random lengths
        inp, out, s = row["input_tokens"], row["output_tokens"], row["engine_settings"]
        return capplan.estimate({
            "model": row["model"], "system": {"preset": "HGX-H200", "count": 8}, "parallelism": {"tp": 8, "ep": 8},
            "precision": {"weights": "fp8", "compute": "fp8", "kv_cache": "fp8"},
            "inference": {"input_tokens": inp, "output_tokens": out, "concurrency": row["concurrency"],
                          "prefill_chunk_tokens": s["max_num_tokens"], "kv_admission": s["kv_admission"],
                          "prefill_dispatch": s["prefill_dispatch"],
                          "workload": {"requests": row["requests"], "warmup_requests": 0,
                                       "input": {"kind": "uniform", "min": int(0.8 * inp), "max": inp},
                                       "output": {"kind": "uniform", "min": int(0.8 * out), "max": out}}}}).inference
    raise ValueError(f"no scenario for a compared row: {row['engine']}")


def _serving(row):
    return _serving_cached(json.dumps(row, sort_keys=True))


def _saturated(table, shape):
    return _published.saturated_published(table, shape)


def _static_batch(row):
    # gptSessionBenchmark: the batch's prompts in one context phase (the engine's token budget is batch x input),
    # FP8 engines with an FP8 KV cache. Per GPU unless the table gives the tp group's total.
    fmt = row["precision"]
    i = _run(row["model"], row["gpu"], row["tp"], fmt, row["input_tokens"], row["output_tokens"],
             kv="fp8" if fmt == "fp8" else None, batch=row["batch"], nccl=_published.nccl_allreduce(row["engine"]),
             prefill_chunk_tokens=row["batch"] * row["input_tokens"])
    per_gpu = row["throughput_tokens_per_s"]["kind"].endswith("per GPU")
    return float(i.throughput_tokens_per_s) / (row["tp"] if per_gpu else 1)


# Speculative decoding rows (EAGLE-3 paper Table 3): MT-Bench's prompts and answers are short; their lengths
# are not given with the table, so 128 in and 256 out are assumed.
_SPEC_SHAPE = (128, 256)


def _speculative_speedup(row, acceptance):
    def throughput(spec):
        inference = {"batch": row["batch"]}
        if spec:
            inference["speculative"] = {"method": "eagle", "tokens": row["draft_tokens"], "acceptance": acceptance}
        return float(_run(row["model"], row["gpu"], row["tp"], row["precision"], *_SPEC_SHAPE, **inference)
                     .throughput_tokens_per_s)
    return throughput(True) / throughput(False)


@functools.lru_cache(maxsize=None)
def _fitted_acceptance(key):
    """The acceptance at which the fitted row's speed-up is capplan's (bisection): the constant that row fixes."""
    row = json.loads(key)
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _speculative_speedup(row, mid) < row["speedup"]["value"] else (lo, mid)
    return (lo + hi) / 2


def _pool_throughput(row):
    # One pool of a disaggregated deployment, measured with the other assumed unlimited: a static batch of
    # the pool's load (prefill: one step of tokens_per_device_step per device; decode: batch_per_device per
    # device at the row's KV length), as tokens/s per 8-GPU node.
    per_device = row["tokens_per_device_step"] // row["input_tokens"] if row["pool"] == "prefill" else row["batch_per_device"]
    batch = per_device * row["count"]
    inference = {"input_tokens": row["input_tokens"], "output_tokens": row["output_tokens"], "batch": batch}
    inference.update({"prefill_chunk_tokens": row["tokens_per_device_step"]} if row["pool"] == "prefill"
                     else {"max_num_seqs": row["batch_per_device"]})
    i = capplan.estimate({"model": row["model"], "system": {"preset": "DGX-H100", "count": row["count"]},
                          "parallelism": {"tp": row["tp"], "ep": row["ep"], "attention_dp": row["attention_dp"]},
                          "precision": {"weights": row["precision"], "compute": row["precision"], "kv_cache": row["precision"]},
                          "inference": inference}).inference
    tokens_per_s = batch * row["input_tokens"] / float(i.ttft_s) if row["pool"] == "prefill" else batch / float(i.tpot_s)
    return tokens_per_s / (row["count"] / 8)


def _kv_offload(row):
    # A TTFT ratio (the prompt computed / its cache reloaded from host memory, all but the last token hits),
    # or the rate a device reloads offloaded blocks at.
    system = {"preset": row["system"], "count": 1}
    offload = {"tier": "host", "capacity": "500 GB"}
    if row["quantity"] == "host_to_device_rate":
        i = capplan.estimate({"model": "Llama-3.1-8B", "system": system,
                              "inference": {"input_tokens": 16, "output_tokens": 1, "kv_offload": offload}})
        return capplan.Quantity(float(i.inference.kv_offload.reload_bytes_per_s), "B/s").in_("GB/s")
    def ttft(**extra):
        return float(capplan.estimate({"model": row["model"], "system": system,
                                       "inference": {"input_tokens": row["input_tokens"], "output_tokens": 16, "batch": 1,
                                                     **extra}}).inference.ttft_s)
    return ttft() / ttft(prefix_cache={"hit_rate": 1.0}, kv_offload=offload)


# Qwen/Qwen2.5-0.5B-Instruct's config.json sizes (qwen2; the same in every public copy found, e.g. nanoinfer's
# QWEN25_05B benchmark config and MindSpore's QWEN2_CONFIG): not a catalog model.
_QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
               "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
               "max_position_embeddings": 32768, "tie_word_embeddings": True}


def _prefix_cache(row):
    # The ratio with / without the cache of the row's quantity, the same scenario otherwise.
    model = {"name": row["model"], "config": _QWEN25_05B} if row["model"] == "Qwen2.5-0.5B-Instruct" else row["model"]
    out = row["output_tokens"]
    inference = {"input_tokens": row["input_tokens"], "output_tokens": out["max"] if isinstance(out, dict) else out}
    if row.get("arrival") == "burst":
        inference["workload"] = {"arrival": "constant_rate", "rate_per_s": 1e6, "requests": row["requests"]}
    else:  # one wave of a closed loop, eager (enforce_eager)
        inference.update(concurrency=row["concurrency"], prefill_dispatch="eager",
                         workload={"requests": row["requests"], "warmup_requests": 0,
                                   "output": {"kind": "uniform", "min": out["min"], "max": out["max"]}})
    def run(cache):
        extra = {"prefix_cache": {"hit_rate": row["hit_rate"]}} if cache else {}
        return capplan.estimate({"model": model, "system": {"accelerator": row["gpu"], "count": row["tp"]},
                                 "precision": {"weights": row["precision"], "compute": row["precision"]},
                                 "inference": {**inference, **extra}}).inference
    on, off = run(True), run(False)
    if row["quantity"] == "ttft_ratio":
        return float(on.ttft_mean_s) / float(off.ttft_mean_s)
    return float(on.throughput_tokens_per_s) / float(off.throughput_tokens_per_s)


def _pct(x):
    """A signed relative error as a percentage."""
    return f"{100 * x:+.1f}%"


def _entry(id_, label, quantity, metric, published, modelled, row, source, **extra):
    """One compared quantity of a row (collect()'s entry); the row gives its role and what it was fitted for."""
    return {"id": id_, "label": label, "quantity": quantity, "metric": metric, "published": published,
            "modelled": modelled, "error": modelled / published - 1, "role": row["role"],
            "fitted_for": row.get("fitted_for"), "source": source,
            "model": _model(row) if isinstance(row.get("model"), str) else None, **extra}


@functools.lru_cache(maxsize=None)
def model_family(name):
    """"moe" for a catalog mixture-of-experts model, else "dense" (the rows' custom GPT-style models are dense)."""
    try:
        return "moe" if name and capplan.catalog.model(name).to_dict().get("moe") else "dense"
    except capplan.UnknownNameError:
        return "dense"


_AR_SYSTEM = {"H100-SXM": "DGX-H100", "H200": "HGX-H200"}


def _engine_allreduce_rows(data):
    # Each published kernel time against the formula of the algorithm the benchmark ran (forced, as its columns are).
    out = []
    for n, row in enumerate(data["measurements"]):
        r = capplan.collective("all_reduce", f"{row['bytes']} B", system=_AR_SYSTEM[row["gpu"]], gpus=row["gpus"],
                               engine="vllm-v1", algorithm=row["algorithm"])
        modelled, published = r.time.in_("us"), row["time_us"]["value"]
        out.append(_entry(f"published_engine_allreduce[{n}]",
                          f"{row['kernel']} {row['algorithm']} {row['gpus']} x {row['gpu']} {row['bytes'] / 1024:g} KiB",
                          "engine_allreduce", "us per all-reduce", published, modelled, row, row["source"].split(" (")[0]))
    return out


def _compared(rows):
    """(index, row) of each row with a role the report compares (fitted or held out)."""
    return ((n, row) for n, row in enumerate(rows) if row["role"] in ROLES)


def _checkpoint_rows(data):
    # Size, blocking save and fully parallel restore of each MLPerf Storage row (published_support.checkpoint_published).
    out = []
    for n, row in _compared(data["rows"]):
        ck = _published.checkpoint_published(row)
        label = f"{row['model']} AMLFS-125 {row['capacity_tib']} TiB dp{row['data_parallel_instances']}"
        for quantity, metric, modelled, published in (
                ("checkpoint_size", "bytes", ck["size_bytes"], row["derived"]["checkpoint_bytes"]["value"]),
                ("checkpoint_save", "s", ck["save_s"], row["write_s"]),
                ("checkpoint_restore", "s", ck["restore_s"], row["recovery_s"])):
            out.append(_entry(f"published_checkpoint[{n}]", label, quantity, metric, published, modelled, row,
                              "MLPerf Storage v3.0"))
    return out


def _training_rows(data):
    # Each pre-training row as its family's speed test runs it (published_support.training_published); Korthikanti's
    # Table 5 rows twice (selective recompute + sequence parallelism, and full recompute).
    out = []
    for n, row in _compared(data["rows"]):
        for variant in (("selective", "full") if row["id"].startswith("korthikanti2022-t5") else (None,)):
            scenario, published, key = _published.training_published(row, variant)
            r = capplan.estimate(scenario).to_dict()
            fits = "" if r["memory"]["fits"] else " (does not fit)"
            out.append(_entry(f"published_training[{n}]", f"{row['id']}{' ' + variant if variant else ''}{fits}",
                              "training_step" if key == "step_time_s" else "training_mfu",
                              "s" if key == "step_time_s" else "MFU", published, r["training"][key], row,
                              row["source"].split(",")[0][:60], gap=row.get("known_gap"), role_note=row.get("role_note")))
    return out


def _collective_rows():
    # Large-message bus bandwidth of tests/python/test_collectives.py's LARGE list (each row cited in
    # tests/data/published_collectives.json), as that test runs it; its "fit" rows fixed the efficiency factors of
    # include/capplan/analysis/collectives.hpp.
    tests = _load("collective_tests_for_report", ROOT / "tests" / "python" / "test_collectives.py")
    out = []
    for n, (label, system, gpus, per_node, op, size, opts, busbw, role) in enumerate(tests.LARGE):
        r = capplan.collective(op, capplan.Quantity(float(size), "B"), system=system, gpus=gpus, per_node=per_node or None,
                               **opts)
        modelled = r.busbw_bytes_per_s / 1e9
        labelled = {"role": "held_out"} if role != "fit" else {
            "role": "fitted",
            "fitted_for": tests.FITTED_FOR.get(
                label, "the efficiency factors of include/capplan/analysis/collectives.hpp (docs/formulas.md §11)")}
        out.append(_entry(f"collectives LARGE[{n}]", label, "collective_busbw", "busbw GB/s", busbw, modelled, labelled,
                          "tests/data/published_collectives.json", multi_node=bool(per_node) and gpus > per_node,
                          gap=tests.KNOWN_GAPS.get(label, (None,))[0]))
    return out


def _lora_rows(data):
    # Live tensors at the peak of a LoRA / QLoRA fine-tune against the allocator's published peak, and a fine-tune's
    # published run time against capplan's step time over its samples.
    out = []
    for n, row in _compared(data["rows"]):
        label = (f"{row['model']} {row['weights']} r{row['rank']} {len(row['targets'])} targets {row['seq_len']} x "
                 f"{row['micro_batch']} on {row['gpus']} {row.get('accelerator', 'GPU(s)')}"
                 f"{' zero-3' if row['zero'] == 3 else ''}")
        if "published_time" in row or "published_throughput" in row:
            modelled, published = _published.lora_time_published(row)
            quantity, metric = "lora_time", f"s for {row['samples']} sequences"
        else:
            modelled, published = _published.lora_published(row)
            quantity, metric = "lora_memory", "bytes"
        out.append(_entry(f"published_lora[{n}]", label, quantity, metric, published, modelled, row,
                          row["source"].split(" '")[0], role_note=row.get("role_note"), gap=row.get("known_gap")))
    return out


# A measured step whose wall time exceeds the sum of its kernels' times by more than this was paced by the
# measuring program's host (Python dispatch of a prefill that no CUDA graph holds): not the GPU's time, so no row.
# Chosen after the run had been seen (the steps' wall time over their kernels' sum falls in two groups, docs/validation.md
# gives both): a cut between them, not fitted to any error.
HOST_BOUND = 0.15
_NO_ENGINE = {"step": "0 s", "prefill_step": "0 s", "prefill_kernel": "0 s"}  # the measured steps run in no engine


def gpu_steps(kind):
    """The steps scripts/device_step.py measured (kind "compiled" or "eager"), one dict per prompt or decode batch:
    model, slug, phase, tokens, batch, measured_ms, kernels_ms (the profiler's sum), kinds_ms, host_bound."""
    out = []
    for f in sorted(GPU.glob(f"h200_step_{kind}_*.json")):
        d = json.loads(f.read_text())
        slug = f.stem.split(f"h200_step_{kind}_")[1]
        for phase, points in (("prefill", d["prefill"]), ("decode", d["decode"])):
            for p in points:
                kernels = sum(p["profile"]["kinds_ms"].values())
                out.append({"model": d["model"], "slug": slug, "phase": phase, "batch": p["batch"],
                            "tokens": p["tokens"] if phase == "prefill" else p["context"], "measured_ms": p["median_ms"],
                            "kernels_ms": kernels, "kinds_ms": p["profile"]["kinds_ms"],
                            "host_bound": p["median_ms"] > (1 + HOST_BOUND) * kernels, "file": f.name})
    return out


@functools.lru_cache(maxsize=None)
def gpu_predicted(model, slug, phase, tokens, batch, calibrated):
    """capplan's step for a measured one: (ms, {op: ms}); the prefill of one prompt or one decode step at the batch,
    no engine around it; calibrated: with the model's own H200 calibration (models/calibration)."""
    scenario = {"model": model, "system": {"accelerator": "H200", "count": 1},
                "inference": {"input_tokens": tokens, "output_tokens": 2, "batch": batch, "engine_overhead": _NO_ENGINE}}
    cal = CALIBRATIONS / f"h200-cuda-{slug}.json"
    d = (capplan.estimate(scenario, calibration=cal) if calibrated else capplan.estimate(scenario)).to_dict()
    ops = {o["op"]: 1e3 * o["time_s"] for o in d["roofline"]["ops"] if o["phase"] == phase}
    return 1e3 * (d["inference"]["ttft_s"] if phase == "prefill" else d["inference"]["tpot_s"]), ops


def _gpu_both(s):
    """A measured step's predictions: (catalog, calibrated), each (ms, {op: ms})."""
    return tuple(gpu_predicted(s["model"], s["slug"], s["phase"], s["tokens"], s["batch"], c) for c in (False, True))


def _gpu_label(s):
    shape = f"{s['tokens']}-token prompt" if s["phase"] == "prefill" else f"decode batch {s['batch']} at {s['tokens']}"
    return f"{s['model']} bf16 H200 {shape}"


def _gpu_rows():
    # Held out: no constant of capplan was chosen with them (the calibration measures its own probes).
    out = []
    for s in gpu_steps("compiled"):
        if s["host_bound"]:
            continue
        for quantity, (modelled, _) in zip(("gpu_step", "gpu_step_calibrated"), _gpu_both(s)):
            shape = s["tokens"] if s["phase"] == "prefill" else f"{s['batch']} at {s['tokens']}"  # decode: batch at context
            out.append(_entry(f"measured_gpu[{s['slug']} {s['phase']} {shape}]",
                              _gpu_label(s), quantity, "ms per step", s["measured_ms"], modelled, {"role": "held_out"},
                              f"tests/data/gpu/{s['file']}"))
    return out


GPU_TRAINING = GPU / "h200_train_steps.json"  # scripts/device_train_step.py on this project's H200 (issue #20)


def _gpu_training_label(st):
    mode = "compiled" if st["compiled"] else "eager"
    return f"{st['model']} amp bf16 H200 {mode}, {st['micro_batch']} x {st['seq_len']} tokens"


@functools.lru_cache(maxsize=None)
def _gpu_training_estimates():
    """(measured step, capplan's result dict) for each training step of GPU_TRAINING, as the scenario builder of
    tests/python/published_support.py describes it."""
    steps = json.loads(GPU_TRAINING.read_text())["steps"] if GPU_TRAINING.exists() else []
    return tuple((st, capplan.estimate(_published.gpu_training_scenario(st)).to_dict()) for st in steps)


# The models of the first measurement (2026-12-04, commit 1fadb40), whose kernel lists showed what capplan's eager
# step left out: the eager kernel model (include/capplan/analysis/eager_kernels.hpp) was written after them and before
# the second set (SmolLM2-360M, Qwen2.5-0.5B, Llama-3.2-1B shapes) was measured.
GPU_TRAINING_FIRST_SET = ("mpt-125m", "mpt-350m", "mpt-760m", "mpt-1b", "tinyllama-1.1b")
_FIRST_SET_ROLE = {"role": "fitted", "fitted_for": (
    "the form of the eager element-wise kernel model (include/capplan/analysis/eager_kernels.hpp, 2026-12-04), written "
    "after these models' first measurement (commit 1fadb40) showed what capplan's eager step left out; no constant (each "
    "kernel class's efficiency comes from a micro-benchmark, tests/data/gpu/h200_eager_kernels*.json); re-measured "
    "beside the second set")}
# The second set's eager steps were held out when capplan first predicted them (commit b3ad830: the earlier-versions file
# keeps those predictions); the review's corrections and the classes' medians over three runs were settled after their
# errors had been seen, so they count as fitted since. The compiled steps, which the eager model does not touch, stay held out.
_SECOND_SET_ROLE = {"role": "fitted", "fitted_for": (
    "the eager kernel model's corrections after a review (pow's backward kernels, the broadcast class, rotary's strided "
    "sum) and the kernel classes' medians over three micro-benchmark runs, settled on 2026-12-04 after these steps' "
    "errors had been seen; held out when first predicted (commit b3ad830, tests/data/gpu/h200_train_steps_earlier_capplan.json); "
    "no constant fitted to them")}
GPU_TRAINING_EARLIER = GPU / "h200_train_steps_earlier_capplan.json"  # earlier capplan versions on the same steps


def _gpu_training_rows():
    # No constant of capplan was fitted to these steps, but the eager steps shaped the eager kernel model or were seen
    # before its corrections: fitted; the compiled steps are held out.
    # Memory: the allocator's peak against capplan's per-device bytes less its runtime reservation, which
    # max_memory_allocated does not count (as the LoRA rows).
    out = []
    for st, r in _gpu_training_estimates():
        tag = f"measured_gpu_training[{st['model']}{' compiled' if st['compiled'] else ''}]"
        source = f"tests/data/gpu/{GPU_TRAINING.name}"
        role = ({"role": "held_out"} if st["compiled"]
                else _FIRST_SET_ROLE if st["model"] in GPU_TRAINING_FIRST_SET else _SECOND_SET_ROLE)
        out.append(_entry(tag, _gpu_training_label(st), "gpu_training_step", "ms per step", st["median_ms"],
                          1e3 * r["training"]["step_time_s"], role, source))
        mem = r["memory"]
        out.append(_entry(tag, _gpu_training_label(st), "gpu_training_memory", "bytes", st["peak_allocated_bytes"],
                          mem["per_device_bytes"] - mem["overhead_bytes"], {"role": "held_out"}, source))
    return out


def _new_model_saturated(row, shape):
    # As _saturated for the TensorRT-LLM tables, with the row's own precision and parallelism.
    inp, out = (int(x) for x in shape.split("/"))
    parallelism = {"tp": row["tp"], "ep": row["tp"], "attention_dp": True} if row["attention_dp"] else {"tp": row["tp"]}
    r = capplan.estimate({"model": row["model"], "system": {"accelerator": row["gpu"], "count": row["tp"]},
                          "parallelism": parallelism, "precision": row["precision"],
                          "inference": {"input_tokens": inp, "output_tokens": out, "kv_admission": "reserve",
                                        "workload": {"arrival": "poisson", "rate_per_s": 1e5,
                                                     "requests": 3000 if inp < 8000 else 1500, "seed": 1}}})
    return float(r.inference.throughput_tokens_per_s) / row["tp"]


def _vllm_offline_saturated(row, shape):
    # vLLM's benchmark_throughput.py as the row ran it: every prompt queued at once, max_num_seqs = prompts, one step
    # of up to 131,072 tokens, no chunked prefill; capplan's output tokens/s for the whole system.
    inp, out = (int(x) for x in shape.split("/"))
    prompts = row["prompts"][shape]
    r = capplan.estimate({"model": row["model"], "system": {"preset": row["system"], "count": row["count"]},
                          "parallelism": {"tp": row["tp"]}, "precision": row["precision"],
                          "inference": {"input_tokens": inp, "output_tokens": out, "max_num_seqs": prompts,
                                        "prefill_chunk_tokens": 131072, "chunked_prefill": False,
                                        "workload": {"arrival": "poisson", "rate_per_s": 1e5, "requests": prompts,
                                                     "seed": 1}}})
    return float(r.inference.throughput_tokens_per_s)


def _saturated_entry(id_, label, metric, published, modelled, row, shape):
    gap = row.get("known_gap") or row.get("known_gap_shapes", {}).get(shape)
    return _entry(id_, label, "throughput_saturated", metric, published, modelled, row,
                  "TensorRT-LLM perf-overview (trtllm-bench)", gap=gap, role_note=row.get("role_note"))


def _serving_rows(serving):
    out = []
    for n, row in enumerate(serving["new_model_saturated"]):
        adp = " attention-dp" if row["attention_dp"] else ""
        out += [_saturated_entry(f"published_serving new_model_saturated[{n}]", f"{row['model']} {row['gpu']} tp{row['tp']}{adp} {shape}",
                                 "output tokens/s per GPU", published, _new_model_saturated(row, shape), row, shape)
                for shape, published in row["output_tokens_per_s"].items()]
    for n, row in enumerate(serving["vllm_offline_saturated"]):
        for shape, total in row["total_tokens_per_s"].items():
            isl, osl = (int(x) for x in shape.split("/"))
            out += [_entry(f"published_serving vllm_offline_saturated[{n}]",
                           f"{row['model']} {row['precision']['weights']} {row['count']} x {row['system']} tp{row['tp']} {shape}",
                           "throughput_saturated",
                           "output tokens/s (published total x output / (input + output))", total * osl / (isl + osl),
                           _vllm_offline_saturated(row, shape), row, "AMD ROCm vLLM 0.8.3 (benchmark_throughput)",
                           gap=row.get("known_gap"), role_note=row.get("role_note"))]
    for n, row in enumerate(serving["prefix_cache"]):
        modelled, published = _prefix_cache(row), row["published"]["value"]
        out.append(_entry(f"published_serving prefix_cache[{n}]",
                          f"{row['model']} {row['precision']} {row['gpu']} hit {row['hit_rate']:g} {row['quantity']}",
                          "prefix_cache", row["published"]["kind"].split(" (")[0], published, modelled, row,
                          row["source"].split(" (")[0]))
    for n, row in enumerate(serving["kv_offload"]):
        modelled, published = _kv_offload(row), row["published"]["value"]
        out.append(_entry(f"published_serving kv_offload[{n}]",
                          f"{row['model'] or 'host link'} {row['gpu']} {row['quantity']}" +
                          (f" {row['input_tokens']} in" if row.get("input_tokens") else ""),
                          "kv_offload", row["published"]["kind"], published, modelled, row,
                          "vLLM offloading connector (blog, Dec 2025)"))
    for n, row in enumerate(serving["disaggregated_pools"]):
        modelled, published = _pool_throughput(row), row["throughput_per_node"]["value"]
        out.append(_entry(f"published_serving disaggregated_pools[{n}]",
                          f"{row['model']} {row['precision']} {row['count']} x {row['gpu']} {row['pool']} pool "
                          f"ep{row['ep']} attention-dp {row['input_tokens']} in",
                          "throughput_pool", row["throughput_per_node"]["kind"], published, modelled, row,
                          "SGLang large-scale EP (LMSYS, May 2025)"))
    for n, row in enumerate(serving["static_batch"]):
        modelled = _static_batch(row)
        published = row["throughput_tokens_per_s"]["value"]
        per_gpu = " per GPU" if "per GPU" in row["throughput_tokens_per_s"]["kind"] else ", tp group"
        out.append(_entry(f"published_serving static_batch[{n}]",
                          f"{row['model']} {row['precision']} {row['gpu']} tp{row['tp']} "
                          f"{row['input_tokens']}/{row['output_tokens']} batch {row['batch']}",
                          "throughput_static", "output tokens/s" + per_gpu, published, modelled, row,
                          row["engine"].split(" (")[0]))
    fits = {r["drafter"]: r for r in serving["speculative"] if r["role"] == "fitted"}
    for n, row in enumerate(serving["speculative"]):
        a = _fitted_acceptance(json.dumps(fits[row["drafter"]], sort_keys=True))
        modelled, published = _speculative_speedup(row, a), row["speedup"]["value"]
        out.append(_entry(f"published_serving speculative[{n}]",
                          f"{row['model']} {row['gpu']} {row['drafter']} k={row['draft_tokens']} a={a:.3f} batch {row['batch']}",
                          "speculative_speedup", "throughput ratio", published, modelled, row, row["engine"]))
    return out


def _label(row):
    c = row.get("concurrency")
    load = (f"{row['rate_per_s']}/s" if row.get("rate_per_s") else "burst" if row.get("arrival") == "burst"
            else f"batch {row['batch']}" if row["engine"].startswith("vLLM (CI build") else f"c={c}")
    tp = f" tp{row['tp']}" if row.get("tp", 1) != 1 else ""
    shape = f"{row['input_tokens']}/{row['output_tokens'] or '-'}"
    return f"{_model(row)} {row['precision'].split()[0]} {row['gpu']}{tp} {shape} {load}"


def _source(row):
    return row.get("benchmark") or row["engine"].split(" (")[0].split(",")[0]


def collect(data=None, serving=None):
    """One entry per compared quantity of every fitted or held-out row: id, label, quantity, metric,
    published, modelled, error (model / published - 1), role, fitted_for, source."""
    data = data or json.loads(DATA.read_text())
    out = _serving_rows(serving or json.loads(SERVING.read_text()))
    out += _engine_allreduce_rows(json.loads(ALLREDUCE.read_text()))
    out += _checkpoint_rows(json.loads(CHECKPOINT.read_text()))
    out += _lora_rows(json.loads(LORA.read_text()))
    out += _training_rows(json.loads(TRAINING.read_text()))
    out += _collective_rows()
    out += _gpu_rows()
    out += _gpu_training_rows()
    for n, row in _compared(data["latency_measurements"]):
        for quantity, metric, modelled, published in _modelled(row):
            out.append(_entry(f"latency_measurements[{n}]", _label(row), quantity, metric, published, modelled, row,
                              _source(row)))
    for n, table in _compared(data["saturated_throughput"]["tables"]):
        adp = " attention-dp" if table.get("parallelism", {}).get("attention_dp") else ""
        out += [_saturated_entry(f"saturated_throughput.tables[{n}] {shape}",
                                 f"{table['model']} {table.get('formats', {}).get('weights', 'fp8')} {table['accelerator']} "
                                 f"tp{table['tp']}{adp} {shape}",
                                 "output tokens/s", published, _saturated(table, shape), table, shape)
                for shape, published in table["output_tokens_per_s"].items()]
    return out


def summarise(rows):
    """{(quantity, role): {count, median_abs, median, worst, worst_id}} over collect()'s entries."""
    stats = {}
    for q in QUANTITIES:
        for role in ROLES:
            group = [r for r in rows if r["quantity"] == q and r["role"] == role]
            if group:
                worst = max(group, key=lambda r: abs(r["error"]))
                stats[q, role] = {"count": len(group), "median_abs": statistics.median(abs(r["error"]) for r in group),
                                  "median": statistics.median(r["error"] for r in group),
                                  "worst": worst["error"], "worst_id": f"{worst['id']} ({worst['label']})"}
    return stats


def _provenance():
    # The commit of the tree this was run from; the installed capplan should have been built from it.
    def git(*args):
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    return f"the installed capplan {capplan.__version__} (build it from this tree first), source tree at commit {commit}{dirty}"


_GENERATED = "Generated from "  # the line --check ignores: it names the commit, which every commit changes


def render(rows, provenance, data):
    stats = summarise(rows)
    unused = (sum(r["role"] == "unused" for r in data["latency_measurements"]),
              sum(t["role"] == "unused" for t in data["saturated_throughput"]["tables"]))
    lines = [
        "# Validation: fitted and held-out published rows",
        "",
        "Written by `python scripts/validation_report.py` (do not edit; `--check` exits 1 when this file is stale).",
        f"{_GENERATED}{provenance}.",
        "",
        "Every figure is capplan's prediction against a published, cited measurement in",
        "`tests/data/published_inference.json`, run as `tests/python/test_inference_speed.py` runs it, or in",
        "`tests/data/published_serving.json` (static batches, speculative decoding, the pools of a disaggregated",
        "deployment, KV offload and prefix caching, issue #18; saturated throughput of issue #19's new models), or in",
        "`tests/data/published_engine_allreduce.json`",
        "(serving engines' own tensor-parallel all-reduce kernels), or in `tests/data/published_checkpoint.json`",
        "(training checkpoints written to and read from a shared file system, issue #20), or in",
        "`tests/data/published_lora.json` (peak memory and run time of LoRA and QLoRA fine-tuning, issue #20), or in",
        "`tests/data/published_training.json` (pre-training step time and MFU, run as each family's test in",
        "`tests/python/test_training_speed.py` runs it; a row whose layout does not fit capplan's memory says so), or",
        "the large-message collective bus bandwidths of `tests/python/test_collectives.py` (rows cited in",
        "`tests/data/published_collectives.json`).",
        "Error = modelled / published - 1. **Fitted** rows were used to choose a constant of the model (each row's",
        "`fitted_for` says which); they cannot prove the model right. **Held-out** rows were never used to choose",
        f"one. Rows marked `unused` ({unused[0]} latency rows, {unused[1]} saturated-throughput tables) are compared by",
        "no test and left out. TPOT includes ITL rows; saturated throughput includes the",
        "bursts and the overloaded Poisson run.",
        "",
        f"Targets on held-out rows (issue #18): TTFT and TPOT median |error| <= {100 * TARGETS['ttft']:.0f}%, saturated and",
        f"static-batch throughput median <= {100 * TARGETS['throughput_saturated']:.0f}%, no row beyond "
        f"{100 * ROW_LIMIT:.0f}% without a documented cause",
        "(the causes: `tests/python/test_validation.py`).",
        "",
        "## Summary",
        "",
        "| quantity | group | rows | median \\|error\\| | median error | worst error | worst row | target |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for (q, role), s in stats.items():
        target = ""
        if role == "held_out" and q in TARGETS:
            target = f"<= {100 * TARGETS[q]:.0f}%: " + ("met" if s["median_abs"] <= TARGETS[q] else "**missed**")
        lines.append(f"| {q} | {role} | {s['count']} | {100 * s['median_abs']:.1f}% | {_pct(s['median'])} | "
                     f"{_pct(s['worst'])} | {s['worst_id']} | {target} |")
    held = [r for r in rows if r["quantity"] in ("training_step", "training_mfu") and r["role"] == "held_out"]
    if held:
        within = sum(abs(r["error"]) <= 0.12 for r in held)
        lines += ["", f"Held-out training rows (step time and MFU) within 12%: {within} of {len(held)} "
                      f"({100 * within / len(held):.0f}%; issue #20's target 80%)."]
    lora = [r for r in rows if r["quantity"] == "lora_time" and r["role"] == "held_out"]
    packed_fitted = sum("_meta.squad_packing_rule" in row.get("fitted_for", "")
                        for row in json.loads(LORA.read_text())["rows"])
    if lora:
        within = sum(abs(r["error"]) <= 0.12 for r in lora)
        plain = [abs(r["error"]) for r in lora if not r.get("gap")]
        without = (f"; the {len(plain)} without a documented gap (known_gap): median "
                   f"{100 * statistics.median(plain):.1f}%, worst {100 * max(plain):.1f}%") if plain else ""
        lines += ["", f"Held-out LoRA / QLoRA step and run-time rows within 12%: {within} of {len(lora)} "
                      f"({100 * within / len(lora):.0f}%; issue #20's 80% for training rows){without}. Seven rows "
                      "whose tensor-parallel traffic prompted sequence parallelism's FP8 all-gathers count as fitted "
                      "since (fitted_for); the rows left held out had the same median before that change. Running "
                      "NeMo's packed SQuAD samples (published_lora.json _meta.squad_packing_rule), prompted by six "
                      f"Llama-3-8B rows' miss, made every row it moved fitted ({packed_fitted}; their role_notes give "
                      "both predictions)."]
    multi = [r for r in rows if r["quantity"] == "collective_busbw" and r["role"] == "held_out" and r.get("multi_node")]
    if multi:
        within = sum(abs(r["error"]) <= 0.10 for r in multi)
        lines += ["", f"Held-out multi-node collective rows within 10% (issue #20's target): {within} of {len(multi)}."]
    band = bands(rows)["bands"]
    lines += ["", "## Uncertainty bands (models/uncertainty.json)", "",
              "Every estimate carries, beside each headline figure these quantities cover, a `<key>_range` [low, high]: "
              "the 10th and 90th percentiles of the held-out rows' signed errors turned around, "
              "[v / (1 + p90), v / (1 + p10)] for a prediction v (tokens per second and MFU of a step: "
              "[v (1 + p10), v (1 + p90)]). "
              f"A quantity needs {BAND_MIN_ROWS} held-out rows for a band: e2e latency, checkpoint save and restore "
              "and LoRA memory have fewer today; cold start, inference memory and costs have no validated rows. "
              "Where a model family (dense, or mixture-of-experts by the catalog's `moe`) has that many rows of its "
              "own, its band is given too, and an estimate of such a model takes it; a model of the other family, "
              "with fewer rows, then carries no range for that quantity (today MoE training steps and static "
              "batches, and MoE fine-tunes). A LoRA / QLoRA fine-tune's step time, time to train, tokens per second and MFU take "
              "`lora_time`'s band (its rows are fine-tunes), every other training step `training_step`'s.", "",
              "| quantity | held-out rows | p10 | p90 |", "|---|---:|---:|---:|"]
    lines += [f"| {q} | {b['rows']} | {_pct(b['p10'])} | {_pct(b['p90'])} |" for q, b in band.items()]
    beyond = [r for r in rows if r["role"] == "held_out" and abs(r["error"]) > ROW_LIMIT]
    lines += ["", f"Held-out entries beyond {100 * ROW_LIMIT:.0f}%: {len(beyond)}"
              + "".join(f"\n- {r['id']} {r['label']} ({r['quantity']}): {_pct(r['error'])}" for r in beyond), ""]
    fitted = {}
    for r in rows:
        if r["role"] == "fitted":
            fitted.setdefault(r["fitted_for"], []).append(r["id"])
    lines += ["## What the fitted rows fixed", ""]
    lines += [f"- {constant}: {', '.join(ids)}" for constant, ids in fitted.items()]
    # Held-out rows near which the model was changed (a constant fitted elsewhere, a form chosen): said, not hidden.
    lines += ["", "## Held-out rows with a note", ""]
    lines += [f"- latency_measurements[{n}]: {row['role_note']}" for n, row in enumerate(data["latency_measurements"])
              if row["role"] == "held_out" and row.get("role_note")]
    noted = {}
    for r in rows:
        if r["role"] == "held_out" and r.get("role_note"):
            noted.setdefault(r["role_note"], []).append(r["id"])
    lines += [f"- {', '.join(ids)}: {note}" for note, ids in noted.items()]
    gaps = {}
    for r in rows:
        if r.get("gap"):
            gaps.setdefault(r["gap"], []).append(f"{r['id']} {100 * r['error']:+.0f}%")
    if gaps:
        lines += ["", "## Documented gaps of the training model", ""]
        lines += [f"- {', '.join(ids)}: {gap}" for gap, ids in gaps.items()]
    lines += _gpu_section()
    lines += _gpu_training_section()
    lines += ["", "## Every row", "",
              "| row | label | quantity | metric | published | modelled | error | role | source |",
              "|---|---|---|---|---:|---:|---:|---|---|"]
    for r in sorted(rows, key=lambda r: (QUANTITIES.index(r["quantity"]), r["role"])):  # stable: file order within
        lines.append(f"| {r['id']} | {r['label']} | {r['quantity']} | {r['metric']} | {r['published']:.4g} | "
                     f"{r['modelled']:.4g} | {_pct(r['error'])} | {r['role']} | {r['source']} |")
    return "\n".join(lines) + "\n"


_GEMM_OPS = ("attention projections", "mlp / experts", "lm head and embedding")


def _gpu_section():
    """docs/validation.md's account of the steps measured on the H200 (issue #24): the calibration's layer check,
    each step against both predictions, per operator, and the unfused harness's steps for context."""
    cals = sorted(CALIBRATIONS.glob("h200-cuda-*.json"))
    if not cals:
        return []
    first = json.loads(cals[0].read_text())
    over = {b: sorted(s["measured_ms"] / s["kernels_ms"] - 1 for s in gpu_steps("compiled") if s["host_bound"] == b)
            for b in (False, True)}  # each step's wall time over its kernels' sum
    toolchain = (GPU / "logs" / "toolchain.txt").read_text().splitlines()
    torch_line = next((t for t in toolchain if t.startswith("torch")), "torch: not recorded")
    lines = ["", "## Measured on an H200 here (issue #24)", "",
             f"`scripts/device_check.sh` ran on this project's lent {first['provenance']['device']} "
             f"({first['provenance']['runtime']}; {torch_line}; clocks {first['provenance']['clocks']}) on "
             f"{first['provenance']['date'][:10]}; its logs are in `tests/data/gpu/logs`. `capplan calibrate --backend cuda` "
             "measured each model's layer GEMMs (cuBLASLt, the L2 flushed before each run), copies and launches "
             "(`models/calibration/h200-cuda-<model>.json`). `scripts/device_step.py` then ran each model's prefill and "
             "decode step with random bf16 weights: cuBLAS GEMMs, cuDNN's fused attention through "
             "`scaled_dot_product_attention`, decode replayed from a CUDA graph, and the element-wise work fused by "
             "`torch.compile` as vLLM V1 runs it (*compiled*; the rows `gpu_step` and `gpu_step_calibrated`) or left as "
             "PyTorch's separate kernels (*eager*: more kernels than an engine launches; context only, no rows). "
             "capplan predicts the same step with no engine around it (`inference.engine_overhead` zero): with the "
             "catalog's H200 efficiencies (`gpu_step`) and with the model's calibration (`gpu_step_calibrated`). A step "
             f"whose wall time exceeds the sum of its kernels by more than {100 * HOST_BOUND:.0f}% was paced by the "
             "script's Python dispatch (a short prefill outside a CUDA graph): shown, not compared. That threshold was set after "
             f"the run: the other steps came within {_pct(over[False][0])} to {_pct(over[False][-1])} of their kernels' "
             f"sum, the host-paced ones at {', '.join(_pct(x) for x in over[True])}.",
             "", "### The calibration's layer check (one layer at a 2,048-token prompt, the GEMMs measured alone)", "",
             "| model | operator | measured | catalog | error | calibrated | error |", "|---|---|---:|---:|---:|---:|---:|"]
    for f in cals:
        report = json.loads(f.read_text())["report"]
        lines += [f"| {report['model']} | {o['op']} | {1e3 * o['measured_s']:.3f} ms | {1e3 * o['predicted_before_s']:.3f} ms | "
                  f"{_pct(o['error_before'])} | {1e3 * o['predicted_after_s']:.3f} ms | {_pct(o['error_after'])} |"
                  for o in report["ops"]]
    lines += ["", "These operators are the ones the calibration fitted, so the calibrated column only shows the fit "
              "reproduces them; the catalog column is a held-out check of the catalog's GEMM efficiency.", "",
              "### Steps (compiled)", "",
              "| step | measured | kernels | catalog | error | calibrated | error | compared |",
              "|---|---:|---:|---:|---:|---:|---:|---|"]
    for st in gpu_steps("compiled"):
        (cat, _), (cal, _) = _gpu_both(st)
        m = st["measured_ms"]
        lines.append(f"| {_gpu_label(st)} | {m:.2f} ms | {st['kernels_ms']:.2f} ms | {cat:.2f} ms | {_pct(cat / m - 1)} | "
                     f"{cal:.2f} ms | {_pct(cal / m - 1)} | {'no: host-bound' if st['host_bound'] else 'yes'} |")
    lines += ["", "### Per operator (compiled, GPU-bound steps): the profiler's kernel times against capplan's operators",
              "", "GEMM = the attention projections, the MLP and the LM head; attention = the attention core; "
              "norms and element-wise = everything else the profiler saw (rotary, residual adds, SiLU, KV-cache "
              "writes, copies).", "",
              "| step | operator | measured | catalog | calibrated |", "|---|---|---:|---:|---:|"]
    for st in gpu_steps("compiled"):
        if st["host_bound"]:
            continue
        (_, cat), (_, cal) = _gpu_both(st)
        k = st["kinds_ms"]
        for name, measured, ops in (("GEMM", k.get("gemm", 0.0), _GEMM_OPS),
                                    ("attention", k.get("attention", 0.0), ("attention core",)),
                                    ("norms and element-wise", k.get("norm", 0.0) + k.get("other", 0.0),
                                     ("norms and elementwise",))):
            c, a = sum(cat.get(o, 0.0) for o in ops), sum(cal.get(o, 0.0) for o in ops)
            vs = (lambda x: f" ({_pct(x / measured - 1)})") if measured > 0 else (lambda x: " (no kernel of this kind)")
            lines.append(f"| {_gpu_label(st)} | {name} | {measured:.2f} ms | {c:.2f} ms{vs(c)} | {a:.2f} ms{vs(a)} |")
    lines += ["", "### The unfused harness (eager; context, no rows)", "",
              "| step | measured | kernels | catalog | calibrated |", "|---|---:|---:|---:|---:|"]
    for st in gpu_steps("eager"):
        (cat, _), (cal, _) = _gpu_both(st)
        m = st["measured_ms"]
        lines.append(f"| {_gpu_label(st)} | {m:.2f} ms | {st['kernels_ms']:.2f} ms | {cat:.2f} ms ({_pct(cat / m - 1)}) | "
                     f"{cal:.2f} ms ({_pct(cal / m - 1)}) |")
    return lines


def _gemm_fraction(step):
    """The measured step's GEMM kernels' FLOP rate as a fraction of the H200's bf16 peak (the catalog's): 6 FLOPs a
    weight a token (forward and both backward GEMMs) over the projections, the MLP and the LM head."""
    h, hd = step["hidden"], step["hidden"] // step["heads"]
    attn = h * (step["heads"] + 2 * step["kv_heads"]) * hd + step["heads"] * hd * h
    mlp = (3 if step["llama_style"] else 2) * h * step["ffn"]
    flops = 6.0 * step["micro_batch"] * step["seq_len"] * (step["layers"] * (attn + mlp) + h * step["vocab"])
    return flops / (step["profile"]["kinds_ms"]["gemm"] * 1e-3) / _h200_peak("bf16")


@functools.lru_cache(maxsize=None)
def _accelerator_entry(accelerator):
    """An accelerator's catalog file (models/accelerators/<name>.json), read once."""
    return json.loads((ROOT / "models" / "accelerators" / f"{accelerator}.json").read_text())


def _h200_peak(fmt):
    """The H200's dense peak in FLOP/s for a number format, from the catalog."""
    return capplan.accelerator("H200").peak(fmt).si


def _catalog_efficiency(accelerator, *path):
    """A value of an accelerator's catalog efficiency block (models/accelerators/<name>.json)."""
    node = _accelerator_entry(accelerator)["efficiency"]
    for key in path:
        node = node[key]
    return node["value"] if isinstance(node, dict) and "value" in node else node


def _gpu_training_notes(steps, rows):
    """How the two sets compare, with earlier capplan versions on the same steps, and what is left."""
    eager = [s for s in steps if not s["compiled"]]
    steps_rows = [r for r in rows if r["quantity"] == "gpu_training_step"]
    name = lambda r: r["id"][len("measured_gpu_training["):-1]  # "llama-3.2-1b compiled"
    in_first = lambda r: name(r).split(" ")[0] in GPU_TRAINING_FIRST_SET
    first = [r for r in steps_rows if in_first(r) and r["role"] == "fitted"]  # the eager ones the form was written from
    second = [r for r in steps_rows if not in_first(r)]
    med = lambda errs: 100 * statistics.median(abs(x) for x in errs)
    span = lambda errs: f"{_pct(min(errs))} to {_pct(max(errs))}"
    measured = {name(r): r["published"] for r in steps_rows}
    earlier = json.loads(GPU_TRAINING_EARLIER.read_text())["models"]
    then = "; ".join(f"{m['label']} (commit {m['commit']}): "
                     + ", ".join(f"{name(r)} {_pct(m['step_ms'][name(r)] / measured[name(r)] - 1)}" for r in second)
                     for m in earlier)
    now = {name(r): r["modelled"] for r in steps_rows}
    change = lambda names: span([now[n] / earlier[-1]["step_ms"][n] - 1 for n in names])
    eager_names = [n for n in now if not n.endswith("compiled")]
    classes = _catalog_efficiency("h200", "eager_elementwise")
    mpt = [s for s in eager if s["model"].startswith("mpt-")]
    fractions = [_gemm_fraction(s) for s in mpt]
    return ("Since 2026-12-04 capplan counts an eager step's element-wise kernels one by one "
            "(include/capplan/analysis/eager_kernels.hpp; docs/formulas.md §15): the norms' chains, the residual adds, "
            "rotate_half's rotary, the attention output's and q, k, v gradients' copies, autocast's casts of the "
            "activations and weights, and autograd's casts and sums of the gradients, with the residual stream fp32 under "
            "`autocast` (the embedding's output is fp32 and stays so through every fp32 + bf16 add). Each kernel is priced by "
            "its class at the share of the bandwidth PyTorch's kernels of that class reached in a micro-benchmark on the "
            "same H200 (models/accelerators/h200.json efficiency.eager_elementwise: " +
            ", ".join(f"{k.replace('_', ' ')} {v['value']:g}" for k, v in classes.items()) + "). The form was written "
            "after the first set's kernel lists (MPT-125M to 1.3B, TinyLlama-1.1B) had shown what was missing, so those "
            "steps count as fitted, and before the second set was measured: SmolLM2-360M, Qwen2.5-0.5B and Llama-3.2-1B "
            f"shapes, {len(second)} steps (Llama-3.2-1B also compiled, which the change does not touch), now "
            f"{span([r['error'] for r in second])} (median |error| {med([r['error'] for r in second]):.1f}%; its eager steps "
            "count as fitted since the corrections below were settled after their errors had been seen, and were held out "
            "as first predicted, commit b3ad830 below); the first set's "
            f"eager steps, re-measured, {span([r['error'] for r in first])} (median {med([r['error'] for r in first]):.1f}%). "
            f"Earlier versions of capplan on the second set's steps (tests/data/gpu/{GPU_TRAINING_EARLIER.name}): {then}. A "
            "review after the second set was measured found counts that disagreed with PyTorch's source (pow's backward "
            "runs three kernels, not one; a broadcast operand takes PyTorch's non-vectorised path, so those kernels are a "
            "class of their own; rotary's sum has a strided operand; a LoRA base in 16 bits is not cast and a frozen one "
            "casts no weight gradients), and the class efficiencies now take the median over three runs of the "
            "micro-benchmark on two machines; together these moved the eager steps by "
            f"{change(eager_names)} (the Llama-style ones by "
            f"{change([n for n in eager_names if not n.startswith('mpt-')])}). What is left: the MPT steps' GEMM kernels reach "
            f"{min(fractions):.2f}-{max(fractions):.2f} of the bf16 peak at these micro-batches, above the H200's catalog "
            f"matmul efficiency {_catalog_efficiency('h200', 'matmul', 'bf16'):g}, so capplan's GEMMs are the larger part of "
            "its excess on the larger MPT steps; compiled, Inductor's rotary kernels recompute the cos and sin table in each "
            "layer (not counted). Where the harness differs from Hugging Face's modules: one fused qkv projection (Hugging "
            "Face has three, whose input gradients are summed), rotate_half by chunk (Hugging Face slices, whose backward "
            "adds zero-filled gradients) and no qkv bias. The memory rows: capplan keeps 16 bytes a logit at the loss with "
            "`kernels: eager` (Hugging Face's shifted copy, which this loop does not make) and 8 otherwise, where this "
            "loop's unfused F.cross_entropy holds about 14, and it does not count autocast's cached 16-bit weight copies "
            "or the fp32 residual's saved inputs. These rows are a quantity of their own: the held-out training rows' count "
            "above is the published runs'.")


GPU_MOE_GEMM = GPU / "h200_moe_gemm.json"  # scripts/device_moe_gemm.py on this project's H200 (issue #20 item 2)


def _moe_gemm_section():
    """The routed experts' training GEMMs timed on the H200 at the published MoE rows' shapes, against the grouped
    ceiling capplan charges them (catalog efficiency.grouped_matmul)."""
    if not GPU_MOE_GEMM.exists():
        return []
    d = json.loads(GPU_MOE_GEMM.read_text())
    peak16, peak8 = _h200_peak("bf16"), _h200_peak("fp8")
    ceiling16 = _catalog_efficiency("h200", "grouped_matmul", "bf16")
    ceiling8 = _catalog_efficiency("h200", "grouped_matmul", "fp8")
    eff = lambda c, k, impl, peak: (c["flop_per_kind"] / (c["times_ms"][k][impl] * 1e-3) / peak
                                    if c["times_ms"][k].get(impl) else None)
    shown = lambda v: "-" if v is None else f"{v:.2f}"
    cell = lambda c, impl, peak: " / ".join(shown(eff(c, k, impl, peak)) for k in ("forward", "input_grad", "weight_grad"))
    lines = ["", "### MoE expert GEMMs of training measured on the H200 (issue #20 item 2; evidence, no rows)", "",
             f"`scripts/device_moe_gemm.py` ({d['torch']}, {d['date'][:10]}; log in `tests/data/gpu/logs/moe`) timed one "
             "rank's routed-expert GEMMs of one MoE layer at the shapes of the published Megatron-Bridge rows (balanced "
             "routing, as they forced it): the forward, input-gradient and weight-gradient products of both expert GEMMs, "
             f"per expert on {d['streams']} CUDA streams as Transformer Engine's GroupedLinear runs them on Hopper "
             "(multi_stream_cublas_gemm; replayed from a CUDA graph, so that Python's dispatch does not pace it), as one "
             "torch._grouped_mm kernel, and per expert in FP8 (e4m3, one scale per tensor, quantisation not timed; graph "
             f"too). Fractions of the H200's peak (bf16 {peak16 / 1e12:,.1f}, fp8 {peak8 / 1e12:,.1f} TFLOP/s), forward / input gradient / weight "
             f"gradient. capplan charges these GEMMs at most the H100's and H200's grouped ceiling, {ceiling16:g} of the bf16 "
             f"peak and {ceiling8:g} of the fp8 one (from inference fused-MoE layer times, routing included); the B200 rows' "
             "ceiling is B200's own, which an H200 does not measure.", "",
             "| case | published row | experts x tokens each | per expert bf16 | torch._grouped_mm bf16 | per expert fp8 |",
             "|---|---|---|---|---|---|"]
    for c in d["cases"]:
        lines.append(f"| {c['case']} | {', '.join(c['rows'])} | {c['experts']} x {c['tokens_per_expert']} | "
                     f"{cell(c, 'per_expert_bf16_graph', peak16)} | {cell(c, 'grouped_mm_bf16', peak16)} | "
                     f"{cell(c, 'per_expert_fp8_graph', peak8)} |")
    h100 = [eff(c, k, "grouped_mm_bf16", peak16) for c in d["cases"] if any("-h100-" in r for r in c["rows"])
            for k in ("forward", "input_grad", "weight_grad")]
    sweep = {c["tokens_per_expert"]: eff(c, "forward", "grouped_mm_bf16", peak16) for c in d["sweep"]}
    slow = [c["times_ms"]["forward"]["per_expert_bf16"] for c in d["sweep"] if c["tokens_per_expert"] <= 4096]
    fast = [c["times_ms"]["forward"]["per_expert_bf16_graph"] for c in d["sweep"] if c["tokens_per_expert"] <= 4096]
    lines += ["", f"At the H100 rows' shapes the bf16 expert GEMMs run at {min(h100):.2f}-{max(h100):.2f} of the peak, "
              f"about twice the ceiling of {ceiling16:g} capplan charges them, so those rows' missing time (capplan is fast "
              "on them: the documented gaps above) lies outside the expert GEMMs and is larger than their errors show: the "
              "router, permutations, all-to-all and host synchronisation, and (gpt-oss) attention with sinks are the "
              "candidates. The ceiling is left as it is until that time is found: raising it alone would move every MoE row "
              "further off. Tokens per expert at Qwen3-30B-A3B's expert shape (8 local experts; torch._grouped_mm "
              "forward): " + ", ".join(f"{m:,}: {v:.2f}" for m, v in sorted(sweep.items())) + ". Issued from Python one "
              f"GEMM at a time (not graphed), the 16 GEMMs of that sweep took {min(slow):.2f}-{max(slow):.2f} ms up to "
              f"4,096 tokens an expert against {min(fast):.2f}-{max(fast):.2f} ms replayed: host-bound."]
    return lines


def _gpu_training_section():
    """docs/validation.md's account of the training steps measured on the H200: each step against capplan's, and
    where the GPU's time went by kernel kind beside capplan's terms."""
    if not GPU_TRAINING.exists():
        return []
    d = json.loads(GPU_TRAINING.read_text())
    disp = d["dispatch"]
    lines = ["", "## Training steps measured on an H200 here (issue #20, small models)", "",
             f"`scripts/device_train_step.py` ran on this project's lent {d['device']} ({d['torch']}, CUDA {d['cuda']}, "
             f"cuDNN {d['cudnn']}) on {d['date'][:10]}; its log is in `tests/data/gpu/logs/train`. Each step is an eager "
             f"PyTorch training loop's: {d['precision']}; `scaled_dot_product_attention` (causal; cuDNN's fused flash "
             "kernel on this GPU); one micro-batch a step on one GPU, random weights and tokens. MPT shapes (llm-foundry's "
             "yamls, LayerNorm and GeLU, ALiBi left out) at the micro-batch of llm-foundry's A100 table, and Llama-style "
             "decoders with Hugging Face's eager modules (LlamaRMSNorm's fp32 chain, silu(gate) * up, rotate_half with the "
             "cos and sin table in the hidden state's dtype): TinyLlama-1.1B (the first set, with the MPT models) and the "
             "shapes of SmolLM2-360M, Qwen2.5-0.5B and Llama-3.2-1B (the second set, tied embeddings, no qkv bias); "
             "TinyLlama and Llama-3.2-1B also under `torch.compile`. capplan runs each as "
             "`tests/python/published_support.py` (`gpu_training_scenario`) describes it: `autocast`, `kernels: eager` "
             "for the eager loops, `cross_entropy: unfused`. Rows `gpu_training_step` and `gpu_training_memory` (the "
             "allocator's peak against capplan's per-device bytes less its runtime reservation): no constant was chosen "
             "with them; the first set's eager steps shaped the eager kernel model's form and count as fitted, the rest "
             "are held out. Every step is GPU-bound "
             "(its kernels' sum within a few percent of its time): the host's eager dispatch, "
             f"{disp['issue_us_per_op']:.1f} us an operator issued and {disp['autograd_fwd_bwd_us_per_op']:.1f} us one "
             "through autograd's forward and backward on this machine, stays behind kernels this large.", "",
             "| step | measured | kernels | capplan | error | peak memory | capplan | error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for st, r in _gpu_training_estimates():
        step, mem = 1e3 * r["training"]["step_time_s"], r["memory"]
        live = mem["per_device_bytes"] - mem["overhead_bytes"]
        lines.append(f"| {_gpu_training_label(st)} | {st['median_ms']:.1f} ms | {st['profile']['kernel_ms']:.1f} ms | "
                     f"{step:.1f} ms | {_pct(step / st['median_ms'] - 1)} | {st['peak_allocated_bytes'] / 1e9:.1f} GB | "
                     f"{live / 1e9:.1f} GB | {_pct(live / st['peak_allocated_bytes'] - 1)} |")
    lines += ["", "Where the GPU's time went (the profiler's kernels by kind) beside capplan's terms. *Element-wise* is every "
              "kernel that is not a GEMM, attention, the loss's softmax or the optimizer: norms, activations, residual adds, "
              "autocast's casts (the logits' cast to fp32 among them), rotary, copies and gradient accumulation. capplan's "
              "forward and backward hold its GEMMs, attention and element-wise passes together; its loss term holds the "
              "logits' casts and fills besides the softmax.", "",
              "| step | GEMM | attention | element-wise | loss softmax | optimizer | capplan forward + backward | "
              "capplan loss | capplan optimizer |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for st, r in _gpu_training_estimates():
        k = st["profile"]["kinds_ms"]
        t = {x["term"]: 1e3 * x["exposed_s"] for x in r["training"]["breakdown"]}
        lines.append(f"| {_gpu_training_label(st)} | {k.get('gemm', 0):.1f} ms | {k.get('attention', 0):.1f} ms | "
                     f"{k.get('other', 0) + k.get('norm', 0):.1f} ms | {k.get('loss', 0):.1f} ms | {k.get('optimizer', 0):.1f} ms | "
                     f"{t.get('forward', 0) + t.get('backward', 0):.1f} ms | {t.get('loss (cross-entropy)', 0):.1f} ms | "
                     f"{t.get('optimizer step', 0):.1f} ms |")
    lines += ["", _gpu_training_notes([st for st, _ in _gpu_training_estimates()], _gpu_training_rows())]
    lines += _moe_gemm_section()
    return lines


def bands(rows):
    """models/uncertainty.json's content: per quantity, the 10th and 90th percentiles of the held-out rows' signed
    errors (statistics.quantiles, inclusive method: with few rows they approach the smallest and largest); and per
    quantity and model family ("<quantity>.dense", "<quantity>.moe") where the family has enough rows: an estimate
    takes its model's family's band; a model whose family has too few rows while the other family has a band gets
    none (the pooled rows would be mostly the other family's); with no family band, the quantity's (issue #22
    item 5: "that model family's errors")."""
    out = {}

    def band(key, errors):
        if len(errors) < BAND_MIN_ROWS:
            return
        deciles = statistics.quantiles(sorted(errors), n=10, method="inclusive")
        out[key] = {"p10": round(deciles[0], 3) + 0.0, "p90": round(deciles[-1], 3) + 0.0, "rows": len(errors)}  # no -0.0

    for q in BAND_QUANTITIES:
        held = [r for r in rows if r["quantity"] == q and r["role"] == "held_out"]
        band(q, [r["error"] for r in held])
        for family in ("dense", "moe"):
            band(f"{q}.{family}", [r["error"] for r in held if model_family(r.get("model")) == family])
    return {"$comment": "Written by scripts/validation_report.py from the held-out rows of docs/validation.md; do not edit.",
            "method": "10th and 90th percentiles of the signed relative error (modelled / published - 1) of the held-out "
                      "rows of each quantity, and of each model family's rows (<quantity>.dense, <quantity>.moe: an "
                      "estimate takes its model's family's band; none where its family has too few rows but the other "
                      "family has a band; the quantity's where neither family has one); a prediction v puts the "
                      "measurement in [v / (1 + p90), v / (1 + p10)] "
                      f"(bands of fewer than {BAND_MIN_ROWS} rows are not given)",
            "bands": out}


def _comparable(text):
    return [line for line in text.splitlines() if not line.startswith(_GENERATED)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/validation.md differs from what would be written")
    args = ap.parse_args(argv)
    data = json.loads(DATA.read_text())
    rows = collect(data)
    text = render(rows, _provenance(), data)
    band_text = json.dumps(bands(rows), indent=2) + "\n"
    if args.check:
        stale = not DOC.exists() or _comparable(DOC.read_text()) != _comparable(text)
        stale_bands = not BANDS.exists() or BANDS.read_text() != band_text
        print(f"{DOC} is {'stale: run python scripts/validation_report.py' if stale else 'up to date'}")
        print(f"{BANDS} is {'stale: run python scripts/validation_report.py' if stale_bands else 'up to date'}")
        return 1 if stale or stale_bands else 0
    DOC.write_text(text)
    BANDS.write_text(band_text)
    print(f"wrote {DOC} and {BANDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
