"""Measures one dense decoder's prefill and decode step end to end on a CUDA GPU (issue 24, item 4),
for comparison with capplan's predictions (docs/validation.md, "GPU calibration"). Random bf16
weights in a plain PyTorch forward: the GEMMs are cuBLAS's (what `capplan calibrate --backend cuda`
times through cuBLASLt), attention is PyTorch's scaled_dot_product_attention, norms, rotary,
SiLU and residual adds are PyTorch's element-wise kernels. Decode steps are replayed from a CUDA
graph, so host launch time is left out as in engines that capture graphs (vLLM, SGLang, TRT-LLM).

Usage (on the device machine): python3 scripts/device_step.py models/llm/llama-3.1-8b.json -o out.json
Model families: llama-style dense decoders (llama, mistral, qwen2, qwen3 with its q/k norms).
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def config(path):
    spec = json.load(open(path))
    c = spec["config"]
    if c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts"):
        sys.exit(f"{spec['name']}: a MoE model; this script measures dense decoders")
    hidden, heads = c["hidden_size"], c["num_attention_heads"]
    return spec["name"], dict(hidden=hidden, heads=heads, kv_heads=c.get("num_key_value_heads", heads),
                              head_dim=c.get("head_dim") or hidden // heads, mlp=c["intermediate_size"],
                              layers=c["num_hidden_layers"], vocab=c["vocab_size"], eps=c.get("rms_norm_eps", 1e-5),
                              theta=c.get("rope_theta", 10000.0), qk_norm=c.get("model_type") == "qwen3")


class Model:
    """The weights (fused QKV and gate/up projections, as vLLM loads them) and a KV cache."""

    def __init__(self, m, batch, max_len, dev, compiled=False):
        def w(*shape):
            return (torch.randn(*shape, device=dev, dtype=torch.bfloat16) * 0.02)

        self.m = m
        q, kv = m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
        self.layers = [dict(qkv=w(q + 2 * kv, m["hidden"]), o=w(m["hidden"], q), gate_up=w(2 * m["mlp"], m["hidden"]),
                            down=w(m["hidden"], m["mlp"]), n1=1 + w(m["hidden"]), n2=1 + w(m["hidden"]),
                            qn=1 + w(m["head_dim"]), kn=1 + w(m["head_dim"])) for _ in range(m["layers"])]
        self.embed, self.head, self.final_norm = w(m["vocab"], m["hidden"]), w(m["vocab"], m["hidden"]), 1 + w(m["hidden"])
        shape = (batch, m["kv_heads"], max_len, m["head_dim"])
        self.cache = [(torch.empty(shape, device=dev, dtype=torch.bfloat16),
                       torch.empty(shape, device=dev, dtype=torch.bfloat16)) for _ in range(m["layers"])]
        inv = 1.0 / (m["theta"] ** (torch.arange(0, m["head_dim"], 2, device=dev, dtype=torch.float32) / m["head_dim"]))
        angles = torch.outer(torch.arange(max_len, device=dev, dtype=torch.float32), inv)
        self.cos, self.sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
        # Compiled, Inductor fuses the element-wise work (rotary, residual add + norm, SiLU x up) into
        # Triton kernels as vLLM V1's torch.compile does; the GEMMs and attention stay library calls.
        self.layer = torch.compile(layer_step, dynamic=False) if compiled else layer_step

    def forward(self, tokens, start):
        """tokens [b, t] at positions start..start+t-1; returns the last position's logits [b, vocab]."""
        m = self.m
        pos = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        cos, sin = self.cos[pos], self.sin[pos]
        x = F.embedding(tokens, self.embed)
        for layer, (kc, vc) in zip(self.layers, self.cache):
            x = self.layer(x, layer, kc, vc, cos, sin, start, m)
        return F.linear(F.rms_norm(x[:, -1], (m["hidden"],), self.final_norm, m["eps"]), self.head)


def rope(x, cos, sin):  # x [b, h, t, d]; cos, sin [t, d / 2]
    a, b = x.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


def layer_step(x, layer, kc, vc, cos, sin, start, m):
    """One decoder layer on x [b, t, hidden] at positions start..start+t-1, its K and V written to the cache."""
    b, t, _ = x.shape
    hd, H, K = m["head_dim"], m["heads"], m["kv_heads"]
    h = F.rms_norm(x, (m["hidden"],), layer["n1"], m["eps"])
    q, k, v = F.linear(h, layer["qkv"]).split((H * hd, K * hd, K * hd), dim=-1)
    q, k, v = (y.view(b, t, -1, hd).transpose(1, 2) for y in (q, k, v))
    if m["qk_norm"]:
        q, k = F.rms_norm(q, (hd,), layer["qn"], m["eps"]), F.rms_norm(k, (hd,), layer["kn"], m["eps"])
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    kc[:, :, start:start + t], vc[:, :, start:start + t] = k, v
    o = F.scaled_dot_product_attention(q, kc[:, :, :start + t], vc[:, :, :start + t], is_causal=t > 1,
                                       enable_gqa=H != K)
    x = x + F.linear(o.transpose(1, 2).reshape(b, t, H * hd), layer["o"])
    h = F.rms_norm(x, (m["hidden"],), layer["n2"], m["eps"])
    g, u = F.linear(h, layer["gate_up"]).chunk(2, dim=-1)
    return x + F.linear(F.silu(g) * u, layer["down"])


