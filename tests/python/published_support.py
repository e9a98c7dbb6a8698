"""How the published-row tests run a row: shared by tests/python/test_inference_speed.py and
scripts/validation_report.py, so the errors docs/validation.md reports are the ones the tests see."""
import capplan


def nccl_allreduce(engine):
    """Engines whose tensor-parallel all-reduces ran NCCL, not an engine kernel: gpt-fast (torch.distributed's
    functional all_reduce) and TensorRT-LLM v0.x builds, whose latency-optimised all-reduce was an opt-in build
    flag (examples' build.py: '--use_custom_all_reduce', action='store_true', 'instead of NCCL'); their
    performance pages list no such flag. Later engines (NIM, trtllm-bench, vLLM, SGLang) run their own kernel."""
    return engine.startswith(("gpt-fast", "TensorRT-LLM v0.", "TRT-LLM v0."))


def run_published(model, accel, tp, weights, inp, out, kv=None, nccl=False, **inference):
    """One row's estimate: tp devices of `accel`; integer weight formats are weight-only (GEMMs in bf16);
    a batch of one unless the row gives its load; `nccl`: all-reduces through NCCL (nccl_allreduce)."""
    precision = {"weights": weights, "compute": "bf16" if weights in ("int8", "int4") else weights}
    if kv:
        precision["kv_cache"] = kv
    load = {"input_tokens": inp, "output_tokens": out, **(inference or {"batch": 1})}
    if nccl:
        load["custom_allreduce"] = False
    return capplan.estimate({"model": model, "system": {"accelerator": accel, "count": tp}, "parallelism": {"tp": tp},
                             "precision": precision, "inference": load})


def ms(seconds):
    return float(seconds) * 1e3


def poisson_70b(rate):
    """SGLang's Poisson rows: Llama-3.3-70B (Llama-3.1-70B's shapes) bf16 on 4 H200s, uniform 1..1024 lengths,
    eager prefill, 300 s of arrivals."""
    return capplan.estimate({
        "model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 4}, "parallelism": {"tp": 4},
        "precision": {"weights": "bf16", "compute": "bf16"},
        "inference": {"input_tokens": 1024, "output_tokens": 1024, "prefill_dispatch": "eager",
                      "workload": {"arrival": "poisson", "rate_per_s": rate, "requests": 300 * rate,
                                   "input": {"kind": "uniform", "min": 1, "max": 1024},
                                   "output": {"kind": "uniform", "min": 1, "max": 1024}}}}).inference


# The formats of a tests/data/published_inference.json saturated-throughput table: its "formats" where it names them
# (the FP4 checkpoints), else the FP8 ones (ModelOpt FP8 weights and compute, FP8 KV cache).
_FP8 = {"weights": "fp8", "compute": "fp8", "kv_cache": "fp8"}


def saturated_published(table, shape):
    """Output tokens/s of a saturated-throughput table's deployment at `shape` ("input/output"): trtllm-bench at an
    infinite rate, exact lengths, reserved KV admission (TensorRT-LLM admits a request with its whole output)."""
    inp, out = (int(x) for x in shape.split("/"))
    tp, adp = table["tp"], bool(table.get("parallelism", {}).get("attention_dp"))
    parallelism = {"tp": tp, "ep": tp, "attention_dp": True} if adp else {"tp": tp}
    r = capplan.estimate({"model": table["model"], "system": {"accelerator": table["accelerator"], "count": tp},
                          "parallelism": parallelism, "precision": table.get("formats", _FP8),
                          "inference": {"input_tokens": inp, "output_tokens": out, "kv_admission": "reserve",
                                        "workload": {"arrival": "poisson", "rate_per_s": 1e5, "requests": 3000, "seed": 1}}})
    assert r.inference.preemptions == 0
    return float(r.inference.throughput_tokens_per_s)


