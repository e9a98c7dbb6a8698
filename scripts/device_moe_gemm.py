"""Times the routed experts' GEMMs of MoE training on one CUDA GPU (issue 20, item 2: grouped GEMM efficiency by expert
size and tokens per expert in training, forward and both backward GEMMs), for comparison with the grouped-GEMM ceiling
capplan takes from published inference kernels (catalog efficiency.grouped_matmul; docs/validation.md, "MoE expert
GEMMs measured on an H200 here").

One case is one rank's local experts of one MoE layer: E experts, each receiving m tokens (balanced routing, as the
published runs forced), hidden size h, expert width w (gated: the first GEMM writes 2w). Per expert and GEMM the three
products of a training step: forward Y = X W, input gradient dX = dY W^T, weight gradient dW = X^T dY.
Two ways to run them:
- per_expert: one cuBLAS GEMM per expert (torch.mm), issued round-robin on 4 CUDA streams. This is Transformer Engine's
  GroupedLinear on Hopper by default (Megatron-Core's moe_grouped_gemm): multi_stream_cublas_gemm over
  detail::num_compute_streams = 4; CUTLASS grouped GEMM only with NVTE_USE_CUTLASS_GROUPED_GEMM=1.
- grouped_mm: torch._grouped_mm, one CUTLASS grouped kernel over all experts (token offsets on the device).
Each in bf16 and, per expert, in FP8 (torch._scaled_mm, e4m3 with one scale per tensor: Transformer Engine's current
scaling recipe's GEMM; the quantisation kernels are not timed). The per-expert loops are also captured in a CUDA graph
and replayed (*_graph): issued from Python one GEMM at a time they are host-bound below several thousand tokens an
expert, which Transformer Engine's C++ loop is not to that degree.
A dense GEMM of the same total work (M = E x m) is timed beside them. Times are CUDA events over all of a case's GEMMs
of one kind (all experts), the median of 20 runs. Random data.
Usage (on the device): python3 scripts/device_moe_gemm.py -o moe_gemm.json
"""
import argparse
import json
import statistics
import sys
import time

import torch

from device_step import timed  # scripts/ is on the path when this script runs

# The local experts of one rank in each published H100/B200 Megatron-Bridge MoE row (tests/data/published_training.json),
# tokens per expert m = ep x tokens per rank x top-k / experts: name, E local, m, hidden, width, row ids.
CASES = [
    ("gpt-oss-120b ep8 mb1", 16, 1024, 2880, 2880, ["mbridge2604-h100-gptoss120b-64gpu"]),
    ("gpt-oss-120b ep8 mb4", 16, 4096, 2880, 2880, ["mbridge2604-b200-gptoss120b-64gpu"]),
    ("qwen3-30b-a3b ep16 mb1", 8, 4096, 2048, 768, ["mbridge2604-h100-qwen3_30b_a3b-16gpu"]),
    ("qwen3-30b-a3b ep8 mb4", 16, 8192, 2048, 768, ["mbridge2604-b200-qwen3_30b_a3b-8gpu"]),
    ("qwen3-235b-a22b ep32 sp2", 4, 4096, 4096, 1536, ["mbridge2604-h100-qwen3_235b_a22b-256gpu"]),
    ("qwen3-235b-a22b ep8 mb1", 16, 2048, 4096, 1536, ["mbridge2604-b200-qwen3_235b_a22b-256gpu"]),
    ("deepseek-v3 ep64 sp2", 4, 4096, 7168, 2048, ["mbridge2509-h100-deepseekv3-1024gpu"]),
    ("deepseek-v3 ep32 mb1", 8, 4096, 7168, 2048, ["mbridge2604-b200-deepseekv3-256gpu"]),
]
# Tokens per expert swept at one shape (Qwen3-30B-A3B's experts, 8 local): efficiency against m.
SWEEP = ("qwen3-30b-a3b sweep", 8, [256, 512, 1024, 2048, 4096, 8192, 16384], 2048, 768)
STREAMS = 4