def timed(fn, reps, warmup=3):
    """Median, 10th and 90th percentile, least and most of `reps` runs in ms, each timed by CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return dict(median_ms=statistics.median(times), p10_ms=times[len(times) // 10],
                p90_ms=times[min(len(times) - 1, len(times) * 9 // 10)], min_ms=times[0], max_ms=times[-1], runs=reps)


# Words in the names of attention kernels (FlashAttention, cuDNN's fused attention) and of GEMM kernels (cuBLAS's nvjet
# and xmma, CUTLASS, their split-K reductions), for the classifiers here and in device_train_step.py.
ATTENTION_WORDS = ("flash", "fmha", "sdpa", "attention", "cudnn")
GEMM_WORDS = ("gemm", "nvjet", "cutlass", "xmma", "sm90_", "sm80_", "splitkreduce")


def kernel_kind(name):
    """GEMM, attention, norm or other (element-wise work and copies) by a kernel's name: Inductor's
    Triton kernels first (their names list the fused ops, "attention" among them), then cuDNN's
    attention (whose names say sm90 too), then the GEMM libraries."""
    name = name.lower()
    if name.startswith("triton_"):
        return "norm" if "norm" in name else "other"
    if any(w in name for w in ATTENTION_WORDS):
        return "attention"
    if any(w in name for w in GEMM_WORDS):
        return "gemm"
    return "norm" if "norm" in name else "other"


def kernel_times(fn, kind=kernel_kind, top=12):
    """One run (after one unprofiled) under PyTorch's profiler: device ms and kernel count per kind (`kind` names
    a kernel's: by default GEMM, attention, norm, other element-wise and copies), their sums, and the `top`
    costliest kernels (every one with top=None); an error text where the profiler cannot run."""
    try:
        from torch.profiler import ProfilerActivity, profile
        fn()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        kinds, count, kernels = {}, {}, []
        for e in prof.key_averages():
            us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
            if us <= 0 or e.key.startswith("ProfilerStep"):
                continue
            k = kind(e.key)
            kinds[k] = kinds.get(k, 0.0) + us / 1e3
            count[k] = count.get(k, 0) + e.count
            kernels.append(dict(name=e.key[:160], kind=k, calls=e.count, ms=us / 1e3))
        kernels.sort(key=lambda k: -k["ms"])
        return dict(kinds_ms=kinds, kernels_by_kind=count, kernel_ms=sum(kinds.values()),
                    kernel_count=sum(count.values()), kernels=kernels[:top] if top else kernels)
    except Exception as e:  # the timings above stand without it
        return dict(error=f"{e.__class__.__name__}: {e}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_json")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--prefill", type=int, nargs="+", default=[512, 2048, 8192], help="prompt lengths at batch 1")
    p.add_argument("--decode-batch", type=int, nargs="+", default=[1, 16, 64, 256])
    p.add_argument("--context", type=int, default=2048, help="cached tokens each decode step attends to")
    p.add_argument("--compile", action="store_true", help="the layer through torch.compile (Inductor)")
    args = p.parse_args()
    name, m = config(args.model_json)
    torch._dynamo.config.cache_size_limit = 64  # one compiled layer per shape
    dev = torch.device("cuda")
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(dev)
    out = dict(model=name, device=props.name, torch=torch.__version__, cuda=torch.version.cuda,
               cublas="torch's bundled cuBLAS", date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               weights="bf16 random", kv_cache="bf16", compiled=args.compile, prefill=[], decode=[])
    with torch.inference_mode():
        model = Model(m, 1, max(args.prefill) + 1, dev, args.compile)
        for t in args.prefill:
            tokens = torch.randint(0, m["vocab"], (1, t), device=dev)
            r = timed(lambda: model.forward(tokens, 0), reps=10)
            out["prefill"].append(dict(batch=1, tokens=t, **r, profile=kernel_times(lambda: model.forward(tokens, 0))))
            print(f"{name} prefill {t:>5} tokens: {r['median_ms']:.2f} ms", flush=True)
        graph = None
        for batch in args.decode_batch:
            del model, graph  # the previous weights, cache and graph pool
            torch.cuda.empty_cache()
            model = Model(m, batch, args.context + 1, dev, args.compile)
            for kc, vc in model.cache:  # a filled cache: what a step reads is real data
                kc.normal_(0, 1), vc.normal_(0, 1)
            tokens = torch.randint(0, m["vocab"], (batch, 1), device=dev)
            step = lambda: model.forward(tokens, args.context)  # noqa: E731
            for _ in range(3):
                step()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            r = timed(graph.replay, reps=50)
            eager = timed(step, reps=10)
            out["decode"].append(dict(batch=batch, context=args.context, eager_median_ms=eager["median_ms"], **r,
                                      profile=kernel_times(step)))
            print(f"{name} decode batch {batch:>3} at {args.context}: {r['median_ms']:.3f} ms "
                  f"(graph), {eager['median_ms']:.3f} ms eager", flush=True)
    json.dump(out, open(args.output, "w"), indent=1)


if __name__ == "__main__":
    main()
