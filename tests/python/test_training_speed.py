"""Training step time against Korthikanti et al. 2022 (arXiv:2205.05198) Tables 3 and 5: GPT models
on A100-80GB (Selene), sequence 2048, vocab 51200, micro-batch 1 (22B: 4), selective recompute with
sequence parallelism ("present work") and full recompute without it; and Narayanan et al. 2021
(arXiv:2104.04473) Table 1, 32 to 3,072 A100s. Both ran Megatron-LM before FlashAttention
(flash_attention false: scores materialised) with its default attention and hidden dropout (0.1,
megatron/arguments.py; Korthikanti's activation formula sbh(34 + 5as/h), eq. 1, counts the dropout
masks): dropout true. Rows in tests/data/published_training.json. capplan's efficiencies were not
fitted to these rows."""
import json
import pathlib

import pytest

import capplan

# name: (hidden, heads, layers, tp, pp, vpp, GPUs, global batch, micro batch, (selective s, full s))
TABLE = {
    "22B": (6144, 64, 48, 8, 1, 1, 8, 4, 4, (1.10, 1.42)),
    "175B": (12288, 96, 96, 8, 8, 3, 64, 64, 1, (13.75, 18.13)),
    "530B": (20480, 128, 105, 8, 35, 3, 280, 280, 1, (37.83, 49.05)),
    "1T": (25600, 160, 128, 8, 64, 1, 512, 512, 1, (71.49, 94.42)),
}
CASES = [(name, mode) for name in TABLE for mode in ("selective", "full")]


@pytest.mark.parametrize("name,mode", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_step_time_within_11_percent_of_megatron(name, mode):
    # The worst row, 1T full, is +10.1% (docs/formulas.md §15; +9.8% before the activation kernel and the loss were
    # costed, 2026-12-02). Megatron-LM of 2022: unfused vocab-parallel cross-entropy.
    h, a, layers, tp, pp, vpp, gpus, gbs, mbs, measured = TABLE[name]
    model = {"model_type": "gpt2", "n_embd": h, "n_head": a, "n_layer": layers, "n_positions": 2048, "vocab_size": 51200}
    parallelism = {"tp": tp, "pp": pp, "sequence_parallel": mode == "selective"}
    if vpp > 1:
        parallelism["vpp"] = vpp
    r = capplan.estimate({"model": model, "system": {"preset": "DGX-A100", "count": gpus}, "parallelism": parallelism,
                          "training": {"seq_len": 2048, "global_batch": gbs, "micro_batch": mbs, "recompute": mode,
                                       "flash_attention": False, "dropout": True, "cross_entropy": "unfused"}})
    step = r.to_dict()["training"]["step_time_s"]
    assert step == pytest.approx(measured[0 if mode == "selective" else 1], rel=0.11)


def test_training_result_fields_and_time_to_train():
    r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
                          "parallelism": {"tp": 2, "sequence_parallel": True},
                          "training": {"seq_len": 8192, "global_batch": 512, "recompute": "selective",
                                       "distributed_optimizer": True, "tokens": 1e12, "price_per_device_hour": 2.5}})
    t = r.to_dict()["training"]
    assert 0 < t["mfu"] < t["hfu"] <= 1
    assert t["time_to_train_s"] == pytest.approx(1e12 / t["tokens_per_s"])
    assert t["gpu_hours"] == pytest.approx(t["time_to_train_s"] * 64 / 3600)
    assert t["cost"] == pytest.approx(t["gpu_hours"] * 2.5)
    assert r.bottleneck in [c["stage"] for c in r.to_dict()["chain"]]


def test_layout_search_ranks_layouts_that_fit_and_agrees_with_estimate():
    scenario = {"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
                "training": {"seq_len": 8192, "global_batch": 256}}
    r = capplan.search_training(scenario, top_k=5)
    assert r["enumerated"] >= r["fit"] >= len(r["best"]) > 0
    steps = [b["step_time_s"] for b in r["best"]]
    assert steps == sorted(steps)
    _check_layout_alone(scenario, r["best"][0])


def test_a_context_parallel_layout_from_the_search_agrees_with_estimate():
    # 70B on 256 H100s at 8192 tokens: the best layouts use cp and ZeRO-3 (the training notebook's case;
    # the notebook once re-estimated its best layout 5x slower than the search had ranked it).
    scenario = {"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 256},
                "training": {"seq_len": 8192, "global_batch": 512}}
    best = capplan.search_training(scenario, top_k=3)["best"]
    assert any(b["cp"] > 1 for b in best)
    for b in best:
        _check_layout_alone(scenario, b)


def _check_layout_alone(scenario, b):
    """A layout the search returned, estimated alone: it fits and has the same step time."""
    again = capplan.estimate({**scenario, "parallelism": {k: b[k] for k in ("tp", "pp", "cp", "ep", "vpp", "pipeline_schedule")} |
                              {"sequence_parallel": b["sequence_parallel"]},
                              "training": {**scenario["training"], "micro_batch": b["micro_batch"],
                                           "recompute": b["recompute"], "zero": b["zero"],
                                           "distributed_optimizer": b["distributed_optimizer"],
                                           "shard_group": b["shard_group"]}})
    assert again.memory.fits is True
    assert again.to_dict()["training"]["step_time_s"] == pytest.approx(b["step_time_s"], rel=1e-9)


def test_cli_size_training(run_cli):
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", "--count", "16",
                             "--seq-len", "4096", "--global-batch", "128", "--top", "3")
    assert code == 0, err
    assert out.splitlines()[0].startswith("Llama-3.1-8B: training on 16 x H100-SXM (DGX-H100)")  # what was sized
    assert out.splitlines()[1].split()[:3] == ["tp", "pp", "dp"] and "fit memory" in out