def checkpoint_published(row):
    """A row of tests/data/published_checkpoint.json: the model's training state on DGX-H100 nodes (tp 8, 405B pp 8)
    with the row's data-parallel replicas, saved blocking and loaded fully parallel (the benchmark writes and reads
    each byte once) on its AMLFS deployment. Returns the result's checkpoint section."""
    pp = 8 if row["model"] == "Llama-3.1-405B" else 1
    gpus = 8 * pp * row["data_parallel_instances"]
    r = capplan.estimate({
        "model": row["model"],
        "system": {"preset": "DGX-H100", "count": gpus,
                   "storage": {"preset": row["storage"], "capacity": f"{row['capacity_tib']} TiB"}},
        "parallelism": {"tp": 8, "pp": pp},
        "training": {"seq_len": 4096, "global_batch": 8 * row["data_parallel_instances"], "distributed_optimizer": True,
                     "async_checkpoint": False, "ckpt_fully_parallel_load": True}})
    return r.to_dict()["checkpoint"]


def _lora_training(row, global_batch):
    """The training section of a tests/data/published_lora.json row's fine-tune."""
    training = {"seq_len": row["seq_len"], "global_batch": global_batch, "micro_batch": row["micro_batch"],
                "recompute": row["recompute"], "kernels": row["kernels"], "master_weights": row["master_weights"],
                "optimizer_state_format": row["optimizer_state_format"],
                "lora": {"rank": row["rank"], "targets": row["targets"], "dropout": row["lora_dropout"]}}
    if "lora_dropout_position" in row:
        training["lora"]["dropout_position"] = row["lora_dropout_position"]
    if row["zero"]:
        training["zero"] = row["zero"]
    for key in ("attention_kernel", "activation_func_fp8_input_store", "cross_entropy", "packed_sample_tokens"):
        if key in row:
            training[key] = row[key]
    return training


def lora_published(row):
    """A held-out memory row of tests/data/published_lora.json: its fine-tune on A100-80GB-SXM (the accelerator does
    not enter the memory model). Returns (modelled live tensors in bytes, published in bytes): capplan's per-device
    memory less its runtime reservation, which the allocator's max_memory_allocated does not count."""
    r = capplan.estimate({"model": row["model"], "system": {"accelerator": "A100-80GB-SXM", "count": row["gpus"]},
                          "precision": {"weights": row["weights"]},
                          "training": _lora_training(row, row["micro_batch"] * row["gpus"])})
    m = r.to_dict()["memory"]
    published = row.get("published_allocated", row["published_peak"])
    scale = 2**30 if published["unit"] == "GiB" else 1e9
    return m["per_device_bytes"] - m["overhead_bytes"], published["value"] * scale


_TRAINING_SYSTEMS = {"A100-80GB-SXM": "DGX-A100", "A100-40GB-SXM": "DGX-A100", "H100-SXM": "DGX-H100", "H200": "HGX-H200",
                     "B200": "HGX-B200", "B300": "HGX-B300", "GB200": "GB200-NVL72",
                     "GB300": "GB300-NVL72", "L40S": "L40S-PCIe-Server"}


def lora_time_scenario(row):
    """The fine-tune of a time or throughput row of tests/data/published_lora.json on the row's accelerator in its
    DGX / HGX system, or the system the row names."""
    system = {"preset": _TRAINING_SYSTEMS[row["accelerator"]], "count": row["gpus"], "accelerator": row["accelerator"]}
    system.update(row.get("system", {}))  # a row's own network (Cisco's H100 on Ethernet)
    training = _lora_training(row, row["global_batch"])
    training.update({k: row[k] for k in ("tp_comm_overlap", "distributed_optimizer", "overlap_grad_reduce",
                                         "grad_reduce_in_fp32") if k in row})
    parallelism = {"tp": row.get("tp", 1), "sequence_parallel": row.get("sequence_parallel", False)}
    parallelism.update({k: row[k] for k in ("pp", "vpp", "cp") if k in row})
    return {"model": row["model"], "system": system,
            "precision": {"weights": row["weights"], "compute": row.get("compute", "bf16")},
            "parallelism": parallelism, "training": training}


