"""Measures small decoders' training steps on one CUDA GPU (issue 20, item 3: small models), for comparison
with capplan's training step (docs/validation.md, "Training steps measured on an H200 here").

Each step is what an eager PyTorch training loop runs: forward under torch.autocast(bfloat16) over fp32
weights (the Hugging Face Trainer's bf16=True; Composer's amp_bf16), F.scaled_dot_product_attention (causal; on
the H200 PyTorch 2.11 runs cuDNN's fused flash kernel), F.cross_entropy over all positions' logits, backward, then
torch.optim.AdamW (fused) and zero_grad.
No FSDP and no gradient accumulation: one GPU, one micro-batch a step. Random weights and tokens.
Per model it records the step time (CUDA events), the peak memory PyTorch allocated, and one step under
PyTorch's profiler: the kernels' device time by kind and their count, whose sum against the step time is
the time the GPU waited on the host. A micro-benchmark times the host's eager dispatch per operator.

Shapes: llm-foundry's MPT yamls (GeLU MLP 4x, LayerNorm; MPT's ALiBi is left out: causal attention without a
bias) at the micro-batch of its benchmark table's A100 rows, and TinyLlama-1.1B (4 KV heads) with Hugging Face's
eager modules: LlamaRMSNorm's fp32 chain, SwiGLU as silu(gate_proj(x)) * up_proj(x), rotate_half's rotary embedding.
Where it differs from Hugging Face's modules: one fused qkv projection (Hugging Face has three: their input gradients
are summed where this one's backward concatenates q, k and v's gradients) and no qkv bias (Qwen2.5 has one). Until
2026-12-04 the rotary table was bf16; since, as Hugging Face's, it takes the hidden state's dtype (fp32 under autocast).
A micro-benchmark times PyTorch's eager element-wise kernels by class (eager_kernel_rates) for capplan's eager model.
The timing and the profile are scripts/device_step.py's (timed, kernel_times with this script's kernel kinds).
Usage (on the device):
    python3 scripts/device_train_step.py -o train.json
"""
import argparse
import json
import platform
import sys
import time

import torch
import torch.nn.functional as F

from device_step import ATTENTION_WORDS, GEMM_WORDS, kernel_times, timed  # scripts/ is on the path when this script runs

# name: layers, hidden, heads, kv_heads, ffn, vocab, sequence, micro-batch, llama-style (RMSNorm, SwiGLU, RoPE), tied
# embedding and LM head. The last three (added 2026-12-04, their configs' shapes, qkv bias left out) were chosen as a
# second set, measured after capplan's eager fp32 residual terms were written: micro-batches of 16-32k tokens.
MODELS = {
    "mpt-125m": (12, 768, 12, 12, 3072, 50368, 2048, 32, False, True),
    "mpt-350m": (24, 1024, 16, 16, 4096, 50368, 2048, 32, False, True),
    "mpt-760m": (24, 1536, 12, 12, 6144, 50368, 2048, 24, False, True),
    "mpt-1b": (24, 2048, 16, 16, 8192, 50368, 2048, 14, False, True),
    "tinyllama-1.1b": (22, 2048, 32, 4, 5632, 32000, 2048, 8, True, False),
    "smollm2-360m": (32, 960, 15, 5, 2560, 49152, 2048, 16, True, True),
    "qwen2.5-0.5b": (24, 896, 14, 2, 4864, 151936, 2048, 8, True, True),
    "llama-3.2-1b": (16, 2048, 32, 8, 8192, 128256, 2048, 8, True, True),
}