def test_checkpoint_and_goodput_in_the_result():
    # Llama 3 (arXiv:2407.21783 §3.3.4): 419 unexpected interruptions in 54 days on 16,384 GPUs
    # -> MTBF of 256 GPUs = 54 x 24 h x 16384 / 419 / 256 = 198 h.
    r = capplan.estimate({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 256},
                          "parallelism": {"tp": 8, "pp": 2, "sequence_parallel": True},
                          "training": {"seq_len": 8192, "global_batch": 512, "recompute": "selective",
                                       "distributed_optimizer": True}})
    c = r.to_dict()["checkpoint"]
    assert c["mtbf_s"] / 3600 == pytest.approx(54 * 24 * 16384 / 419 / 256, rel=0.01)
    # 14 B per parameter (bf16 weights, fp32 master, two fp32 moments; no gradients) = 987.75 GB
    assert c["size_bytes"] == pytest.approx(14 * 70_553_706_496, rel=0.01)
    assert 0 < c["stall_s"] <= c["save_s"] and 0 < c["goodput"] < 1
    assert "checkpoint" in repr(r) and "training step" in repr(r)


def test_checkpoint_size_without_a_storage_tier():
    # The size does not depend on the storage (issue #20 item 5): a system without storage still gets it, the
    # same 14 B per parameter, and no save time.
    r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "HGX-B200", "count": 8},
                          "training": {"seq_len": 4096, "global_batch": 64}})
    c = r.to_dict()["checkpoint"]
    assert c["size_bytes"] == pytest.approx(14 * 8_030_261_248, rel=0.01)
    assert c["save_s"] is None and c["goodput"] is None and c["mtbf_s"] > 0
    assert "save time: name a storage tier" in repr(r)


def test_thousands_of_gpus_within_10_percent():
    # Korthikanti et al. 2022 §6.3: the 530B model of Table 5 (tp 8, pp 35, vpp 3, selective recompute
    # + SP, micro-batch 1) scaled to 8-way data parallelism on 2240 A100s with the batch x 8: 39.15 s.
    model = {"model_type": "gpt2", "n_embd": 20480, "n_head": 128, "n_layer": 105, "n_positions": 2048, "vocab_size": 51200}
    r = capplan.estimate({"model": model, "system": {"preset": "DGX-A100", "count": 2240},
                          "parallelism": {"tp": 8, "pp": 35, "vpp": 3, "sequence_parallel": True},
                          "training": {"seq_len": 2048, "global_batch": 2240, "micro_batch": 1, "recompute": "selective",
                                       "flash_attention": False, "dropout": True, "cross_entropy": "unfused"}})
    assert r.to_dict()["training"]["step_time_s"] == pytest.approx(39.15, rel=0.10)


NARAYANAN = [r for r in json.loads((pathlib.Path(__file__).parents[1] / "data" / "published_training.json").read_text())["rows"]
             if r["id"].startswith("narayanan2021-t1-")]


@pytest.mark.parametrize("row", NARAYANAN, ids=[r["id"] for r in NARAYANAN])
def test_weak_scaling_from_32_to_3072_a100s_within_11_percent(row):
    # Narayanan et al. 2021 Table 1 (weak scaling, full recompute, sequence 2048, vocab 51200): the
    # step time is the paper's eq. (3) FLOPs over the published TFLOP/s per GPU,
    # F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). Micro-batch (1) and the plain 1F1B schedule are
    # assumptions: the table does not give them. From 0.0% (76.1B) to +10.2% (18.4B; +9.3% before the activation
    # kernel and the loss were costed, 2026-12-02); without the dropout passes 1.7B was -11.2%.
    sh, s, v = row["shape"], 2048, 51200
    b, l, h = row["global_batch"], sh["layers"], sh["hidden"]
    flops = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
    measured = flops / (row["gpus"] * row["achieved_tflops_per_gpu"]["value"] * 1e12)
    model = {"model_type": "gpt2", "n_embd": h, "n_head": sh["heads"], "n_layer": l, "n_positions": s, "vocab_size": v}
    r = capplan.estimate({"model": model, "system": {"preset": "DGX-A100", "count": row["gpus"]},
                          "parallelism": {"tp": row["tp"], "pp": row["pp"]},
                          "training": {"seq_len": s, "global_batch": b, "micro_batch": 1, "recompute": "full",
                                       "flash_attention": False, "dropout": True, "cross_entropy": "unfused"}})
    assert r.memory.fits is True
    assert r.to_dict()["training"]["step_time_s"] == pytest.approx(measured, rel=0.11)