def graphed(fn, dev):
    """fn captured once in a CUDA graph (its streams forked from and joined to the capture stream) and replayed: the
    GPU's time without Python's per-GEMM dispatch, as Transformer Engine's C++ loop nearly achieves. None on the CPU."""
    if dev.type != "cuda":
        return None
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def median_ms(fn, dev, reps):
    """The median of `reps` runs after warm-up: device_step.timed's CUDA events on a GPU, the wall clock on the CPU
    (--dry-run)."""
    if dev.type == "cuda":
        return timed(fn, reps)["median_ms"]
    fn()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(runs)


def per_expert(products, dev, mm=torch.mm):
    """Runs each (a, b) product on the streams in turn, as multi_stream_cublas_gemm does, then joins them."""
    if dev.type != "cuda":
        return lambda: [mm(a, b) for a, b in products]
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]

    def run():
        main = torch.cuda.current_stream()  # at run time: the capture stream when a graph records it
        for s in streams:
            s.wait_stream(main)
        for i, (a, b) in enumerate(products):
            with torch.cuda.stream(streams[i % STREAMS]):
                mm(a, b)
        for s in streams:
            main.wait_stream(s)
    return run


def fp8_products(products, dev):
    """The same products in e4m3 with one scale per tensor, and the GEMM that runs one (torch._scaled_mm wants its first
    operand row-major and its second column-major: Transformer Engine keeps such transposed FP8 copies for Hopper)."""
    f8, one = torch.float8_e4m3fn, torch.ones((), device=dev)
    out = [(a.contiguous().to(f8), b.t().contiguous().to(f8).t()) for a, b in products]

    def scaled_mm(a8, b8):
        return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return out, scaled_mm


def measure(name, experts, m, hidden, width, dev, reps, rows=()):
    dt = torch.bfloat16
    n1 = 2 * width  # gated: gate and up in one GEMM
    r = lambda *s: torch.randn(*s, device=dev, dtype=dt)  # noqa: E731
    x, h1 = r(experts, m, hidden), r(experts, m, width)                 # the two GEMMs' inputs
    w1, w2 = r(experts, hidden, n1), r(experts, width, hidden)          # their weights, [in, out]
    g1, g2 = r(experts, m, n1), r(experts, m, hidden)                   # their outputs' gradients
    # kind: (a, b) per expert, per GEMM; FLOPs 2 x m x in x out each, the same for all three kinds.
    kinds = {
        "forward": [(x[e], w1[e]) for e in range(experts)] + [(h1[e], w2[e]) for e in range(experts)],
        "input_grad": [(g1[e], w1[e].t()) for e in range(experts)] + [(g2[e], w2[e].t()) for e in range(experts)],
        "weight_grad": [(x[e].t(), g1[e]) for e in range(experts)] + [(h1[e].t(), g2[e]) for e in range(experts)],
    }
    flop = 2.0 * experts * m * (hidden * n1 + width * hidden)
    out = dict(case=name, rows=list(rows), experts=experts, tokens_per_expert=m, hidden=hidden, width=width, gated=True,
               flop_per_kind=flop, times_ms={})
    for kind, products in kinds.items():
        t = out["times_ms"].setdefault(kind, {})
        run = per_expert(products, dev)
        t["per_expert_bf16"] = median_ms(run, dev, reps)
        try:
            replay = graphed(run, dev)
            if replay:
                t["per_expert_bf16_graph"] = median_ms(replay, dev, reps)
        except Exception as e:  # the eager timings stand without it
            t["graph_error"] = f"{e.__class__.__name__}: {str(e)[:200]}"
        try:
            if dev.type != "cuda":
                raise RuntimeError("FP8 GEMMs need a GPU")
            p8, scaled_mm = fp8_products(products, dev)
            run8 = per_expert(p8, dev, scaled_mm)
            t["per_expert_fp8"] = median_ms(run8, dev, reps)
            t["per_expert_fp8_graph"] = median_ms(graphed(run8, dev), dev, reps)
            del p8
        except Exception as e:  # older GPUs and the CPU have no FP8 GEMM
            t["per_expert_fp8_error"] = f"{e.__class__.__name__}: {str(e)[:200]}"
        t["grouped_mm_bf16"] = grouped(kind, x, h1, w1, w2, g1, g2, dev, reps, t)
    # The same work as one dense GEMM of E x m tokens (the forward's two shapes).
    xd, hd = x.reshape(-1, hidden), h1.reshape(-1, width)
    wd1, wd2 = w1[0].contiguous(), w2[0].contiguous()
    out["dense_forward_ms"] = median_ms(lambda: (torch.mm(xd, wd1), torch.mm(hd, wd2)), dev, reps)
    return out