def lora_time_published(row):
    """A time or throughput row of tests/data/published_lora.json: (modelled seconds, published seconds) for its
    `samples` sequences, step time x samples / global batch (lora_time_scenario); a published throughput in samples
    per second becomes samples / throughput, one in tokens per second samples x seq_len / throughput (per GPU: over the row's GPUs)."""
    step = capplan.estimate(lora_time_scenario(row)).to_dict()["training"]["step_time_s"]
    if "published_time" in row:
        published = row["published_time"]["value"]
    else:
        rate = row["published_throughput"]
        per_sample = {"samples/s": 1, "tokens/s": row["seq_len"],
                      "tokens/s/GPU": row["seq_len"] / row["gpus"]}[rate["unit"]]  # another unit is a data error
        published = row["samples"] * per_sample / rate["value"]
    return step * row["samples"] / row["global_batch"], published


def _gpt_shape(row):
    sh = row["shape"]
    return {"model_type": "gpt2", "n_embd": sh["hidden"], "n_head": sh["heads"], "n_layer": sh["layers"],
            "n_positions": row["seq_len"], "vocab_size": sh["vocab"]}


def _int_or(value, default):
    return value if isinstance(value, int) else default


def training_published(row, variant=None):
    """A row of tests/data/published_training.json as the speed tests run its family (tests/python/
    test_training_speed.py): (scenario, published value, quantity), quantity "step_time_s" or "mfu" (Llama 3's
    Table 4 gives MFU only). Korthikanti's Table 5 rows have two variants: "selective" (+ sequence parallelism)
    and "full" recompute. Families and their stated or assumed settings are those tests' (docs/validation.md)."""
    rid = row["id"]
    system = {"preset": _TRAINING_SYSTEMS[row["accelerator"]], "count": row["gpus"]}
    if row["accelerator"] == "A100-40GB-SXM":  # the DGX A100 with its 40 GB parts
        system["accelerator"] = row["accelerator"]
    par = {"tp": row["tp"], "pp": row["pp"], "cp": _int_or(row.get("cp"), 1)}
    training = {"seq_len": row["seq_len"], "global_batch": row["global_batch"], "micro_batch": _int_or(row.get("micro_batch"), 1)}
    precision = None
    if rid.startswith(("narayanan", "korthikanti")):
        # Megatron-LM before FlashAttention, with its default dropout and its unfused vocab-parallel cross-entropy (fp32;
        # --cross-entropy-loss-fusion came in 2024); Narayanan's micro-batch 1 and plain 1F1B assumed.
        model = _gpt_shape(row) if "catalog" in row["model"] else row["model"]
        training.update(flash_attention=False, dropout=True, cross_entropy="unfused")
        if rid.startswith("narayanan"):
            training["recompute"] = "full"
            sh, s, v = row["shape"], row["seq_len"], row["shape"]["vocab"]
            b, l, h = row["global_batch"], sh["layers"], sh["hidden"]
            flops = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
            published = flops / (row["gpus"] * row["achieved_tflops_per_gpu"]["value"] * 1e12)
        else:
            mode = variant or "selective"
            training["recompute"] = mode
            par["sequence_parallel"] = mode == "selective"
            if _int_or(row.get("vpp"), 1) > 1:
                par["vpp"] = row["vpp"]
            st = row["step_time_s"]
            published = st if not isinstance(st, dict) else st["present_work_selective_plus_sp" if mode == "selective"
                                                                 else "full_recompute_no_sp"]
        return {"model": model, "system": system, "parallelism": par, "training": training}, published, "step_time_s"
    if rid.startswith("megascale"):
        # MegaScale's Megatron-LM baseline (commit 285068c8): as the Korthikanti family, sequence-parallel selective
        # recompute with micro-batch 1 (assumed: the same team's recipe for this shape), interleaved with six chunks
        # per stage (stated), on eight 200G RoCE NICs a node in a rail-optimised three-tier Clos at 1:1 (stated).
        training.update(flash_attention=False, dropout=True, cross_entropy="unfused", recompute="selective")
        par.update(sequence_parallel=True, vpp=row["vpp"])
        system["scale_out"] = {"link": "RoCE-200G", "nics_per_node": 8, "topology": "rail_optimized_fat_tree",
                               "oversubscription": 1}
        return {"model": _gpt_shape(row), "system": system, "parallelism": par, "training": training}, row["step_time_s"], "step_time_s"
    if rid.startswith("llama3"):
        # As §3.3.2 of arXiv:2407.21783 describes the run: FSDP sharding optimizer states and gradients (ZeRO-2-like);
        # no recompute at 8K; tensor parallelism as Korthikanti et al. (2023) cite it, i.e. with sequence parallelism;
        # the interleaved schedule with one layer per model chunk ("we reduce one Transformer layer each from the first
        # and the last stages ... the first model chunk on the first stage has only the embedding": 126 layers in
        # 16 x 8 one-layer chunks, V = 8); context parallelism by all-gathering K and V. Micro-batch not stated: 1.
        # The ranks in [TP, CP, PP, DP] order on its RoCE fabric: pods of 3,072 GPUs (384 nodes) at full bisection,
        # 1:7 oversubscribed above them (§3.3.1).
        training.update(zero=2, recompute="none")
        par.update(sequence_parallel=True, vpp=8, rank_order="tp-cp-pp-dp")
        system["scale_out"] = {"pod_nodes": 384, "oversubscription": 7}
        if par["cp"] > 1:
            par["cp_algorithm"] = "all_gather"
        return ({"model": row["model"], "system": system, "parallelism": par, "training": training},
                float(row["mfu"]["value"].rstrip("%")) / 100, "mfu")
    if rid.startswith("llmc"):
        # llm.c: ZeRO-1 data parallelism, no recompute, its own fused kernels (the fused classifier is a fused loss).
        training.update(zero=1, recompute="none")
        return {"model": _gpt_shape(row), "system": system, "parallelism": par, "training": training}, row["step_time_s"], "step_time_s"
    if rid.startswith("tinyllama"):
        # lit_gpt on Lightning's FSDP (FULL_SHARD, ZeRO-3), no recompute, fused norms, SwiGLU and loss; FlashAttention-2
        # (its README's list of fused kernels).
        sh = row["shape"]
        model = {"model_type": "llama", "hidden_size": sh["hidden"], "intermediate_size": sh["ffn"], "num_hidden_layers": sh["layers"],
                 "num_attention_heads": sh["heads"], "num_key_value_heads": sh["kv_heads"], "vocab_size": sh["vocab"],
                 "max_position_embeddings": row["seq_len"], "tie_word_embeddings": sh["tied_embeddings"]}
        training.update(zero=3, recompute="none", attention_kernel="flash_attention_2")
        published = row["global_batch"] * row["seq_len"] / (row["tokens_per_s_per_gpu"] * row["gpus"])
        return {"model": model, "system": system, "parallelism": par, "training": training}, published, "step_time_s"
    if rid.startswith("mosaic"):
        # llm-foundry's benchmark script runs Tri Dao's Triton FlashAttention (scripts/train/benchmarking/
        # submit_benchmarks.py at 061f2c7c: '--attn_impl', default='triton').
        training.update(zero=3, recompute="none" if row["recompute"] == "none" else "full",
                        attention_kernel="flash_attention_triton")
        published = row["global_batch"] * row["seq_len"] / (row["tokens_per_s_per_gpu"] * row["gpus"])
        return {"model": _gpt_shape(row), "system": system, "parallelism": par, "training": training}, published, "step_time_s"
    # NeMo 24.07 and Megatron-Bridge: FP8 with the distributed optimizer and FP8 primary weights (their recipes),
    # tensor-parallel communication overlapped with sequence parallelism when tp > 1; the FSDP row ZeRO-3. A row read
    # with its recipe ("recipe": Megatron-Bridge's performance configs) runs that recipe's recompute modules, MTP,
    # all-to-all overlap and dispatcher, and BF16 rows run BF16.
    bf16 = row.get("precision") == "BF16"
    # MXFP8 rows run MXFP8 (32-element block scales, both copies cached); "fp8-cs (fp8-mx)" is the current-scaling run.
    mxfp8 = str(row.get("precision", "")).upper().startswith(("MXFP8", "FP8-MX"))
    precision = {"weights": "bf16", "compute": "bf16" if bf16 else "mxfp8" if mxfp8 else "fp8"}
    if _int_or(row.get("vpp"), 1) > 1:
        par["vpp"] = row["vpp"]
    if row["tp"] > 1:
        par["sequence_parallel"] = True
    if _int_or(row.get("ep"), 1) > 1:
        par["ep"] = row["ep"]
    fsdp = row.get("fsdp") == 1
    training.update(recompute="none", tp_comm_overlap=row["tp"] > 1,
                    **({"zero": 3} if fsdp else {"distributed_optimizer": True, "fp8_params": not bf16}))
    recipe = row.get("recipe") or {}
    if "recompute_modules" in recipe:
        del training["recompute"]
    training.update({k: recipe[k] for k in ("recompute_modules", "mtp_layers", "ep_comm_overlap", "tp_comm_overlap",
                                            "moe_dispatcher", "overlap_grad_reduce", "overlap_param_gather",
                                            "grad_reduce_in_fp32", "cross_entropy", "optimizer_state_format",
                                            "distributed_optimizer", "fp8_params") if k in recipe})
    if "packed_sample_tokens" in row:  # fine-tuning on packed samples (the row's source says which dataset)
        training["packed_sample_tokens"] = row["packed_sample_tokens"]
    published = row["global_batch"] * row["seq_len"] / (row["tokens_per_s_per_gpu"] * row["gpus"])
    return ({"model": row["model"], "system": system, "parallelism": par, "precision": precision, "training": training},
            published, "step_time_s")