# H100, FP8 (Transformer Engine), global batch 128, micro-batch 1: step time = GBS x seq /
# (tokens/s/GPU x GPUs) from NVIDIA's published tokens/s per GPU (tests/data/published_training.json):
# Llama-3-70B shapes on 64 GPUs at sequence 8192 (NeMo 24.07 1533 tok/s/GPU; Megatron-Bridge 25.11
# 1602), NeMo 24.07 Llama-2-7B on 8 GPUs (16847), Llama-2-13B on 16 (8646) and Llama-2-70B on 64
# (1707) at 4096, GPT-3 175B on 128 (726, sequence 2048, batch 256). Recompute and the optimizer
# sharding are not stated; none and the distributed optimizer are taken. With tp > 1 the recipes
# overlap tensor-parallel communication (NeMo llama3_70b pretrain_recipe_performance:
# MegatronCommOverlapCallback(tp_comm_overlap=True); Megatron-Bridge's H100 Llama-3-70B config:
# userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192). Their FP8 precision recipe (NeMo 2.0 and
# Megatron-Bridge bf16_with_fp8_mixed) sets fp8_params / fp8_param_gather = True: FP8 primary weights,
# without which the 512- and 1024-GPU runs would not fit. GPT-3 175B on 512 GPUs (782 tok/s/GPU,
# micro-batch 2, batch 2048) and Megatron-Bridge 25.11 Llama-3.1-405B on 1024 (292, tp 8 pp 8 cp 2
# vpp 8, batch 512), and Megatron-Bridge 25.11 Llama-3-8B on 8 GPUs with FSDP (14451; ZeRO-3 over the 8,
# 16-bit primary weights: FSDP shards them instead). The H100 FP8 GEMM efficiency was fitted jointly to
# these rows and TensorRT-LLM's H100 FP8 prefill (catalog: the value with the smallest largest error
# relative to each check's tolerance), so they check its spread, not its level.
@pytest.mark.parametrize("label,model,gpus,seq,batch,mbs,parallelism,tokens_per_gpu", [
    ("NeMo 24.07 Llama-3-70B tp4 pp4 cp2 vpp5", "Llama-3.1-70B", 64, 8192, 128, 1,
     {"tp": 4, "pp": 4, "cp": 2, "vpp": 5, "sequence_parallel": True}, 1533),
    ("Megatron-Bridge 25.11 Llama-3-70B tp4 pp8 vpp5", "Llama-3.1-70B", 64, 8192, 128, 1,
     {"tp": 4, "pp": 8, "vpp": 5, "sequence_parallel": True}, 1602),
    ("NeMo 24.07 Llama-2-7B 8 GPUs", "Llama-2-7B", 8, 4096, 128, 1, {"tp": 1}, 16847),
    ("NeMo 24.07 Llama-2-13B pp4 vpp10", "Llama-2-13B", 16, 4096, 128, 1, {"tp": 1, "pp": 4, "vpp": 10}, 8646),
    ("NeMo 24.07 Llama-2-70B tp4 pp4 vpp20", "Llama-2-70B", 64, 4096, 128, 1,
     {"tp": 4, "pp": 4, "vpp": 20, "sequence_parallel": True}, 1707),
    ("NeMo 24.07 GPT-3 175B tp4 pp8 vpp6", "GPT-3-175B", 128, 2048, 256, 1,
     {"tp": 4, "pp": 8, "vpp": 6, "sequence_parallel": True}, 726),
    ("NeMo 24.07 GPT-3 175B on 512 GPUs, micro-batch 2", "GPT-3-175B", 512, 2048, 2048, 2,
     {"tp": 4, "pp": 8, "vpp": 6, "sequence_parallel": True}, 782),
    ("Megatron-Bridge 25.11 Llama-3.1-405B on 1024 GPUs tp8 pp8 cp2 vpp8", "Llama-3.1-405B", 1024, 8192, 512, 1,
     {"tp": 8, "pp": 8, "cp": 2, "vpp": 8, "sequence_parallel": True}, 292),
    ("Megatron-Bridge 25.11 Llama-3-8B on 8 GPUs, FSDP", "Llama-3.1-8B", 8, 8192, 128, 1, {"tp": 1}, 14451),
])
def test_h100_fp8_training_within_10_percent(label, model, gpus, seq, batch, mbs, parallelism, tokens_per_gpu):
    fsdp = "FSDP" in label
    sharding = {"zero": 3} if fsdp else {"distributed_optimizer": True, "fp8_params": True}
    r = capplan.estimate({"model": model, "system": {"preset": "DGX-H100", "count": gpus},
                          "parallelism": parallelism, "precision": {"weights": "bf16", "compute": "fp8"},
                          "training": {"seq_len": seq, "global_batch": batch, "micro_batch": mbs, "recompute": "none",
                                       "tp_comm_overlap": parallelism["tp"] > 1, **sharding}})
    measured_step = batch * seq / (tokens_per_gpu * gpus)
    assert r.memory.fits is True
    # Worst: NeMo 24.07 Llama-2-13B -7.6%, GPT-3 175B on 512 GPUs +6.2% (docs/formulas.md section 15).
    assert r.to_dict()["training"]["step_time_s"] == pytest.approx(measured_step, rel=0.10), label


# B200, FP8 (current scaling), Megatron-Bridge 25.11 (tests/data/published_training.json): Llama-3-8B on 8
# GPUs (micro-batch 2, 30624 tokens/s/GPU) and Llama-3.1-405B on 128 (tp 4, pp 8, cp 2, vpp 8; 661). B200's
# efficiencies are derived, not fitted to these rows: memory from nvbench (6.721 of 7.7 TB/s), bf16 from
# its maximum achievable matmul (0.776) x 0.76 as for H100, fp8 = bf16 x H100's fp8/bf16 in-engine ratio.
# Without them (the catalog's means, 0.61 of the fp8 peak) the rows were -24% and -18%.
@pytest.mark.parametrize("label,model,gpus,mbs,parallelism,tokens_per_gpu", [
    ("Megatron-Bridge 25.11 B200 Llama-3-8B", "Llama-3.1-8B", 8, 2, {"tp": 1}, 30624),
    ("Megatron-Bridge 25.11 B200 Llama-3.1-405B tp4 pp8 cp2 vpp8", "Llama-3.1-405B", 128, 1,
     {"tp": 4, "pp": 8, "cp": 2, "vpp": 8, "sequence_parallel": True}, 661),
])
def test_b200_fp8_training_within_10_percent(label, model, gpus, mbs, parallelism, tokens_per_gpu):
    batch = 128 if gpus == 8 else 64
    r = capplan.estimate({"model": model, "system": {"preset": "DGX-B200", "count": gpus},
                          "parallelism": parallelism, "precision": {"weights": "bf16", "compute": "fp8"},
                          "training": {"seq_len": 8192, "global_batch": batch, "micro_batch": mbs, "recompute": "none",
                                       "distributed_optimizer": True, "fp8_params": True,
                                       "tp_comm_overlap": parallelism["tp"] > 1}})
    assert r.memory.fits is True
    # -0.5% and +4.6%.
    assert r.to_dict()["training"]["step_time_s"] == pytest.approx(batch * 8192 / (tokens_per_gpu * gpus), rel=0.10), label


