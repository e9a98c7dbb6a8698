"""Writes and executes the tutorial notebooks (outputs stored). Run with an interpreter that has
capplan[notebook] installed, e.g. .venv/bin/python notebooks/make_notebooks.py after
`.venv/bin/pip install "$(ls build/dist/capplan-*.whl)[notebook]"`."""
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
SVG = "from IPython.display import SVG, display\nfrom capplan.charts import line_chart, stacked_bar\n"

NOTEBOOKS = {
    "memory_long_context": [
        new_markdown_cell("# Why does a long document run out of memory?\n\nThe KV cache grows with every token of "
                          "context and with every user at once. Llama-3.1-8B on one H100:"),
        new_code_cell("import capplan\n" + SVG +
                      "base = {'model': 'Llama-3.1-8B', 'system': {'accelerator': 'H100'},\n"
                      "        'inference': {'input_tokens': 1000, 'output_tokens': 500, 'batch': 1}}\n"
                      "points = []\n"
                      "for ctx in [2000, 8000, 32000, 64000, 128000]:\n"
                      "    r = capplan.estimate({**base, 'inference': {'input_tokens': ctx - 500, 'output_tokens': 500, 'batch': 1}})\n"
                      "    points.append((ctx, r.inference.max_batch))\n"
                      "display(SVG(line_chart('concurrent requests that fit, by context length', 'tokens per request',\n"
                      "                       'requests', [('Llama-3.1-8B, H100, bf16 KV', points)], log_x=True)))\n"
                      "points"),
        new_code_cell("kv = capplan.model('Llama-3.1-8B').kv_cache_bytes(128000)\n"
                      "print(f'One 128K-token conversation holds {kv} of KV cache (131 kB per token); '\n"
                      "      f'an fp8 cache halves it: {capplan.model(\"Llama-3.1-8B\").kv_cache_bytes(128000, kv_cache=\"fp8\")}.')"),
    ],
    "kv_by_architecture": [
        new_markdown_cell("# How does the KV cache grow with context, by architecture?\n\nFour 2025 designs on one chart: "
                          "a dense GQA model (every layer keeps every token), local/global attention (Gemma 3 keeps a "
                          "1,024-token window on five of six layers), DeepSeek Sparse Attention (the MLA latent plus "
                          "the indexer's fp8 key per token; attention work stops growing past 2,048 keys, the cache "
                          "does not), and a gated-DeltaNet hybrid (Qwen3-Next: a fixed state per request on 36 of 48 "
                          "layers, KV on the other 12). One request, bf16 KV, one device, 16-token blocks:"),
        new_code_cell("import capplan\n" + SVG +
                      "models = ['Llama-3.1-70B', 'Gemma-3-27B', 'DeepSeek-V3.2', 'Qwen3-Next-80B-A3B']\n"
                      "contexts = [1024, 4096, 16384, 65536, 131072]\n"
                      "series = []\n"
                      "for name in models:\n"
                      "    m = capplan.model(name)\n"
                      "    series.append((name, [(c, m.kv_cache_bytes(c, block_tokens=16).in_('GB')) for c in contexts]))\n"
                      "display(SVG(line_chart('KV cache of one request', 'context (tokens)', 'GB', series, log_x=True)))\n"
                      "for name, pts in series:\n"
                      "    print(f'{name:20s} ' + '  '.join(f'{c:>6}: {gb:7.2f} GB' for c, gb in pts))"),
        new_markdown_cell("The hybrid holds a fixed 39.5 MB state per request (whatever its length) plus 24.6 kB per "
                          "token on its 12 attention layers: the smallest cache here at every length. The local layers "
                          "cap Gemma 3's growth at its ten global layers. DeepSeek-V3.2's cache grows like DeepSeek-V3's "
                          "(plus 132 bytes per token and layer for the indexer), but its FLOPs per decoded token grow "
                          "far slower than DeepSeek-R1's: the MLA core stops at the 2,048 keys it selects and only the "
                          "fp8 indexer still scans every key:"),
        new_code_cell("def attention_flops(name, context):\n"
                      "    r = capplan.estimate({'model': name, 'system': {'preset': 'HGX-H200', 'count': 8}, 'parallelism': {'tp': 8},\n"
                      "                          'precision': {'weights': 'fp8', 'compute': 'fp8'},\n"
                      "                          'inference': {'input_tokens': context, 'output_tokens': 2, 'batch': 1}})\n"
                      "    return r.to_dict()['flops']['decode_token_flops'] / 1e9\n"
                      "pts = {n: [(c, attention_flops(n, c)) for c in [4096, 16384, 65536, 131072]] for n in ['DeepSeek-R1', 'DeepSeek-V3.2']}\n"
                      "display(SVG(line_chart('FLOPs per decoded token', 'context (tokens)', 'GFLOP', list(pts.items()), log_x=True)))\n"
                      "pts"),
    ],
    "concurrency_latency": [
        new_markdown_cell("# Why does latency swing when many ask at once?\n\nA continuous-batching server shares "
                          "each decode step among all users; prompts wait for a slot. Simulated with Llama-3.1-70B on 8x H200:"),
        new_code_cell("import capplan\n" + SVG +
                      "rows = []\n"
                      "for users in [1, 8, 32, 64, 128]:\n"
                      "    r = capplan.estimate({'model': 'Llama-3.1-70B', 'system': {'preset': 'HGX-H200'},\n"
                      "                          'parallelism': {'tp': 8},\n"
                      "                          'inference': {'input_tokens': 2000, 'output_tokens': 300, 'concurrency': users}})\n"
                      "    i = r.inference\n"
                      "    rows.append((users, float(i.ttft_s), float(i.ttft_p99_s), float(i.tpot_s)))\n"
                      "display(SVG(line_chart('time to first token', 'concurrent users', 'seconds',\n"
                      "    [('p50', [(u, a) for u, a, b, c in rows]), ('p99', [(u, b) for u, a, b, c in rows])])))\n"
                      "print(f'From 1 to 128 users, TPOT grows from {rows[0][3]*1e3:.1f} ms to {rows[-1][3]*1e3:.1f} ms and '\n"
                      "      f'p99 TTFT from {rows[0][2]:.2f} s to {rows[-1][2]:.2f} s.')"),
        new_markdown_cell("The swing a user feels while reading an answer is the inter-token latency: each token "
                          "waits one engine step, and a step that also runs another user's prompt is much longer. "
                          "Open-loop traffic (Poisson arrivals, prompts and answers of 1 to 1,024 tokens), "
                          "Llama-3.1-70B on 4x H200; SGLang measured median ITLs of 13.6 / 14.8 / 19.4 ms and TTFTs of 86 / 88 / 106 ms at "
                          "1 / 2 / 4 requests/s (datacrunch-research/h200-benchmarks):"),
        new_code_cell("for rate in [1, 2, 4]:\n"
                      "    i = capplan.estimate({'model': 'Llama-3.1-70B', 'system': {'preset': 'HGX-H200', 'count': 4},\n"
                      "                          'parallelism': {'tp': 4},\n"
                      "                          'inference': {'input_tokens': 1024, 'output_tokens': 1024, 'prefill_dispatch': 'eager',\n"
                      "                                        'workload': {'arrival': 'poisson', 'rate_per_s': rate, 'requests': 300 * rate,\n"
                      "                                                     'input': {'kind': 'uniform', 'min': 1, 'max': 1024},\n"
                      "                                                     'output': {'kind': 'uniform', 'min': 1, 'max': 1024}}}}).inference\n"
                      "    print(f'{rate} requests/s: ITL median {float(i.itl_s)*1e3:.1f} ms, p99 {float(i.itl_p99_s)*1e3:.0f} ms; '\n"
                      "          f'TTFT median {float(i.ttft_s)*1e3:.0f} ms')"),
        new_markdown_cell("The serving engine matters too. A TensorRT engine launches a prompt's kernels from a "
                          "captured graph; PyTorch engines (TensorRT-LLM's PyTorch backend, SGLang, vLLM for long "
                          "prompts) dispatch each from Python, in series with the kernels. For DeepSeek-R1 on 8x H200, "
                          "whose layers launch some 24 kernels each:"),
        new_code_cell("for dispatch in ['graph', 'eager']:\n"
                      "    r = capplan.estimate({'model': 'DeepSeek-V3', 'system': {'preset': 'HGX-H200'},\n"
                      "                          'parallelism': {'tp': 8, 'ep': 8}, 'precision': {'weights': 'fp8', 'compute': 'fp8'},\n"
                      "                          'inference': {'input_tokens': 1600, 'output_tokens': 600, 'batch': 1,\n"
                      "                                        'prefill_dispatch': dispatch}})\n"
                      "    print(f'{dispatch:5s} dispatch: TTFT {float(r.inference.ttft_s)*1e3:.0f} ms')\n"
                      "print('TensorRT-LLM 0.21 (PyTorch backend) measured 124 ms (NVIDIA/TensorRT-LLM issue #5929).')"),
    ],
    "cold_start": [
        new_markdown_cell("# Why is the first request of the morning slow?\n\nWeights crawl from storage through host "
                          "memory and PCIe into GPU memory, then the engine starts. Llama-3.1-70B on 8x H200:"),
        new_code_cell("import capplan\n" + SVG +
                      "for storage in ['NVMe-Gen4-8x', 'NFS', 'ObjectStore-S3']:\n"
                      "    r = capplan.estimate({'model': 'Llama-3.1-70B', 'system': {'preset': 'HGX-H200', 'storage': storage},\n"
                      "                          'parallelism': {'tp': 8},\n"
                      "                          'inference': {'input_tokens': 1000, 'output_tokens': 100, 'batch': 1}})\n"
                      "    c = r.to_dict()['cold_start']\n"
                      "    display(SVG(stacked_bar(f'{storage}: {c[\"total_s\"]:.0f} s to first token',\n"
                      "        [(s['stage'], s['time_s'], f\"{s['time_s']:.1f} s\") for s in c['chain']], highlight=c['bottleneck'])))"),
        new_markdown_cell("With local NVMe the engine start (compilation, memory profiling, CUDA graphs) dominates; "
                          "from one NFS mount or S3 the weights themselves are the bottleneck."),
    ],
    "training_70b": [
        new_markdown_cell("# Training a 70B model on a cluster\n\nThe fastest layouts that fit memory for Llama-3.1-70B "
                          "on 32 DGX H100 nodes, and how long 2 trillion tokens take:"),
        new_code_cell("import capplan\n" + SVG +
                      "scenario = {'model': 'Llama-3.1-70B', 'system': {'preset': 'DGX-H100', 'count': 256},\n"
                      "            'training': {'seq_len': 8192, 'global_batch': 512}}\n"
                      "best = capplan.search_training(scenario, top_k=3)['best']\n"
                      "for b in best:\n"
                      "    print({k: b[k] for k in ('tp', 'pp', 'dp', 'cp', 'vpp', 'micro_batch', 'recompute', 'zero')},\n"
                      "          f\"step {b['step_time_s']:.2f} s, MFU {100*b['mfu']:.1f}%\")\n"
                      "b = best[0]\n"
                      "display(SVG(stacked_bar('step time by term (exposed)', [(t['term'], t['exposed_s'], f\"{t['exposed_s']:.2f} s\")\n"
                      "                                                       for t in b['breakdown'] if t['exposed_s'] > 0])))"),
        new_code_cell("layout = {k: best[0][k] for k in ('tp', 'pp', 'cp', 'ep', 'vpp', 'sequence_parallel')}\n"
                      "training = {k: best[0][k] for k in ('micro_batch', 'recompute', 'zero', 'distributed_optimizer', 'shard_group')}\n"
                      "r = capplan.estimate({**scenario, 'parallelism': layout,\n"
                      "                      'training': {**scenario['training'], **training, 'tokens': 2e12}})\n"
                      "t = r.to_dict()['training']\n"
                      "print(f\"2T tokens take {t['time_to_train_s']/86400:.0f} days on 256 H100s ({t['gpu_hours']:.0f} GPU-hours).\")"),
    ],
    "idle_gpus": [
        new_markdown_cell("# Why do new GPUs sit idle?\n\nAcross nodes, the network sets the pace of gradient "
                          "all-reduces. All-reduce bus bandwidth by message size, inside one DGX H100 and across 8 of them:"),
        new_code_cell("import capplan\n" + SVG +
                      "one = capplan.collective_sweep('all_reduce', '1KiB:4GiB', system='DGX-H100')\n"
                      "many = capplan.collective_sweep('all_reduce', '1KiB:4GiB', system={'preset': 'DGX-H100', 'count': 64})\n"
                      "rows = lambda t: [(r['size_bytes'], r['busbw_GBps']) for r in (t.to_dict('records') if hasattr(t, 'to_dict') else t)]\n"
                      "display(SVG(line_chart('all-reduce bus bandwidth', 'bytes', 'GB/s',\n"
                      "    [('8 GPUs, NVLink + NVLS', rows(one)), ('64 GPUs, + 8x NDR 400 per node', rows(many))], log_x=True)))"),
        new_markdown_cell("Small messages are latency-bound everywhere; large ones reach NVLink's rate inside a node but "
                          "the NICs' rate across nodes, so communication-heavy layouts leave GPUs waiting."),
    ],
    "checkpoints_failures": [
        new_markdown_cell("# Checkpoints and failures\n\nMore GPUs fail more often. With Llama 3's published failure "
                          "rate, the optimal checkpoint interval (Young/Daly) and the goodput for a 70B run:"),
        new_code_cell("import capplan\n" + SVG +
                      "rows = []\n"
                      "for n in [64, 256, 1024, 4096]:\n"
                      "    r = capplan.estimate({'model': 'Llama-3.1-70B', 'system': {'preset': 'DGX-H100', 'count': n},\n"
                      "                          'parallelism': {'tp': 8, 'pp': 4, 'sequence_parallel': True},\n"
                      "                          'training': {'seq_len': 8192, 'global_batch': 2048, 'recompute': 'selective',\n"
                      "                                       'distributed_optimizer': True}})\n"
                      "    c = r.to_dict()['checkpoint']\n"
                      "    rows.append((n, c['mtbf_s'] / 3600, c['interval_s'] / 60, c['goodput']))\n"
                      "display(SVG(line_chart('mean time between failures', 'GPUs', 'hours', [('job MTBF', [(n, m) for n, m, i, g in rows])], log_x=True)))\n"
                      "for n, m, i, g in rows: print(f'{n:5d} GPUs: MTBF {m:6.1f} h, checkpoint every {i:5.1f} min, goodput {100*g:.2f}%')"),
    ],
    "calibrate_your_hardware": [
        new_markdown_cell("# How far off is the model on my own hardware?\n\nAn analytic model is only as good as its "
                          "efficiency factors. `calibrate_cpu` measures this machine's kernels on a model's own layer "
                          "shapes (GEMMs, attention, norms, memory bandwidth), fits efficiency-by-size curves, runs one "
                          "layer for real and compares each operator with the prediction before and after. On a GPU, "
                          "`calibrate_cuda` does the same with cuBLASLt (docs/formulas.md section 18)."),
        new_code_cell("import capplan\nfrom capplan.calibration import calibrate_cpu, host_scenario\n"
                      "layer = {'model_type': 'llama', 'hidden_size': 512, 'intermediate_size': 1536, 'num_hidden_layers': 4,\n"
                      "         'num_attention_heads': 8, 'num_key_value_heads': 4, 'head_dim': 64, 'vocab_size': 32000,\n"
                      "         'max_position_embeddings': 4096}\n"
                      "cal = calibrate_cpu(capplan.Model.from_hf_config(layer, 'small-llama'), max_time='0.2 s')\n"
                      "cal"),
        new_markdown_cell("The catalog's single efficiency pair cannot describe a CPU whose small kernels run from "
                          "cache: before calibration the norms are off by a factor of 2-3. The calibrated estimate "
                          "names the table it used:"),
        new_code_cell("r = capplan.estimate(host_scenario(cal, layer, input_tokens=128, output_tokens=32))\n"
                      "print(r.to_dict()['efficiency_table'])\n"
                      "print(f\"TTFT {float(r.inference.ttft_s) * 1e3:.1f} ms, TPOT {float(r.inference.tpot_s) * 1e3:.2f} ms on this CPU\")"),
    ],
    "serving_features": [
        new_markdown_cell("# Which serving features pay for themselves?\n\nAn assistant for 64 colleagues who are always "
                          "waiting on an answer: 4,000-token prompts (a 1,500-token system prompt and the conversation so far), "
                          "400-token answers, a p99 time to first token of 2 s and a p99 time per output token of 40 ms, "
                          "Llama-3.1-70B on H200s at an illustrative $3.50 per GPU-hour (your price goes in `prices`). "
                          "For each way of serving, `size_inference` finds the fewest GPUs whose simulated p99 latencies meet the "
                          "targets, and the cost per million output tokens follows from their throughput at that load."),
        new_code_cell("import capplan\n" + SVG.replace(", stacked_bar", ", bar_chart") +
                      "slo = dict(concurrency=64, input_tokens=4000, output_tokens=400, ttft_p99='2 s', tpot_p99='40 ms',\n"
                      "           accelerators=['H200'], prices={'H200': 3.5})\n"
                      "# Prefix cache: the system prompt is shared by all; 70% of each prompt was sent before (earlier turns).\n"
                      "# EAGLE head: 3 drafted tokens at acceptance 0.66, the value that reproduces the EAGLE-3 paper's batch-2\n"
                      "# speed-up on an H100 (docs/validation.md); measure yours with your engine's spec-decode metrics.\n"
                      "prefix = {'hit_rate': 0.7, 'shared_prefix_tokens': 1500}\n"
                      "eagle = {'method': 'eagle', 'tokens': 3, 'acceptance': 0.66}\n"
                      "ways = {'aggregated': {}, 'prefix cache': {'prefix_cache': prefix},\n"
                      "        'speculative (EAGLE)': {'speculative': eagle},\n"
                      "        'prefix cache + EAGLE': {'prefix_cache': prefix, 'speculative': eagle}}\n"
                      "rows = []\n"
                      "for name, features in ways.items():\n"
                      "    o = capplan.size_inference('Llama-3.1-70B', **slo, **features)['options'][0]\n"
                      "    per_million = o['cost_per_hour'] / (o['output_tokens_per_s'] * 3600) * 1e6\n"
                      "    rows.append((name, per_million, f\"${per_million:.2f} on {o['count']} GPUs\"))\n"
                      "    print(f\"{name:22} {o['count']} x H200 (tp {o['tp']} x {o['replicas']}, {o['weights']} weights, \"\n"
                      "          f\"{o['kv_cache']} KV{', speculative' if o['speculative'] else ''}): p99 TTFT {o['ttft_p99_s']:.2f} s, \"\n"
                      "          f\"p99 TPOT {o['tpot_p99_s'] * 1e3:.0f} ms, {o['output_tokens_per_s']:.0f} tokens/s, ${per_million:.2f} per M tokens\")\n"
                      "display(SVG(bar_chart('cost per million output tokens at the SLO', rows,\n"
                      "                      highlight=min(rows, key=lambda r: r[1])[0])))"),
        new_markdown_cell("Why: the prefix cache computes 1,200 of each 4,000-token prompt and stores the system prompt "
                          "once, so prompts stop crowding the decode steps and more users fit; the EAGLE head gains about "
                          "2.4 tokens per decode step for little more than one step's weight reads at this batch. On its "
                          "own it saves no GPU here (sizing keeps plain decoding when speculation does not win: the row "
                          "then says no `speculative`); beside the prefix cache it lets fewer replicas hold the SLO. "
                          "Speculation stops paying once the verify step turns compute-bound: the result's "
                          "`inference.speculative.breakeven_batch` says where, for one replica:"),
        new_code_cell("r = capplan.estimate({'model': 'Llama-3.1-70B', 'system': {'preset': 'HGX-H200', 'count': 2},\n"
                      "                      'parallelism': {'tp': 2}, 'precision': {'weights': 'fp8', 'kv_cache': 'fp8'},\n"
                      "                      'inference': {'input_tokens': 4000, 'output_tokens': 400, 'batch': 32, 'speculative': eagle}})\n"
                      "s = r.inference.speculative\n"
                      "print(f'{s.tokens_per_step} tokens per step; TPOT {s.speedup:.2f}x faster at batch 32; '\n"
                      "      f\"slower than plain decoding from batch {s.to_dict().get('breakeven_batch', 'beyond the limit')}\")"),
        new_markdown_cell("**Disaggregated prefill and decode.** The same 8 H200s split into a prefill pool and a decode "
                          "pool: prompts no longer share decode steps, so TPOT falls, but the pool ratio decides whether the "
                          "prompts queue. Each way below holds the 64 users; cost is 8 GPUs at $3.50 an hour:"),
        new_code_cell("base = {'model': 'Llama-3.1-70B', 'system': {'preset': 'HGX-H200'},\n"
                      "        'precision': {'weights': 'fp8', 'kv_cache': 'fp8'}}\n"
                      "load = {'input_tokens': 4000, 'output_tokens': 400, 'concurrency': 64}\n"
                      "def pools(prefill, decode):\n"
                      "    return {'inference': {**load, 'disaggregation': {'prefill': prefill, 'decode': decode}}}\n"
                      "layouts = {'aggregated, tp 4 x 2': {'parallelism': {'tp': 4, 'dp': 2}, 'inference': load},\n"
                      "           'prefill 2 x tp2, decode 1 x tp4': pools({'count': 4, 'tp': 2}, {'count': 4, 'tp': 4}),\n"
                      "           'prefill 3 x tp2, decode 1 x tp2': pools({'count': 6, 'tp': 2}, {'count': 2, 'tp': 2})}\n"
                      "bars = []\n"
                      "for name, layout in layouts.items():\n"
                      "    i = capplan.estimate({**base, **layout}).inference\n"
                      "    per_million = 8 * 3.5 / (float(i.throughput_tokens_per_s) * 3600) * 1e6\n"
                      "    meets = float(i.ttft_p99_s) <= 2 and float(i.tpot_p99_s) <= 0.040\n"
                      "    bars.append((name, per_million, f\"${per_million:.2f}\" + ('' if meets else ' (misses the SLO)')))\n"
                      "    print(f\"{name:32} p99 TTFT {float(i.ttft_p99_s):.2f} s, p99 TPOT {float(i.tpot_p99_s) * 1e3:.0f} ms, \"\n"
                      "          f\"{float(i.throughput_tokens_per_s):.0f} tokens/s\")\n"
                      "display(SVG(bar_chart('8 x H200: cost per million output tokens by layout', bars)))"),
        new_markdown_cell("Two prefill replicas cannot keep up with 64 users' 4,000-token prompts: TTFT climbs to seconds "
                          "while the decode pool waits. Three prefill replicas for one decode replica give a lower TPOT and "
                          "more tokens per GPU than the aggregated layout, but their p99 TTFT sits at about the 2 s target: "
                          "the faster decode pool sends the users' next prompts sooner, and the prefill pool sets the pace. "
                          "(Sizing's pool search is coarse: try a few ratios as here.)\n\n"
                          "**KV-cache offload.** Eight 120K-token conversations do not fit one H100's memory; with the cache "
                          "spilling to 2 TB of host memory they run, and every decode step brings the offloaded part back "
                          "over PCIe:"),
        new_code_cell("points_gpu, points_offload = [], []\n"
                      "for ctx in [16000, 32000, 64000, 128000, 256000]:\n"
                      "    inf = {'input_tokens': ctx - 1000, 'output_tokens': 1000, 'batch': 8}\n"
                      "    plain = capplan.estimate({'model': 'Llama-3.1-8B', 'system': {'preset': 'DGX-H100', 'count': 1}, 'inference': inf})\n"
                      "    spill = capplan.estimate({'model': 'Llama-3.1-8B', 'system': {'preset': 'DGX-H100', 'count': 1},\n"
                      "                              'inference': {**inf, 'kv_offload': {'tier': 'host', 'capacity': '2 TB'}}})\n"
                      "    if plain.memory.fits:\n"
                      "        points_gpu.append((ctx, float(plain.inference.tpot_s) * 1e3))\n"
                      "    points_offload.append((ctx, float(spill.inference.tpot_s) * 1e3))\n"
                      "    print(f\"{ctx:>7} tokens: GPU only {'fits' if plain.memory.fits else 'out of memory'}; with offload \"\n"
                      "          f\"TPOT {float(spill.inference.tpot_s) * 1e3:.0f} ms, bottleneck {spill.bottleneck}\")\n"
                      "display(SVG(line_chart('8 conversations on one H100: time per output token', 'tokens per conversation',\n"
                      "    'ms per token', [('GPU memory only', points_gpu), ('KV offload to host memory', points_offload)], log_x=True)))"),
        new_markdown_cell("Offload turns an out-of-memory plan into a served one, at PCIe's pace: from 64K tokens the "
                          "reload of the offloaded cache, not the GPU, sets each step (the chain's `host link (kv reload)`). "
                          "Past that, more GPUs (tensor parallelism) or an fp8 cache serve the same users far faster."),
    ],
    "buy_or_rent": [
        new_markdown_cell("# Buy or rent? Serving and training in money, energy and emissions\n\n"
                          "Every price and power figure comes from the catalog with its source and date "
                          "(`capplan list systems`, `capplan show HGX-B200`), and a site's terms (`capplan list sites`): "
                          "PUE, electricity, colocation per kW, depreciation. Prices are ranges where sources disagree; "
                          "each money figure carries that range.\n\n"
                          "**Serve Llama-3.1-70B to 50 users** (2,000-token prompts, 500-token answers) within a p99 TTFT "
                          "of 2 s and a p99 TPOT of 50 ms: the cheapest layout per accelerator, priced to own and to rent."),
        new_code_cell("import capplan\nfrom IPython.display import SVG, display\nfrom capplan.charts import bar_chart\n"
                      "plan = capplan.size_inference('Llama-3.1-70B', 50, 2000, 500, ttft_p99='2 s', tpot_p99='50 ms',\n"
                      "                              accelerators=['H100-SXM', 'H200', 'B200', 'MI300X', 'MI355X'], rank_by='tco')\n"
                      "print(plan)  # every option by the ranking rule, then the recommendation and the targets applied\n"
                      "best = plan['options'][0]"),
        new_code_cell("bars = []\n"
                      "for o in plan['options']:\n"
                      "    for how in ('own', 'rent'):\n"
                      "        key = how + '_usd_per_million_output_tokens'\n"
                      "        if key in o:\n"
                      "            bars.append((f\"{o['count']}x {o['accelerator']} {how}\", o[key], f\"${o[key]:.2f}\"))\n"
                      "display(SVG(bar_chart('USD per million output tokens at the targets', bars, min(bars, key=lambda b: b[1])[0])))"),
        new_markdown_cell("The owned figures charge the share of the whole nodes bought that the layout uses (the rest "
                          "serve other work). MI355X has an estimated price in the catalog (`capplan show MI355X-Platform`) "
                          "but no published server power and no cloud offer, so it is neither owned nor rented above. "
                          "Given a power, it is: here its eight boards' own 1.4 kW each (AMD), a lower bound on the "
                          "server's draw, so its cost is a lower bound too. Use your vendor's figure instead:"),
        new_code_cell("mi = next(o for o in plan['options'] if o['accelerator'] == 'MI355X')\n"
                      "print(capplan.cost({'model': 'Llama-3.1-70B', 'system': {'preset': mi['system'], 'count': mi['count']},\n"
                      "                    'precision': {'weights': mi['weights'], 'kv_cache': mi['kv_cache']},\n"
                      "                    'parallelism': {'tp': mi['tp']},\n"
                      "                    'inference': {'input_tokens': 2000, 'output_tokens': 500, 'concurrency': 50}},\n"
                      "                   system_power='11.2 kW'))"),
        new_markdown_cell("The hourly cost of owning the recommended hardware, part by part, with its range:"),
        new_code_cell("c = capplan.cost({'model': 'Llama-3.1-70B', 'system': {'preset': best['system'], 'count': best['count']},\n"
                      "                  'precision': {'weights': best['weights'], 'kv_cache': best['kv_cache']},\n"
                      "                  'parallelism': {'tp': best['tp']},\n"
                      "                  'inference': {'input_tokens': 2000, 'output_tokens': 500, 'concurrency': 50}})\n"
                      "print(c)"),
        new_markdown_cell("**Train a 8B model on 1 trillion tokens** on 64 H100s or 64 B200s: GPU-hours, energy at the "
                          "facility, emissions on the US grid, and the cost owned and rented."),
        new_code_cell("runs = []\n"
                      "for preset in ('DGX-H100', 'HGX-B200'):\n"
                      "    r = capplan.estimate({'model': 'Llama-3.1-8B', 'system': {'preset': preset, 'count': 64},\n"
                      "                          'training': {'seq_len': 8192, 'global_batch': 512, 'zero': 1, 'tokens': 1e12},\n"
                      "                          'cost': {}}).to_dict()\n"
                      "    t, run = r['training'], r['cost']['per_run']\n"
                      "    runs.append((preset, run['own_usd'], run['rent_usd']))\n"
                      "    print(f\"{preset}: {t['time_to_train_s'] / 86400:.1f} days, {t['gpu_hours']:,.0f} GPU-hours, \"\n"
                      "          f\"{run['energy_kwh'] / 1e3:,.0f} MWh, {run['emissions_kg_co2e'] / 1e3:,.0f} t CO2e, \"\n"
                      "          f\"own {capplan.costing.usd(run['own_usd'])} (range {capplan.costing.usd(run['own_usd_range'][0])}-\"\n"
                      "          f\"{capplan.costing.usd(run['own_usd_range'][1])}), \"\n"
                      "          f\"rent {capplan.costing.usd(run['rent_usd'])}\")\n"
                      "display(SVG(bar_chart('a 1T-token run of Llama-3.1-8B, USD', [(f'{p} {how}', v, f'${v:,.0f}')\n"
                      "    for p, own, rent in runs for how, v in (('own', own), ('rent', rent))])))"),
        new_markdown_cell("Owning wins when the hardware stays busy: `capplan.cost(..., utilization=0.4)` charges each "
                          "run for the idle hours too. Override any figure (`system_price`, `price_per_device_hour`, "
                          "`usd_per_kwh`, `pue`, `depreciation_years`, `cost_of_capital`) with your own quotes."),
        new_markdown_cell("**What to order for the H100 cluster**: the nodes, the rail-optimised compute fabric, the "
                          "storage and management networks NVIDIA's DGX SuperPOD reference architecture counts for "
                          "them, and the storage its 'good' guideline asks (language-model training: datasets fit the "
                          "nodes' cache) on NetApp BeeGFS building blocks. Lines without a catalog price say so; "
                          "`part_prices={'in-band management switches': ...}` enters a quote you were given "
                          "(`capplan bom ... -o bom.xlsx` writes it as a spreadsheet whose totals are live formulas)."),
        new_code_cell("print(capplan.bom('DGX-H100', 64, storage='NetApp-BeeGFS-BB', storage_level='good'))"),
    ],
    "sweep_on_dask": [
        new_markdown_cell("# Which GPU for which traffic? A simulation sweep on a Dask cluster\n\n"
                          "Every point below runs capplan's serving simulation (a closed loop of users on a continuously "
                          "batching engine), for 4 models x 4 GPUs x 40 loads x 4 prompt lengths x 4 answer lengths: "
                          "10,240 points. `capplan.sweep(..., client=client)` cuts the grid into partitions and runs them "
                          "on the cluster's workers; the DataFrame is the one a local run returns, in the same order, and "
                          "a worker lost mid-sweep costs only its partitions.\n\n"
                          "Here the cluster is a `LocalCluster` of two worker threads in this kernel (the core releases "
                          "the GIL, so they run in parallel; `tests/python/test_sweep_dask.py` runs one of two worker "
                          "processes and kills one mid-sweep). On an existing cluster, connect to its "
                          "scheduler instead (`Client('tcp://scheduler:8786')`) with capplan installed on every worker "
                          "(`pip install \"capplan[dask]\"`, the same version as here, or the scheduler's `PipInstall` "
                          "worker plugin)."),
        new_code_cell("import capplan\nfrom dask.distributed import Client, LocalCluster\n"
                      "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,\n"
                      "                       silence_logs=40)\n"
                      "client = Client(cluster)\nprint(client)"),
        new_code_cell("scenario = {'model': 'Llama-3.1-8B', 'system': {'accelerator': 'H100-SXM', 'count': 1},\n"
                      "            'inference': {'input_tokens': 1024, 'output_tokens': 64, 'concurrency': 8,\n"
                      "                          'workload': {'requests': 40}}}  # 40 measured requests a point\n"
                      "grid = {'model': ['Llama-3.2-3B', 'Qwen3-4B', 'Qwen3-8B', 'Llama-3.1-8B'],\n"
                      "        'system.accelerator': ['L40S', 'A100-80GB-SXM', 'H100-SXM', 'H200'],\n"
                      "        'inference.concurrency': list(range(1, 41)),\n"
                      "        'inference.input_tokens': [256, 1024, 2048, 4096],\n"
                      "        'inference.output_tokens': [8, 16, 32, 64]}\n"
                      "df = capplan.sweep(scenario, grid, client=client, progress=True)  # a bar on a terminal or in Jupyter\n"
                      "print(len(df), 'points,', int(df['feasible'].sum()), 'fit memory')"),
        new_markdown_cell("The most users each GPU serves with 1,024-token prompts and 64-token answers while the p99 time to "
                          "first token stays under 500 ms and the p99 time per output token under 20 ms:"),
        new_code_cell("ok = df[(df['inference.input_tokens'] == 1024) & (df['inference.output_tokens'] == 64) & df['feasible']\n"
                      "       & (df['inference.ttft_p99_s'] <= 0.5) & (df['inference.tpot_p99_s'] <= 0.020)]\n"
                      "print(ok.pivot_table(index='model', columns='system.accelerator', values='inference.concurrency',\n"
                      "                     aggfunc='max').fillna(0).astype(int))"),
        new_markdown_cell("How the p99 time per output token of Llama-3.1-8B grows with the users on each GPU "
                          "(1,024-token prompts, 64-token answers):"),
        new_code_cell("from IPython.display import SVG, display\nfrom capplan.charts import line_chart\n"
                      "one = df[(df['model'] == 'Llama-3.1-8B') & (df['inference.input_tokens'] == 1024)\n"
                      "         & (df['inference.output_tokens'] == 64) & df['feasible']]\n"
                      "series = [(gpu, [(u, t * 1e3) for u, t in zip(g['inference.concurrency'], g['inference.tpot_p99_s'])])\n"
                      "          for gpu, g in one.groupby('system.accelerator')]\n"
                      "display(SVG(line_chart('Llama-3.1-8B: p99 TPOT by users', 'users', 'p99 TPOT (ms)', series)))"),
        new_code_cell("client.close()\ncluster.close()"),
    ],
}


def write_executed(name, cells):
    """Executes the cells with the python3 kernel of this environment (run the script with the
    interpreter that has capplan[notebook]) and writes notebooks/NAME.ipynb with its outputs."""
    from nbclient import NotebookClient
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = new_notebook(cells=cells, metadata={"kernelspec": kernelspec})
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(HERE)}}).execute()
    nbformat.write(nb, HERE / f"{name}.ipynb")
    print("wrote", name)


def main():
    for name, cells in NOTEBOOKS.items():
        write_executed(name, cells)


if __name__ == "__main__":
    main()