def gpu_training_scenario(step):
    """A training step scripts/device_train_step.py measured on one H200 (tests/data/gpu/h200_train_steps.json) as
    capplan describes it: one micro-batch a step (no accumulation), no recompute, PyTorch's F.cross_entropy over
    fp32 logits (unfused), torch.autocast over fp32 weights (`autocast`), and PyTorch's separate element-wise kernels
    (`kernels: eager`) unless the step ran under torch.compile, whose fused kernels are capplan's default. MPT shapes as GPT-2 configs (LayerNorm, GeLU,
    tied embedding; capplan's GPT-2 carries a learned position table MPT lacks), TinyLlama as a Llama config."""
    if step["llama_style"]:
        model = {"model_type": "llama", "hidden_size": step["hidden"], "intermediate_size": step["ffn"],
                 "num_hidden_layers": step["layers"], "num_attention_heads": step["heads"],
                 "num_key_value_heads": step["kv_heads"], "vocab_size": step["vocab"],
                 "max_position_embeddings": step["seq_len"], "tie_word_embeddings": step.get("tied", False)}
    else:
        model = {"model_type": "gpt2", "n_embd": step["hidden"], "n_head": step["heads"], "n_layer": step["layers"],
                 "n_positions": step["seq_len"], "vocab_size": step["vocab"]}
    training = {"seq_len": step["seq_len"], "global_batch": step["micro_batch"], "micro_batch": step["micro_batch"],
                "recompute": "none", "cross_entropy": "unfused", "autocast": True}
    if not step["compiled"]:
        training["kernels"] = "eager"
    return {"model": model, "system": {"accelerator": "H200", "count": 1}, "training": training}