def _dp_term(model, count, gb, zero, shard_group=None, tp=8):
    training = {"seq_len": 4096, "global_batch": gb, "zero": zero}
    if shard_group:
        training["shard_group"] = shard_group
    r = capplan.estimate({"model": model, "system": {"preset": "DGX-H100", "count": count},
                          "parallelism": {"tp": tp}, "training": training})
    return next(t for t in r.to_dict()["training"]["breakdown"] if t["term"].startswith("dp gradients"))


def test_zero_communication_per_step_and_per_micro_batch():
    # ZeRO (arXiv:1910.02054 §7): stages 0-1 all-reduce the accumulated gradients once per step, so
    # twice the micro-batches leave it unchanged; stage 3 reduce-scatters gradients and all-gathers
    # parameters twice for every micro-batch, so its traffic doubles with them.
    z1 = [_dp_term("Llama-3.1-8B", 32, gb, 1)["time_s"] for gb in (16, 32)]
    z3 = [_dp_term("Llama-3.1-8B", 32, gb, 3)["time_s"] for gb in (16, 32)]
    assert z1[1] == pytest.approx(z1[0])
    assert z3[1] == pytest.approx(2 * z3[0])
    assert "zero-3" in _dp_term("Llama-3.1-8B", 32, 16, 3)["term"]
    # HSDP: sharding over one node's dp ranks keeps the per-micro-batch reduce-scatters and gathers on NVLink
    # (4 micro-batches: 4 x (a reduce-scatter of the gradients + two all-gathers of the 16-bit weights) among 8 GPUs)
    # and adds one all-reduce of a shard (1/8 of the gradients) per step across the 16 nodes, each GPU with the
    # ranks of its rail on the other nodes.
    hsdp = _dp_term("Llama-3.1-70B", 128, 512, 3, shard_group=8, tp=1)
    params = 70_553_706_496
    node = {"preset": "DGX-H100", "count": 128}
    def coll(op, size, gpus, per_node):
        return capplan.collective(op, capplan.Quantity(float(size), "B"), system=node, gpus=gpus, per_node=per_node).time_s
    intra = 4 * (coll("reduce_scatter", 2 * params, 8, 8) + 2 * coll("all_gather", 2 * params, 8, 8))
    inter = coll("all_reduce", 2 * params / 8, 16, 1)
    assert hsdp["time_s"] == pytest.approx(intra + inter, rel=1e-9)


def test_hsdp_replicas_one_a_rack_cross_the_nics():
    # 288 GB200 on four NVL72 racks, a shard group of 72 (one rack): the per-micro-batch reduce-scatters and gathers stay
    # on the rack's NVLink (2 micro-batches), and a shard's replicas, one in each rack, all-reduce 1/72 of the 16-bit
    # gradients over their own NICs: a ring of 4 GPUs each on one 400 Gb/s NIC at 0.94, 2 x 3/4 x S / 47 GB/s (the
    # replicas range over all 72 trays; they were modelled inside one rack's NVLink).
    params = 70_553_706_496
    rack = {"preset": "GB200-NVL72", "count": 288}
    r = capplan.estimate({"model": "Llama-3.1-70B", "system": rack, "parallelism": {"tp": 1},
                          "training": {"seq_len": 4096, "global_batch": 576, "zero": 3, "shard_group": 72}})
    hsdp = next(t for t in r.to_dict()["training"]["breakdown"] if t["term"].startswith("dp gradients"))
    def coll(op, size):
        return capplan.collective(op, capplan.Quantity(float(size), "B"), system=rack, gpus=72, per_node=4).time_s
    intra = 2 * (coll("reduce_scatter", 2 * params) + 2 * coll("all_gather", 2 * params))
    inter = 2 * params / 72 * 2 * 3 / 4 / 47e9
    assert hsdp["time_s"] == pytest.approx(intra + inter, rel=0.01)


def test_layout_search_covers_hsdp_and_the_distributed_optimizer():
    scenario = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16},
                "training": {"seq_len": 4096, "global_batch": 64}}
    r = capplan.search_training(scenario, top_k=400)
    seen = {(b["zero"], b["distributed_optimizer"], b["shard_group"] < b["dp"]) for b in r["best"]}
    assert any(z == 0 and d for z, d, _ in seen)  # Megatron's distributed optimizer
    assert any(z >= 1 and h for z, _, h in seen)  # HSDP shard groups
    # Each candidate re-estimated alone gives the same step time and fits (the search's fit = the estimate's).
    for b in r["best"][:: max(1, len(r["best"]) // 7)]:
        _check_layout_alone(scenario, b)


def test_more_gpus_at_fixed_work_per_gpu_never_lower_total_throughput():
    # Weak scaling by data parallelism (issue 6): each 8-GPU replica keeps 8 sequences per step, so the only
    # thing that grows is the gradient all-reduce (plain data parallelism: the optimizer is not sharded,
    # so each GPU's optimizer work is fixed too); total tokens/s may grow less than the GPUs, never fall.
    rates = []
    for count in (8, 16, 64, 256, 1024):
        r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": count},
                              "parallelism": {"tp": 8, "sequence_parallel": True},
                              "training": {"seq_len": 8192, "global_batch": count}})
        t = r.to_dict()["training"]
        dp = next(x for x in t["breakdown"] if x["term"].startswith("dp gradients"))
        rates.append((count, t["tokens_per_s"], dp["time_s"]))
    for (n0, r0, c0), (n1, r1, c1) in zip(rates, rates[1:]):
        assert r1 > r0
        assert r1 / r0 <= n1 / n0 * (1 + 1e-9)  # never super-linear
        assert c1 >= c0 - 1e-12                 # what costs the scaling: the all-reduce, growing with dp