class LlamaRMSNorm(torch.nn.Module):
    """Hugging Face's LlamaRMSNorm (transformers modeling_llama.py): an fp32 chain of separate kernels, not
    torch.nn.RMSNorm's fused one; capplan's `kernels: eager` describes this chain."""

    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class Decoder(torch.nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, vocab, llama, tied):
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.llama = heads, kv_heads, hidden // heads, llama
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
        norm = (lambda: LlamaRMSNorm(hidden)) if llama else (lambda: torch.nn.LayerNorm(hidden, bias=False))
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            b = torch.nn.Module()
            b.n1, b.n2 = norm(), norm()
            b.qkv, b.o = lin(hidden, (heads + 2 * kv_heads) * self.hd), lin(heads * self.hd, hidden)
            b.up, b.down = lin(hidden, ffn), lin(ffn, hidden)
            if llama:  # Hugging Face's separate gate_proj and up_proj (contiguous outputs for silu and the product)
                b.gate = lin(hidden, ffn)
            self.blocks.append(b)
        self.norm = norm()
        self.head = lin(hidden, vocab)
        if tied:
            self.head.weight = self.embed.weight  # one matrix for the embedding and the LM head
        for p in self.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)

    @staticmethod
    def rope(x, cos, sin):  # Hugging Face's apply_rotary_pos_emb: x * cos + rotate_half(x) * sin
        a, b = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-b, a), dim=-1) * sin

    def forward(self, tokens):
        b, t = tokens.shape
        x = self.embed(tokens)
        if self.llama:  # the rotary table once a forward, as Hugging Face's rotary_emb computes it (base 10,000 for
            # every model: the base changes the values, not the kernels or their time)
            inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2, device=x.device, dtype=torch.float32) / self.hd))
            ang = torch.outer(torch.arange(t, device=x.device, dtype=torch.float32), inv)
            ang = torch.cat((ang, ang), dim=-1)
            # Hugging Face's LlamaRotaryEmbedding returns cos and sin in the hidden state's dtype: fp32 here (the
            # embedding's output under autocast), so q * cos is fp32 and SDPA's autocast casts it back to bf16.
            cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        for blk in self.blocks:
            q, k, v = blk.qkv(blk.n1(x)).split((self.heads * self.hd, self.kv_heads * self.hd, self.kv_heads * self.hd), -1)
            q, k, v = (y.view(b, t, -1, self.hd).transpose(1, 2) for y in (q, k, v))
            if self.llama:
                q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
            x = x + blk.o(a.transpose(1, 2).reshape(b, t, -1))
            h = blk.n2(x)
            h = F.silu(blk.gate(h)) * blk.up(h) if self.llama else F.gelu(blk.up(h))
            x = x + blk.down(h)
        return self.head(self.norm(x))


def kernel_kind(name):
    """A training step's kernel by its name: GEMM, attention, norm, loss, optimizer, or other (element-wise
    work: activations, residual adds, autocast's casts, gradient accumulation, copies)."""
    n = name.lower()
    if any(w in n for w in ATTENTION_WORDS):
        return "attention"
    if any(w in n for w in GEMM_WORDS):
        return "gemm"
    if any(w in n for w in ("softmax", "nll_loss", "cross_entropy")):
        return "loss"
    if any(w in n for w in ("adam", "multi_tensor", "foreach")):
        return "optimizer"
    if "norm" in n:
        return "norm"
    return "other"


def step_fn(model, opt, tokens, labels):
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens)
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def dispatch_cost(dev):
    """Host time per eager operator: 2,000 in-place adds on a 16-element tensor issued without a sync (the
    forward's case), and a 200-operator autograd chain's forward and backward (training's case)."""
    x = torch.zeros(16, device=dev)
    for _ in range(200):
        x.add_(1.0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2000):
        x.add_(1.0)
    issue = (time.perf_counter() - t0) / 2000
    torch.cuda.synchronize()
    w = torch.ones(16, device=dev, requires_grad=True)

    def chain():
        y = w
        for _ in range(200):
            y = y * 1.0001
        y.sum().backward()
    chain()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        chain()
    torch.cuda.synchronize()
    per_op = (time.perf_counter() - t0) / (5 * 200)
    return dict(issue_us_per_op=issue * 1e6, autograd_fwd_bwd_us_per_op=per_op * 1e6)


