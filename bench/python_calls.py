"""What a call costs from Python beside what the core costs (issue #23 items 0 and 1): capplan.estimate of a static
batch and of a training step (as a dict, and as a capplan.Scenario read once, with one figure read from the typed
result), a variant made with Scenario.replace, and a sweep per point (every figure of the full rows, every figure as
columns, four headline columns). With --cpp the core's own figures (Google Benchmark's, from build/cpp) are printed
beside them. Speed is measured here, never asserted by a test.

Run: python bench/python_calls.py [--cpp build/cpp] [--repeat 5]   (an installed capplan, pandas for the sweeps)"""
import argparse
import json
import subprocess
import time
from pathlib import Path

import capplan

STATIC = {"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8}, "parallelism": {"tp": 8},
          "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}}
TRAINING = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
            "training": {"seq_len": 4096, "global_batch": 512}}
SWEEP_STATIC = ({"model": "Llama-3.1-70B", "system": "HGX-H200",
                 "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}},
                {"parallelism.tp": [1, 2, 4, 8], "inference.batch": list(range(1, 257))},
                ["inference.ttft_s", "inference.tpot_s", "inference.throughput_tokens_per_s", "memory.fits"])
SWEEP_TRAINING = (TRAINING, {"parallelism.tp": [1, 2, 4, 8], "training.global_batch": [64 * b for b in range(1, 257)]},
                  ["training.step_time_s", "training.mfu", "training.tokens_per_s", "memory.fits"])


def per_call_us(call, n, repeat):
    """The best of `repeat` runs of `n` calls, in microseconds per call (the best: least disturbed by the machine)."""
    call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            call()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def per_point_us(scenario, grid, repeat, **kwargs):
    points = 1
    for values in grid.values():
        points *= len(values)
    return per_call_us(lambda: capplan.sweep(scenario, grid, progress=False, workers=1, **kwargs), 1, repeat) / points


def core_figures(build: Path):
    """The core's microseconds per estimate and per sweep point, from the C++ benchmarks."""
    out = {}
    for binary, pattern in (("capplan_bench_catalog", "estimate_(only|headline)_(static_batch|training)$"),
                            ("capplan_bench_search", "scenario_sweep")):
        text = subprocess.run([str(build / binary), f"--benchmark_filter={pattern}", "--benchmark_format=json",
                               "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                              capture_output=True, text=True, check=True).stdout
        for b in json.loads(text)["benchmarks"]:
            if b.get("aggregate_name") != "median":
                continue
            name = b["run_name"]
            if "points" in b:  # a sweep: per point
                out[name] = b["real_time"] * {"ms": 1e3, "us": 1.0}[b["time_unit"]] / b["points"]
            else:
                out[name] = b["real_time"] * {"ms": 1e3, "us": 1.0, "ns": 1e-3}[b["time_unit"]]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpp", type=Path, help="the C++ build folder (build/cpp) for the core's own figures")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    r = args.repeat
    core = core_figures(args.cpp) if args.cpp else {}
    rows = []
    for label, scenario, key, core_key in (("static batch", STATIC, "inference.ttft_s", "estimate_only_static_batch"),
                                           ("training step", TRAINING, "training.step_time_s", "estimate_only_training")):
        parsed = capplan.Scenario(scenario)
        text = json.dumps(scenario)
        rows += [(f"JSON text in, dict out (the path before), {label}",
                  per_call_us(lambda: capplan._core.estimate_object(text, "."), 300, r), core.get(core_key)),
                 (f"estimate(dict), {label}", per_call_us(lambda: capplan.estimate(scenario), 300, r), None),
                 (f"estimate(dict).to_dict(), {label}", per_call_us(lambda: capplan.estimate(scenario).to_dict(), 300, r),
                  None),
                 (f"estimate(Scenario), {label}", per_call_us(lambda: capplan.estimate(parsed), 1000, r),
                  core.get(core_key.replace("only", "headline"))),
                 (f"estimate(Scenario).value(key), {label}",
                  per_call_us(lambda: capplan.estimate(parsed).value(key), 1000, r), core.get(core_key.replace("only", "headline"))),
                 (f"estimate(Scenario).to_dict(), {label}",
                  per_call_us(lambda: capplan.estimate(parsed).to_dict(), 300, r), core.get(core_key)),
                 (f"Scenario.replace + estimate, {label}",
                  per_call_us(lambda: capplan.estimate(parsed.replace({"system.count": 8 if label == "static batch" else 64})),
                              1000, r), None)]
    for label, (scenario, grid, headline), arg in (("static batch", SWEEP_STATIC, "0"), ("training step", SWEEP_TRAINING, "1")):
        small = {k: v[:32] if len(v) > 32 else v for k, v in grid.items()}  # the full rows cost ~0.3 ms a point
        rows += [(f"sweep, full rows, per point, {label}", per_point_us(scenario, small, r), None),
                 (f"sweep(columns='all'), per point, {label}", per_point_us(scenario, grid, r, columns="all"),
                  core.get(f"scenario_sweep/{arg}/0")),
                 (f"sweep(columns=4 headline), per point, {label}", per_point_us(scenario, grid, r, columns=headline),
                  core.get(f"scenario_sweep/{arg}/1"))]
    width = max(len(name) for name, _, _ in rows)
    print(f"{'call':<{width}}  {'Python us':>10}  {'core us':>8}")
    for name, python, cpp in rows:
        print(f"{name:<{width}}  {python:>10.1f}  {'' if cpp is None else f'{cpp:.1f}':>8}")


if __name__ == "__main__":
    main()