def test_tp_comm_overlap_hides_tensor_parallel_traffic_and_needs_sequence_parallelism():
    def run(overlap, sp=True, full=False):
        r = capplan.estimate({"model": "Llama-2-70B", "system": {"preset": "DGX-H100", "count": 64},
                                 "parallelism": {"tp": 4, "pp": 4, "vpp": 20, "sequence_parallel": sp},
                                 "precision": {"weights": "bf16", "compute": "fp8"},
                                 "training": {"seq_len": 4096, "global_batch": 128, "tp_comm_overlap": overlap,
                                              "distributed_optimizer": True}}).to_dict()
        return r if full else r["training"]
    plain, hidden = run(False), run(True)
    term = {t["term"]: t for t in plain["breakdown"]}
    tp = term["tp communication"]["exposed_s"]
    hidden_tp = {t["term"]: t for t in hidden["breakdown"]}["tp communication"]
    assert tp > 0 and hidden_tp["exposed_s"] == 0.0
    assert hidden_tp["time_s"] == pytest.approx(term["tp communication"]["time_s"])  # still shown, as overlapped
    # The step loses the hidden traffic, and the pipeline bubble (in micro-batch times) shrinks with it.
    bubble = term["pipeline bubble"]["exposed_s"]
    bubble_hidden = {t["term"]: t for t in hidden["breakdown"]}["pipeline bubble"]["exposed_s"]
    assert 0 < bubble_hidden < bubble
    assert plain["step_time_s"] - hidden["step_time_s"] == pytest.approx(tp + bubble - bubble_hidden, rel=1e-9)
    # FP8 training pays the casts (4 bytes per GEMM input/gradient element); 16-bit training does not.
    assert term["fp8 casts"]["exposed_s"] > 0
    # ... device work, so the chain counts them under compute (with forward, backward, recompute and the loss).
    chain = {c["stage"]: c["time_s"] for c in run(False, full=True)["chain"]}
    compute = sum(term[k]["exposed_s"] for k in ("forward", "backward", "recompute", "fp8 casts", "loss (cross-entropy)"))
    assert chain["compute"] == pytest.approx(compute)
    bf16 = capplan.estimate({"model": "Llama-2-70B", "system": {"preset": "DGX-H100", "count": 64},
                             "parallelism": {"tp": 4, "pp": 4, "vpp": 20, "sequence_parallel": True},
                             "training": {"seq_len": 4096, "global_batch": 128}}).to_dict()["training"]
    assert {t["term"]: t for t in bf16["breakdown"]}["fp8 casts"]["exposed_s"] == 0.0
    with pytest.raises(capplan.ConfigError) as e:
        run(True, sp=False)
    assert e.value.field == "/training/tp_comm_overlap"


_TRAINING_ROWS = json.loads((pathlib.Path(__file__).parents[1] / "data" / "published_training.json").read_text())["rows"]
MOSAIC = [r for r in _TRAINING_ROWS if r["id"].startswith("mosaic-llmfoundry") and not r.get("known_gap")]


@pytest.mark.parametrize("row", MOSAIC, ids=[r["id"] for r in MOSAIC])
def test_llm_foundry_rows_within_10_percent(row):
    # MosaicML llm-foundry's benchmark table (PyTorch FSDP FULL_SHARD = ZeRO-3 over all GPUs, amp_bf16, Tri Dao's
    # Triton FlashAttention, its benchmark script's default: published_support); step = global batch x sequence / tokens
    # per second. The A100 rows are held out; the H100 rows fitted (the Triton port's H100 rate is FlashAttention v1's,
    # chosen with them in view). The kernel's published rates (catalog efficiency.attention_kernels, FlashAttention-2's
    # Fig. 4 and 7) moved these from -26..-1% to -4..+8%.
    _check_fits_and_within(row, 0.10)


def _check_fits_and_within(row, rel):
    """A published training row as its family's test runs it: the layout fits and the modelled step (or MFU) is within
    `rel` of the published one."""
    from published_support import training_published
    scenario, published, key = training_published(row)
    r = capplan.estimate(scenario)
    assert r.memory.fits is True
    assert r.to_dict()["training"][key] == pytest.approx(published, rel=rel)


def test_fp8_primary_weights_drop_the_16_bit_copy_of_the_block_weights():
    # Llama-3.1-8B block weights per layer: q, o 4096 x 4096 each, k, v 4096 x 1024 each, gate/up/down
    # 3 x 4096 x 14336 = 218,103,808; x 32 layers = 6,979,321,856. With FP8 primary weights their
    # 2-byte copy is gone (the FP8 copy and its transpose stay).
    def run(**training):
        return capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                                 "precision": {"weights": "bf16", "compute": "fp8"},
                                 "training": {"seq_len": 4096, "global_batch": 64, "distributed_optimizer": True,
                                              **training}}).to_dict()["memory"]
    assert run()["weights_bytes"] - run(fp8_params=True)["weights_bytes"] == pytest.approx(2 * 6_979_321_856)
    with pytest.raises(capplan.ConfigError) as e:
        run(fp8_params=True, zero=3)
    assert e.value.field == "/training/fp8_params"
    with pytest.raises(capplan.ConfigError) as e:
        capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                          "training": {"seq_len": 4096, "global_batch": 64, "fp8_params": True}})
    assert e.value.field == "/training/fp8_params"