def eager_kernel_rates(dev, tokens=32768, hidden=2048, heads=32):
    """Memory bandwidth PyTorch's eager kernels reach at a training step's sizes (tokens x hidden elements), by the
    kernel classes capplan's eager element-wise model (include/capplan/analysis/eager_kernels.hpp) prices: contiguous
    same-dtype element-wise (vectorised), mixed-dtype element-wise and dtype casts, strided element-wise and copies
    (transposed head views, rotary), broadcast operands (a row's scale, a weight vector, the rotary table: PyTorch's
    non-vectorised path too), and reductions (norm kernels, row means). Bytes per kernel from its
    operands' dtypes; each kernel the median of 20 runs."""
    n, f32, bf = tokens * hidden, torch.float32, torch.bfloat16
    a32, b32 = torch.randn(tokens, hidden, device=dev), torch.randn(tokens, hidden, device=dev)
    a16, b16 = a32.to(bf), b32.to(bf)
    w32 = torch.randn(hidden, device=dev)
    q = torch.randn(tokens // 2048, 2048, heads, hidden // heads, device=dev, dtype=bf).transpose(1, 2)  # [b, h, t, d] view
    cos16 = torch.randn(2048, hidden // heads, device=dev, dtype=bf)
    half = q.chunk(2, dim=-1)[1]
    qt = torch.randn(tokens // 2048, heads, 2048, hidden // heads, device=dev, dtype=bf).transpose(1, 2)  # needs a copy
    qc = q.contiguous()  # [b, h, t, d] laid out as such
    rs = torch.rand(tokens, 1, device=dev) + 0.5
    mean, rstd = torch.zeros(tokens, 1, device=dev), torch.ones(tokens, 1, device=dev)
    g32 = torch.randn(tokens, hidden, device=dev)
    kernels = [  # name, class, bytes, fn
        ("fp32 add (gradient accumulation)", "contiguous", 12 * n, lambda: a32 + b32),
        ("bf16 mul (silu(gate) * up)", "contiguous", 6 * n, lambda: a16 * b16),
        ("bf16 gelu", "contiguous", 4 * n, lambda: torch.nn.functional.gelu(a16)),
        ("fp32 pow 2", "contiguous", 8 * n, lambda: a32.pow(2)),
        ("fp32 + bf16 add (autocast residual)", "mixed_dtype", 10 * n, lambda: a32 + b16),
        ("fp32 to bf16 cast", "mixed_dtype", 6 * n, lambda: a32.to(bf)),
        ("bf16 to fp32 cast", "mixed_dtype", 6 * n, lambda: a16.to(f32)),
        ("bf16 view x bf16 cos (rotary)", "strided", 4 * n, lambda: q * cos16),
        ("neg of a strided half (rotate_half)", "strided", 2 * n, lambda: -half),
        ("transpose + reshape copy (attention output)", "strided", 4 * n, lambda: qt.reshape(tokens, hidden)),
        ("fp32 x row scale (x * rsqrt)", "broadcast", 8 * n, lambda: a32 * rs),
        ("fp32 weight x fp32 (the norm's weight)", "broadcast", 8 * n, lambda: w32 * a32),
        ("contiguous bf16 x bf16 cos (rotary's gradient)", "broadcast", 4 * n, lambda: qc * cos16),
        ("fp32 layer_norm forward", "reduction", 8 * n, lambda: torch.nn.functional.layer_norm(a32, (hidden,), w32)),
        # grad-input reads dy and x and writes dx (12 n); the weight's gradient reads dy and x again (8 n)
        ("fp32 layer_norm backward", "reduction", 20 * n,
         lambda: torch.ops.aten.native_layer_norm_backward(g32, a32, [hidden], mean, rstd, w32, None, [True, True, False])),
        ("fp32 row mean", "reduction", 4 * n, lambda: a32.mean(-1, keepdim=True)),
    ]
    out = []
    for name, cls, nbytes, fn in kernels:
        r = timed(fn, reps=20)
        out.append(dict(kernel=name, kernel_class=cls, bytes=nbytes, median_ms=r["median_ms"],
                        gb_per_s=nbytes / (r["median_ms"] * 1e-3) / 1e9))
        print(f"{name}: {out[-1]['gb_per_s']:.0f} GB/s", flush=True)
    return out


def measure(name, dev, layers, hidden, heads, kv, ffn, vocab, seq, mb, llama, tied, compiled=False):
    model = Decoder(layers, hidden, heads, kv, ffn, vocab, llama, tied).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tokens = torch.randint(0, vocab, (mb, seq), device=dev)
    labels = torch.randint(0, vocab, (mb, seq), device=dev)
    # Compiled, Inductor fuses the norms, activations, residual adds and casts into Triton kernels.
    step = step_fn(torch.compile(model) if compiled else model, opt, tokens, labels)
    try:
        torch.cuda.reset_peak_memory_stats()
        r = timed(step, reps=6)
        peak = torch.cuda.max_memory_allocated()
        params = sum(p.numel() for p in model.parameters())
        print(f"{name}{' compiled' if compiled else ''}: micro-batch {mb}, {r['median_ms']:.1f} ms a step, peak {peak / 2**30:.1f} GiB, "
              f"{params / 1e6:.0f}M parameters", flush=True)
        return dict(model=name, layers=layers, hidden=hidden, heads=heads, kv_heads=kv, ffn=ffn, vocab=vocab, seq_len=seq,
                    micro_batch=mb, llama_style=llama, tied=tied, compiled=compiled, parameters=params, **r, peak_allocated_bytes=peak,
                    profile=kernel_times(step, kind=kernel_kind, top=None))
    finally:
        opt.zero_grad(set_to_none=True)
        del model, opt, step, tokens, labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.add_argument("--eager-kernels-only", action="store_true", help="the eager kernels' micro-benchmark alone")
    p.add_argument("--compiled", nargs="*", default=["tinyllama-1.1b", "llama-3.2-1b"], help="models measured again compiled")
    args = p.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    out = dict(command=" ".join(sys.argv), device=torch.cuda.get_device_properties(dev).name, torch=torch.__version__, cuda=torch.version.cuda,
               cudnn=torch.backends.cudnn.version(), host_cpu=cpu, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               precision="torch.autocast bfloat16 over fp32 weights; fp32 AdamW (fused=True); fp32 cross-entropy",
               dispatch=dispatch_cost(dev), eager_kernels=eager_kernel_rates(dev), steps=[])
    print("dispatch", out["dispatch"], flush=True)
    if args.eager_kernels_only:
        args.models, args.compiled = [], []
    for name, compiled in [(m, False) for m in args.models] + [(m, True) for m in args.compiled]:
        layers, hidden, heads, kv, ffn, vocab, seq, mb, llama, tied = MODELS[name]
        while mb >= 1:  # the table's micro-batch, halved while it does not fit (recorded)
            try:
                out["steps"].append(measure(name, dev, layers, hidden, heads, kv, ffn, vocab, seq, mb, llama, tied, compiled))
                break
            except torch.OutOfMemoryError:
                print(f"{name}: micro-batch {mb} does not fit", flush=True)
                out.setdefault("did_not_fit", []).append(dict(model=name, micro_batch=mb, compiled=compiled))
                mb //= 2
            except Exception as e:  # the other models still run
                print(f"{name}: {e.__class__.__name__}: {e}", flush=True)
                out.setdefault("errors", []).append(dict(model=name, compiled=compiled, error=f"{e.__class__.__name__}: {e}"[:2000]))
                break
            finally:
                torch.cuda.empty_cache()
        json.dump(out, open(args.output, "w"), indent=1)  # after each model: a timeout keeps what was measured
    json.dump(out, open(args.output, "w"), indent=1)


if __name__ == "__main__":
    main()