def colmajor(t):
    """The same values with the last two dimensions column-major (the layout torch._grouped_mm's second operand takes)."""
    return t.transpose(-2, -1).contiguous().transpose(-2, -1)


def grouped(kind, x, h1, w1, w2, g1, g2, dev, reps, t):
    """torch._grouped_mm over all experts, operands laid out as PyTorch's own tests of it lay them (first row-major,
    second column-major; the copies are made before timing): forward and input gradients with offsets on the tokens
    (2-D x 3-D), weight gradients with offsets on the reduced dimension (2-D x 2-D). None where this PyTorch or GPU has
    no such kernel (the error is kept)."""
    experts, m = x.shape[0], x.shape[1]
    offs = torch.arange(m, experts * m + 1, m, device=dev, dtype=torch.int32)
    X, H1, G1, G2 = (a.reshape(-1, a.shape[-1]) for a in (x, h1, g1, g2))
    try:
        if kind == "forward":
            a1, b1, a2, b2 = X, colmajor(w1), H1, colmajor(w2)
        elif kind == "input_grad":
            a1, b1, a2, b2 = G1, w1.transpose(1, 2), G2, w2.transpose(1, 2)
        else:
            a1, b1, a2, b2 = X.t().contiguous(), colmajor(G1), H1.t().contiguous(), colmajor(G2)
        return median_ms(lambda: (torch._grouped_mm(a1, b1, offs=offs), torch._grouped_mm(a2, b2, offs=offs)), dev, reps)
    except Exception as e:
        t["grouped_mm_error"] = f"{e.__class__.__name__}: {str(e)[:200]}"
        return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU: checks the script, measures nothing")
    args = p.parse_args()
    dev = torch.device("cpu" if args.dry_run else "cuda")
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    shrink = (lambda v: max(8, v // 64)) if args.dry_run else (lambda v: v)
    reps = 2 if args.dry_run else 20
    out = dict(command=" ".join(sys.argv), torch=torch.__version__, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               device=torch.cuda.get_device_properties(dev).name if dev.type == "cuda" else "cpu (dry run)",
               cuda=torch.version.cuda, cublas="torch's bundled cuBLAS", streams=STREAMS, cases=[], sweep=[])
    for name, e, m, h, w, rows in CASES:
        c = measure(name, e, shrink(m), shrink(h), shrink(w), dev, reps, rows)
        out["cases"].append(c)
        print(name, {k: {i: (round(v, 3) if isinstance(v, float) else v) for i, v in t.items()} for k, t in c["times_ms"].items()},
              flush=True)
    name, e, ms, h, w = SWEEP
    for m in ms:
        out["sweep"].append(measure(f"{name} m={m}", e, shrink(m), shrink(h), shrink(w), dev, reps))
        print(name, m, out["sweep"][-1]["times_ms"]["forward"], flush=True)
    json.dump(out, open(args.output, "w"), indent=1)


if __name__ == "__main__":
    main()