def test_dropout_masks_in_activation_memory():
    # Llama-3.1-8B, sequence 4096, micro-batch 1, tp 1, scores materialised, no recompute. Dropout adds,
    # per layer, a 1-byte mask after attention and after the MLP (2 s h) and, per score, a 1-byte mask
    # and the 2-byte dropped copy (3 a s^2) (Korthikanti et al. 2022 eq. 1: sbh(34 + 5as/h)); and the
    # embedding's 1-byte mask once (s h, ibid. §4.3): 32 x (2 x 4096^2 + 3 x 32 x 4096^2) + 4096^2 bytes.
    def activations(dropout):
        r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8}, "parallelism": {"tp": 1},
                              "training": {"seq_len": 4096, "global_batch": 8, "flash_attention": False, "dropout": dropout}})
        return r.to_dict()["memory"]["activations_bytes"]
    s = 4096
    assert activations(True) - activations(False) == 32 * (2 * s * s + 3 * 32 * s * s) + s * s


def test_context_parallel_ranks_join_the_gradient_reduction():
    # Context-parallel ranks hold the same weights and see other tokens of the same sequences, so the
    # gradients reduce over dp x cp (Megatron-LM: data-parallel group with context parallelism) and the
    # distributed optimizer shards over it: dp 4 x cp 2 on one 8-GPU node reduces and updates exactly as
    # dp 8 does (same bytes per device, the same 8 ranks on NVLink).
    def terms(cp):
        r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                              "parallelism": {"tp": 1, "cp": cp},
                              "training": {"seq_len": 8192, "global_batch": 64, "distributed_optimizer": True}})
        return {t["term"]: t["time_s"] for t in r.to_dict()["training"]["breakdown"]}
    plain, context = terms(1), terms(2)
    assert context["dp gradients"] == pytest.approx(plain["dp gradients"], rel=1e-12)
    assert context["optimizer step"] == pytest.approx(plain["optimizer step"], rel=1e-12)
    assert context["cp ring exchange"] > 0  # reported whole; the part attention hides is not exposed


def test_context_parallel_all_gather_and_all_to_all_by_hand():
    # Llama-3.1-8B, sequence 8192 over cp = 2 on one DGX-H100 (dp 4), 64 sequences a step: 16 micro-batches of one.
    # Each rank's K and V per layer: 4096 tokens x 2 x 8 heads x 128 x 2 B = 16,777,216 B.
    def run(algorithm):
        r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                              "parallelism": {"tp": 1, "cp": 2, "cp_algorithm": algorithm},
                              "training": {"seq_len": 8192, "global_batch": 64}})
        return {t["term"]: t for t in r.to_dict()["training"]["breakdown"]}

    def coll(op, size):
        return capplan.collective(op, capplan.Quantity(float(size), "B"), system="DGX-H100", gpus=2).time_s
    kv = 4096 * 2 * 8 * 128 * 2
    # Llama 3's all-gather CP: per layer an all-gather of both ranks' K/V and a reduce-scatter of their gradients,
    # all of it on the critical path.
    gather = run("all_gather")["cp all_gather"]
    per_layer = coll("all_gather", 2 * kv) + coll("reduce_scatter", 2 * kv)
    assert gather["time_s"] == pytest.approx(16 * 32 * per_layer, rel=1e-9)
    assert gather["exposed_s"] == gather["time_s"]
    # Ulysses: Q and O (4096 tokens x 4096 x 2 B each) and K/V re-split by an all-to-all, forward and backward.
    ulysses = run("all_to_all")["cp all_to_all"]
    assert ulysses["time_s"] == pytest.approx(16 * 32 * 2 * coll("all_to_all", 4096 * 2 * 4096 * 2 + kv), rel=1e-9)
    # Ring attention hides its exchange under attention where it can.
    ring = run("ring")["cp ring exchange"]
    assert ring["exposed_s"] <= ring["time_s"]
    for parallelism, field in (({"tp": 4, "cp": 16, "cp_algorithm": "all_to_all"}, "/parallelism/cp_algorithm"),
                               ({"tp": 1, "cp": 2, "cp_algorithm": "mesh"}, "/parallelism/cp_algorithm")):
        with pytest.raises(capplan.ConfigError) as e:
            capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
                              "parallelism": parallelism, "training": {"seq_len": 8192, "global_batch": 64}})
        assert e.value.field == field


LARGE_RUNS = [r for r in _TRAINING_ROWS if r["id"].startswith(("llama3", "megascale"))]


@pytest.mark.parametrize("row", LARGE_RUNS, ids=[r["id"] for r in LARGE_RUNS])
def test_runs_up_to_16k_gpus_fit_and_are_within_12_percent(row):
    # Issue #20: runs above 8k GPUs. Llama 3 405B on 8,192 and 16,384 H100s (arXiv:2407.21783 Table 4), run as §3.3.2
    # describes it (sequence-parallel TP, V = 8 one-layer chunks, ZeRO-2-like FSDP): fitted rows (the two settings were
    # settled after seeing their errors), +10.0%, +9.2%, +3.4% in MFU; Meta's MFU formula is not published. Held out:
    # MegaScale's Megatron-LM baseline of a 175B GPT (arXiv:2402.15627 Table 2) on 256 to 12,288 Ampere GPUs, RoCE
    # 8 x 200G a node in a 1:1 three-tier Clos, settings the paper leaves out assumed from the same team's 175B recipe
    # before predicting, iteration time predicted once (2026-12-04): +10.1%, +5.4%, -0.5%, -3.3% at batch 768; +2.2%,
    # +2.6%, -5.7% (8,192 GPUs), -7.6% (12,288) at batch 6,144. (published_support runs each family.)
    _check_fits_and_within(row, 0.12)


def _expert_parallel(row):
    return isinstance(row["ep"], int) and row["ep"] > 1  # "n/a" / null: a dense model


MOE = [r for r in _TRAINING_ROWS if r.get("recipe") and _expert_parallel(r) and not r["id"].startswith("mbridge2606")]
# Megatron-Bridge 26.06's MoE tables (held out, tests/data/published_training.json _meta.mbridge2606_moe_rule)
MOE_2606 = [r for r in _TRAINING_ROWS if r["id"].startswith("mbridge2606") and _expert_parallel(r)]
DENSE_2606 = [r for r in _TRAINING_ROWS if r["id"].startswith("mbridge2606") and not _expert_parallel(r)]


@pytest.mark.parametrize("row", MOE, ids=[r["id"] for r in MOE])
def test_moe_training_rows_as_their_recipes_ran_them(row):
    # Issue #20 item 2: nine Megatron-Bridge MoE rows with their recipes' recompute modules, MTP, overlap and
    # dispatcher. All fast today (-1% to -38%, docs/validation.md: a documented gap); this pins the direction and the
    # bound so a change that widens the gap, or flips it, is seen.
    # Every layout fits its part, as it ran (two B200 layouts did not until their recipes' 16-bit gradient reduction
    # was read, 2026-12-05).
    from published_support import training_published
    scenario, published, key = training_published(row)
    r = capplan.estimate(scenario).to_dict()
    assert r["memory"]["fits"] is True
    assert 0.55 * published <= r["training"][key] <= published


@pytest.mark.parametrize("row", MOE_2606, ids=[r["id"] for r in MOE_2606])
def test_megatron_bridge_2606_moe_rows_as_their_recipes_ran_them(row):
    # 18 lines on GB300, GB200, B300 and H100, predicted once held out (2026-12-05): DeepSeek-V3 -3.8% to +11.1%,
    # Qwen3-235B-A22B -7.9%, -4.0%, Kimi-K2 -1.5%; the small-expert models fast, gpt-oss-120b -20.1% to -38.6%,
    # Qwen3-30B-A3B -10.1% to -24.4%, Nemotron-3-Nano -18.9% to -28.7% on Blackwell (+13.3% on H100). Those fast beyond
    # 12% carry the MoE gap (known_gap); every row within [-40%, +15%].
    from published_support import training_published
    scenario, published, key = training_published(row)
    error = capplan.estimate(scenario).to_dict()["training"][key] / published - 1
    assert -0.40 <= error <= 0.15, error
    assert (error < -0.12) == bool(row.get("known_gap")), error


def test_megatron_bridge_2606_moe_layouts_fit_as_they_ran_but_the_documented_overestimates():
    # Every layout ran, so each should fit. The memory model's known overestimates on these rows (each row's
    # role_note) are allowed to be over: Qwen3-30B-A3B at micro-batch 8 on GB300 and B300, and Kimi-K2 (287.5 GB
    # against 279 usable with Muon's states sharded as its layer-wise distributed optimizer does, where Muon keeps one
    # state a parameter and capplan runs Adam's two). Nothing else may be.
    from published_support import training_published
    over = {r["id"] for r in MOE_2606 if not capplan.estimate(training_published(r)[0]).memory.fits}
    assert over <= {"mbridge2606-gb300-qwen3_30b_a3b-8gpu", "mbridge2606-b300-qwen3_30b_a3b-8gpu",
                    "mbridge2606-gb300-kimi_k2-256gpu"}


@pytest.mark.parametrize("row", DENSE_2606, ids=[r["id"] for r in DENSE_2606])
def test_megatron_bridge_2606_dense_rows_as_their_recipes_ran_them(row):
    # Megatron-Bridge 26.06's Llama-3.1-405B pre-training (256 GB200 / GB300, 1,024 H100; predicted once on 2026-12-05;
    # the GB300 rows fitted: GB300's fp8 fraction was decided with them in view) and Llama-3-70B SFT (32 GPUs; fitted:
    # grad_reduce_in_fp32 was written after their first prediction)
    # with the recipes' 16-bit gradient reduction; the SFT rows attend within each packed SQuAD sample since 2026-12-05
    # (packed_sample_tokens, tests/data/published_lora.json _meta.squad_packing_rule; before it GB200 +3.1%, -4.2%, H100
    # +2.5%, GB300 +23.1%, +10.1%). Within issue #20's 12%: GB200 SFT -3.8%, -10.5%, H100 SFT -2.9%, GB300 SFT MXFP8
    # +4.0%, 405B H100 +11.9%, GB200 MXFP8 +7.7%, 405B GB300 MXFP8 +10.4%. Beyond it, a documented gap (FP8 current
    # scaling runs 7-12% faster than MXFP8 in these tables, capplan runs both at one fp8 fraction): GB300 SFT FP8
    # +16.3%, 405B GB300 FP8 +26.4%, GB200 FP8 +16.5%, all slow: their bound fails a change that flips them or widens
    # the gap past 30%.
    from published_support import training_published
    scenario, published, key = training_published(row)
    r = capplan.estimate(scenario)
    assert r.memory.fits is True
    step = r.to_dict()["training"][key]
    if row.get("known_gap"):
        assert published <= step <= 1.30 * published
    else:
        assert step == pytest.approx(published, rel=0.12)


NEMO2407_SFT = [r for r in _TRAINING_ROWS if r["id"].startswith("nemo2407") and "-sft-" in r["id"]]


@pytest.mark.parametrize("row", NEMO2407_SFT, ids=[r["id"] for r in NEMO2407_SFT])
def test_nemo2407_sft_rows_as_their_launcher_scripts_ran_them(row):
    # NeMo 24.07's Llama 2 full fine-tuning on packed SQuAD, FP8 on 8 and 16 H100 (tests/data/published_lora.json
    # _meta.nemo2407_finetune_rule; attention within each sample, packed_sample_tokens 317), predicted once held out
    # (2026-12-05): 7B -8.4%, 13B (pp 4, vpp 10) +3.1%, 70B (tp 4 pp 4 vpp 20, sequence parallelism with overlap) +2.0%.
    # Within issue #20's 12%, and the layouts fit (the runs did).
    _check_fits_and_within(row, 0.12)


def test_grad_reduce_in_fp32_sets_the_gradients_bytes_in_memory_and_on_the_wire():
    # Megatron's main gradients in 16 bits (grad_reduce_in_fp32 false, Megatron-Bridge's performance recipes) against
    # fp32 (the distributed optimizer's default): Llama-3.1-70B on 32 GB200 at pp 2 (dp 16), 2 bytes a parameter
    # against 4 in memory, and half the bytes in the data-parallel reduction (its latency terms aside).
    base = {"model": "Llama-3.1-70B", "system": {"preset": "GB200-NVL72", "count": 32},
            "parallelism": {"tp": 1, "pp": 2},
            "training": {"seq_len": 4096, "global_batch": 32, "distributed_optimizer": True, "overlap_grad_reduce": False}}
    def run(flag):
        scenario = json.loads(json.dumps(base))
        if flag is not None:
            scenario["training"]["grad_reduce_in_fp32"] = flag
        return capplan.estimate(scenario).to_dict()
    default, fp32, bf16 = run(None), run(True), run(False)
    assert default["memory"]["gradients_bytes"] == fp32["memory"]["gradients_bytes"]
    params = fp32["memory"]["gradients_bytes"] / 4
    assert bf16["memory"]["gradients_bytes"] == pytest.approx(params * 2, rel=1e-12)
    terms = {f: {t["term"]: t["time_s"] for t in r["training"]["breakdown"]} for f, r in (("fp32", fp32), ("bf16", bf16))}
    assert terms["bf16"]["dp gradients"] == pytest.approx(0.5 * terms["fp32"]["dp gradients"], rel=0.01)
    # Without the distributed optimizer capplan's gradients follow the weights (2 B in bf16); true makes them fp32.
    plain = json.loads(json.dumps(base))
    del plain["training"]["distributed_optimizer"]
    assert capplan.estimate(plain).to_dict()["memory"]["gradients_bytes"] == pytest.approx(params * 2, rel=1e-12)
    plain["training"]["grad_reduce_in_fp32"] = True
    assert capplan.estimate(plain).to_dict()["memory"]["gradients_bytes"] == pytest.approx(params * 4, rel=1e-12)


def test_training_limits_keep_recompute_modules_only_with_selective_recompute():
    # The limits step re-estimates the searched layout with full recompute (its frugal settings): the scenario's
    # recompute_modules (which only selective recompute takes) must not reach it, nor a DualPipe schedule, whose
    # micro-batch rule the frugal micro-batch 1 can break.
    scenario = {"model": "Mixtral-8x7B", "system": {"preset": "DGX-H100", "count": 64},
                "training": {"seq_len": 4096, "global_batch": 256, "recompute_modules": ["moe_act"]}}
    lim = capplan.training_limits(scenario)
    assert lim["fits"] is True
    assert lim["limits_with"]["recompute"] == "full"
    assert lim["largest_micro_batch"] >= 1 and lim["longest_sequence"] >= 4096


def test_size_training_attention_kernel_slows_the_step_where_published(run_cli):
    # Llama-2-7B training on one DGX A100 (head dimension 128): Tri Dao's Triton FlashAttention at its published rate (68 TFLOP/s at
    # head dimension 128, 2k tokens) is slower than attention at the GEMMs' efficiency, so the best layout's step is too;
    # on B200, which has no published rate for it, the flag is an error naming the field.
    def best(system, *extra):
        return run_cli("size", "training", "--model", "Llama-2-7B", "--system", system, "--seq-len", "2048",
                       "--global-batch", "64", "--format", "json", *extra)
    code, out, err = best("DGX-A100")
    assert code == 0, err
    code, slow, err = best("DGX-A100", "--attention-kernel", "flash_attention_triton")
    assert code == 0, err
    assert json.loads(slow)["best"][0]["step_time_s"] > json.loads(out)["best"][0]["step_time_s"]
    code, _, err = best("HGX-B200", "--attention-kernel", "flash_attention_triton")
    assert code == 2 and "/training/attention_kernel" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "8", "--input", "100",
                           "--output", "100", "--attention-kernel", "flash_attention_2")
    assert code == 2 and "--attention-kernel" in err and "size training" in err and len(err.strip().splitlines()) == 1
    code, _, err = best("DGX-A100", "--attention-kernel", "flash_attention_9")  # not a kernel: argparse's choices
    assert code == 2 and "--attention-kernel" in err and len(err.strip().splitlines()) == 1
