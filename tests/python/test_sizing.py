"""Sizing to an SLO: the chosen layout meets the targets, and the ranking follows the prices."""
import json

import pytest

import capplan


def test_size_inference_meets_targets_and_ranks_by_cost():
    r = capplan.size_inference("Llama-3.1-8B", concurrency=32, input_tokens=1000, output_tokens=200,
                               ttft_p99="1 s", tpot_p99="40 ms", accelerators=["H100", "L40S", "A100-80GB"],
                               prices={"H100": 2.5, "L40S": 1.0, "A100-80GB": 1.6})
    assert r["options"], r
    costs = [o["cost_per_hour"] for o in r["options"]]
    assert costs == sorted(costs)
    for o in r["options"]:
        assert o["ttft_p99_s"] <= 1.0 and o["tpot_p99_s"] <= 0.040
        assert o["count"] == o["tp"] * o["replicas"]
        assert o["cost_per_hour"] == pytest.approx({"H100-SXM": 2.5, "L40S": 1.0, "A100-80GB-SXM": 1.6}[o["accelerator"]]
                                                   * o["count"])


def test_impossible_targets_are_rejected_with_reasons():
    r = capplan.size_inference("Llama-3.1-70B", concurrency=8, input_tokens=500, output_tokens=100,
                               ttft_p99="1 ms", tpot_p99="1 ms", accelerators=["H100"])
    assert r["options"] == [] and r["rejected"][0]["accelerator"] == "H100-SXM"
    assert "miss the targets" in r["rejected"][0]["reason"]


def test_cli_size(run_cli):
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "16", "--input", "500",
                             "--output", "100", "--ttft-p99", "1s", "--tpot-p99", "50ms", "--accelerators", "H100",
                             "--format", "json")
    assert code == 0, err
    assert json.loads(out)["options"][0]["accelerator"] == "H100-SXM"
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "16", "--input", "500",
                             "--output", "100", "--accelerators", "H1000")
    assert code == 2 and "H100" in err and len(err.strip().splitlines()) == 1


def test_weight_formats_to_try_include_weight_only_integers():
    # Llama-3.1-70B: 70.6 B parameters. bf16 = 141 GB cannot sit on one 80 GB A100, so its smallest
    # layout needs tp >= 2; int4 (4 bits + a 16-bit scale and 4-bit zero per 128, ~37 GB with 16-bit
    # embeddings) fits one device per replica, so the int4 plan uses tp = 1 and no more devices.
    # (The TTFT target leaves room for int4's slow prefill: 1.4 s for 1,000 tokens on one A100, 2.7 s at p99
    # for a user whose request lands during another's.)
    base = dict(accelerators=["A100-80GB-SXM"], ttft_p99="3 s", tpot_p99="50 ms")
    bf16 = capplan.size_inference("Llama-3.1-70B", 8, 1000, 200, **base)["options"][0]
    int4 = capplan.size_inference("Llama-3.1-70B", 8, 1000, 200, weights=["int4"], **base)["options"][0]
    assert bf16["weights"] == "bf16" and bf16["tp"] >= 2
    assert int4["weights"] == "int4" and int4["kv_cache"] == "bf16" and int4["tp"] == 1
    assert int4["count"] <= bf16["count"]
    # fp8 needs an fp8 peak (A100 has none): rejected with the reason, not silently replaced; so do the FP4 formats.
    for w, reason in (("fp8", "fp8 needs an fp8 peak"), ("nvfp4", "nvfp4 needs an fp4 peak"),
                      ("mxfp4", "mxfp4 needs an fp4 peak")):
        r = capplan.size_inference("Llama-3.1-70B", 8, 1000, 200, weights=[w], **base)
        assert r["options"] == [] and reason in r["rejected"][0]["reason"], r["rejected"]
    with pytest.raises(capplan.ConfigError, match="bf16, fp16, fp8, int8, int4, nvfp4, mxfp4"):
        capplan.size_inference("Llama-3.1-70B", 8, 1000, 200, weights=["int3"], **base)


def test_fp4_weights_are_tried_where_the_catalog_says_how_fast_they_run():
    # B200 has FP4 matrix units and a catalog FP4 efficiency (0.34 of 9,000 TFLOP/s): asked for nvfp4 alone it is sized
    # in nvfp4 with an fp8 KV cache (as ModelOpt's FP4 checkpoints ship), and at tp 1: Llama-3.1-70B's nvfp4 weights
    # (0.5625 B a block weight with their 16-element blocks' fp8 scales) fit one B200 with room for 16 users' caches.
    # H200 has no FP4 units; MI350X has an fp4 peak but no FP4 efficiency in the catalog; MI355X has one (its own
    # matrix fractions) but NVFP4 is NVIDIA's format: each is rejected with its reason rather than sized at a guess.
    r = capplan.size_inference("Llama-3.1-70B", 16, 1000, 200, accelerators=["B200", "H200", "MI350X", "MI355X"],
                               weights=["nvfp4"], ttft_p99="3 s", tpot_p99="60 ms")
    assert [(o["accelerator"], o["weights"], o["kv_cache"], o["tp"]) for o in r["options"]] == [("B200", "nvfp4", "fp8", 1)]
    reasons = {x["accelerator"]: x["reason"] for x in r["rejected"]}
    assert "nvfp4 needs an fp4 peak" in reasons["H200"]
    assert "nvfp4 needs a catalog fp4 matrix efficiency" in reasons["MI350X"]
    assert "nvfp4 runs on NVIDIA's FP4 tensor cores" in reasons["MI355X"]
    # MXFP4 (the OCP format) runs on both B200 and MI355X.
    mx = capplan.size_inference("Llama-3.1-70B", 16, 1000, 200, accelerators=["B200", "MI355X"], weights=["mxfp4"],
                                ttft_p99="3 s", tpot_p99="60 ms")
    assert sorted((o["accelerator"], o["weights"], o["kv_cache"]) for o in mx["options"]) == [
        ("B200", "mxfp4", "fp8"), ("MI355X", "mxfp4", "fp8")]


def test_cli_size_weights(run_cli):
    code, out, _ = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "4", "--input", "500",
                           "--output", "100", "--accelerators", "L40S", "--weights", "int8")
    assert code == 0 and "int8" in out


def test_sizing_uses_a_calibration_for_its_accelerator_only():
    # A hand-made H100 table: matrix units at 0.3 of peak at every size (the catalog's large-kernel bf16
    # value is 0.61), memory at 0.5 (catalog 0.866): every H100 step is slower, A100 is untouched.
    cal = {"kind": "efficiency_calibration", "name": "half-speed H100", "accelerator": "H100-SXM", "source": "test",
           "peaks": {"flops": {"bf16": "989.5 TFLOP/s"}, "memory_bandwidth": "3.35 TB/s"},
           "curves": {"gemm": {"bf16": [{"flops": 1e9, "efficiency": 0.3}]}, "memory": [{"bytes": 1e6, "efficiency": 0.5}]}}
    args = dict(model="Llama-3.1-8B", concurrency=8, input_tokens=2000, output_tokens=200, accelerators=["H100", "A100"],
                weights=["bf16"], ttft_p99="10 s", tpot_p99="1 s")
    plain = {o["accelerator"]: o for o in capplan.size_inference(**args)["options"]}
    tuned = {o["accelerator"]: o for o in capplan.size_inference(**args, calibrations=[cal])["options"]}
    assert tuned["H100-SXM"]["efficiency_table"] == "half-speed H100" and plain["H100-SXM"]["efficiency_table"] == "catalog"
    assert tuned["H100-SXM"]["tpot_p99_s"] > 1.3 * plain["H100-SXM"]["tpot_p99_s"]
    assert tuned["A100-80GB-SXM"] == plain["A100-80GB-SXM"]
    with pytest.raises(capplan.ConfigError, match="/calibrations/0.*not among the accelerators"):
        capplan.size_inference(**{**args, "accelerators": ["A100"]}, calibrations=[cal])


def test_a_model_larger_than_a_node_gets_pipeline_stages_across_nodes():
    # Llama-3.1-405B in bf16: 405.9e9 parameters x 2 B = 812 GB of weights, more than one DGX-H100
    # node's 8 x 80 GB = 640 GB (hand calculation), so the smallest H100 layout is tp 8 x pp 2 on
    # 16 GPUs; H200's node (8 x 141 GB = 1,128 GB) holds it with tp 8 alone.
    r = capplan.size_inference("Llama-3.1-405B", 16, 2000, 300, ttft_p99="5 s", tpot_p99="100 ms",
                               accelerators=["H100", "H200"], weights=["bf16"])
    best = {o["accelerator"]: o for o in r["options"]}
    assert (best["H100-SXM"]["tp"], best["H100-SXM"]["pp"], best["H100-SXM"]["count"]) == (8, 2, 16)
    assert (best["H200"]["tp"], best["H200"]["pp"], best["H200"]["count"]) == (8, 1, 8)


def test_moe_models_are_also_sized_with_attention_data_parallelism():
    # Qwen3-235B-A22B (4 KV heads) for 1024 users of 4000 + 1000 tokens on H100s: under tp 8 each rank
    # keeps every request's KV at one head, under attention dp its own eighth at all four, twice the
    # group's cache: the cheapest layout that holds everyone uses it.
    r = capplan.size_inference("Qwen3-235B-A22B", 1024, 4000, 1000, ttft_p99="30 s", tpot_p99="100 ms",
                               accelerators=["H100-SXM"])
    o = r["options"][0]
    assert o["attention_dp"] is True and o["tp"] == 8 and o["ep"] == 8 and o["pp"] == 1
    again = capplan.estimate({"model": "Qwen3-235B-A22B", "system": {"preset": "DGX-H100", "count": o["count"]},
                              "parallelism": {"tp": 8, "ep": 8, "attention_dp": True},
                              "precision": {"weights": o["weights"], "kv_cache": o["kv_cache"]},
                              "inference": {"input_tokens": 4000, "output_tokens": 1000, "concurrency": 1024}})
    assert again.memory.fits is True
    # A dense model never gets it.
    dense = capplan.size_inference("Llama-3.1-8B", 64, 1000, 200, accelerators=["H100-SXM"])
    assert all(not x["attention_dp"] and x["ep"] == 1 for x in dense["options"])


def test_the_serving_engine_shapes_the_answer():
    # Eager prefill (PyTorch engines) adds host dispatch to every step that runs a prompt: the same
    # layout's p99 TTFT grows, its TPOT does not; a bad value names the field and the allowed ones.
    def size(**engine):
        r = capplan.size_inference("Qwen3-30B-A3B", 8, 2000, 200, ttft_p99="5 s", tpot_p99="200 ms",
                                   accelerators=["H100-SXM"], weights=["bf16"], **engine)
        return r["options"][0]
    graph, eager = size(), size(prefill_dispatch="eager")
    assert (graph["tp"], graph["replicas"]) == (eager["tp"], eager["replicas"])
    assert eager["ttft_p99_s"] > graph["ttft_p99_s"] and eager["tpot_p99_s"] == pytest.approx(graph["tpot_p99_s"], rel=0.05)
    with pytest.raises(capplan.ConfigError, match="/prefill_dispatch.*graph, eager"):
        size(prefill_dispatch="lazy")
    with pytest.raises(capplan.ConfigError, match="/kv_admission.*on_demand, reserve"):
        size(kv_admission="greedy")


def test_moe_experts_spread_over_the_group_rather_than_sliced_at_equal_counts():
    # DeepSeek-V3 on one 8-GPU H200 node: tensor-parallel experts would be 2048/8 = 256 wide, which
    # TensorRT-LLM 0.21 runs 54% slower per prompt token than whole experts over ep 8 (issue #5929);
    # the model costs both alike, so sizing keeps the expert-parallel layout.
    o = capplan.size_inference("DeepSeek-V3", 32, 2000, 500, accelerators=["H200"])["options"][0]
    assert (o["count"], o["tp"], o["ep"], o["attention_dp"]) == (8, 8, 8, False)


def test_speculative_decoding_is_tried_and_wins_where_it_saves_devices():
    # Llama-3.1-8B in bf16 reads 16 GB of weights a decode step: on one H100 (3.35 TB/s x 0.866 of it)
    # that is 5.5 ms, over a 5 ms p99 TPOT target, so the plain engine needs tp 2. An EAGLE head drafting
    # 3 tokens at acceptance 0.8 gains 1 + 0.8 + 0.64 + 0.512 = 2.95 tokens a step for little more than
    # one step's reads: about 2 ms a token on one H100.
    kwargs = dict(concurrency=2, input_tokens=200, output_tokens=200, ttft_p99="1 s", tpot_p99="5 ms",
                  accelerators=["H100"], weights=["bf16"])
    plain = capplan.size_inference("Llama-3.1-8B", **kwargs)["options"][0]
    assert plain["count"] == 2 and not plain["speculative"]
    spec = capplan.size_inference("Llama-3.1-8B", speculative={"method": "eagle", "tokens": 3, "acceptance": 0.8},
                                  **kwargs)["options"][0]
    assert spec["count"] == 1 and spec["speculative"] and spec["tpot_p99_s"] < 0.0035  # p99: runs of few accepts
    # Acceptance 0: every draft wasted; the plain engine keeps the answer.
    none = capplan.size_inference("Llama-3.1-8B", speculative={"method": "eagle", "tokens": 3, "acceptance": 0.0},
                                  **kwargs)["options"][0]
    assert none["count"] == 2 and not none["speculative"]


def test_prefix_cache_in_sizing_and_bad_feature_input_names_the_field(run_cli):
    # 16 users re-sending 8,000-token contexts: with 90% of each prompt cached, prefill computes 800 tokens,
    # so a 150 ms p99 TTFT needs half the devices or fewer.
    kwargs = dict(concurrency=16, input_tokens=8000, output_tokens=100, ttft_p99="150 ms", tpot_p99="100 ms",
                  accelerators=["H100"], weights=["bf16"])
    cold = capplan.size_inference("Llama-3.1-8B", **kwargs)["options"][0]
    warm = capplan.size_inference("Llama-3.1-8B", prefix_cache={"hit_rate": 0.9}, **kwargs)["options"][0]
    assert warm["count"] <= cold["count"] / 2 and warm["ttft_p99_s"] <= 0.150
    with pytest.raises(capplan.ConfigError, match="/speculative/acceptance"):
        capplan.size_inference("Llama-3.1-8B", speculative={"method": "eagle", "tokens": 3, "acceptance": 2}, **kwargs)
    with pytest.raises(capplan.ConfigError, match="/prefix_cache/shared_prefix_tokens"):
        capplan.size_inference("Llama-3.1-8B", prefix_cache={"shared_prefix_tokens": 9000}, **kwargs)
    with pytest.raises(capplan.ConfigError, match="/speculative: expected an object"):
        capplan.size_inference("Llama-3.1-8B", speculative="eagle", **kwargs)
    rc, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "2", "--input", "200",
                           "--output", "200", "--tpot-p99", "5ms", "--accelerators", "H100", "--weights", "bf16",
                           "--speculative", "eagle,3,0.8")
    assert rc == 0 and "with speculative decoding" in out, err
    rc, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "2", "--input", "200",
                           "--output", "200", "--speculative", "eagle,three,0.8")
    assert rc == 2 and "--speculative expects METHOD,TOKENS,ACCEPTANCE" in err and "Traceback" not in err


def test_disaggregated_pools_are_tried_and_listed_when_they_need_fewer_devices(run_cli):
    # 64 users with 4,000-token prompts and a 30 ms p99 TPOT: in an aggregated engine every decode step
    # shares its time with prompt chunks; split pools keep prompts off the decode replicas.
    kwargs = dict(concurrency=64, input_tokens=4000, output_tokens=400, ttft_p99="2 s", tpot_p99="30 ms",
                  accelerators=["H200"], prices={"H200": 3.5}, weights=["fp8"])
    plain = capplan.size_inference("Llama-3.1-70B", **kwargs)["options"]
    both = capplan.size_inference("Llama-3.1-70B", disaggregated=True, **kwargs)["options"]
    assert [o for o in both if "disaggregation" not in o] == plain
    split = [o for o in both if "disaggregation" in o]
    assert len(split) == 1
    s = split[0]
    d = s["disaggregation"]
    assert s["count"] == (d["prefill_replicas"] + d["decode_replicas"]) * d["tp"] < plain[0]["count"]
    assert s["ttft_p99_s"] <= 2.0 and s["tpot_p99_s"] <= 0.030
    assert [o["cost_per_hour"] for o in both] == sorted(o["cost_per_hour"] for o in both)  # cheapest first
    rc, out, err = run_cli("size", "inference", "--model", "Llama-3.1-70B", "--concurrency", "64", "--input", "4000",
                           "--output", "400", "--tpot-p99", "30ms", "--accelerators", "H200", "--weights", "fp8",
                           "--disaggregated")
    assert rc == 0 and "disaggregated," in out, err


def test_the_engine_profile_sets_the_sized_engines_defaults():
    # TensorRT-LLM's PyTorch backend: prompts eagerly dispatched, whole (no chunking), reserved admission;
    # against vLLM V1's defaults the same targets need at least as many devices, the prompt's host dispatch
    # showing in its TTFT.
    kwargs = dict(concurrency=16, input_tokens=2000, output_tokens=200, ttft_p99="1 s", tpot_p99="50 ms",
                  accelerators=["H100"], weights=["bf16"])
    vllm = capplan.size_inference("Llama-3.1-8B", **kwargs)["options"][0]
    trt = capplan.size_inference("Llama-3.1-8B", engine="trtllm-pytorch", **kwargs)["options"][0]
    assert trt["count"] >= vllm["count"]
    assert trt["ttft_p99_s"] != vllm["ttft_p99_s"]
    with pytest.raises(capplan.ConfigError, match="/engine.*vllm-v1, sglang"):
        capplan.size_inference("Llama-3.1-8B", engine="tgi", **kwargs)


def test_prefill_on_one_accelerator_and_decode_on_another_when_it_is_cheapest(run_cli):
    # 96 users, 6,000-token prompts, Llama-3.1-70B in fp8: H100s at $1.50 an hour for the compute-bound
    # prompts, H200s at $2.00 (more memory and bandwidth) for the decoding.
    r = capplan.size_inference("Llama-3.1-70B", concurrency=96, input_tokens=6000, output_tokens=300, ttft_p99="2 s",
                               tpot_p99="40 ms", accelerators=["H100", "H200"], prices={"H100": 1.5, "H200": 2.0},
                               disaggregated=True, weights=["fp8"])
    best = r["options"][0]
    d = best["disaggregation"]
    assert d["prefill_accelerator"] == "H100-SXM" and best["accelerator"] == "H200"
    assert best["count"] == d["prefill_replicas"] * d["prefill_tp"] + d["decode_replicas"] * d["tp"]
    assert best["cost_per_hour"] == pytest.approx(1.5 * d["prefill_replicas"] * d["prefill_tp"] + 2.0 * d["decode_replicas"] * d["tp"])
    assert best["ttft_p99_s"] <= 2.0 and best["tpot_p99_s"] <= 0.040
    # Cheaper than anything either accelerator does alone, which is why it is listed.
    assert all(best["cost_per_hour"] < o["cost_per_hour"] for o in r["options"][1:])


def test_cli_shares_are_checked_where_they_are_typed(run_cli):
    for flags, needle in ((("--prefix-hit-rate", "nan"), "--prefix-hit-rate"), (("--prefix-hit-rate", "2"), "--prefix-hit-rate"),
                          (("--speculative", "eagle,3,nan"), "--speculative expects")):
        rc, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "2", "--input", "200",
                               "--output", "20", "--accelerators", "H100", *flags)
        assert rc == 2 and needle in err and "JSON" not in err and len(err.strip().splitlines()) == 1, err


def test_every_candidate_runs_one_stated_engine_configuration():
    # vLLM's defaults: 8,192 batched tokens and 1,024 sequences on GPUs of >= 70 GiB that are not A100, else 2,048 and
    # 256 (engine_profile.hpp). Compared together, both run the large-GPU figures, and the answer says so.
    both = capplan.size_inference("Llama-3.1-8B", 32, 2000, 200, accelerators=["H100", "A100-80GB"])
    assert "8192 batched tokens and 1024 sequences a step on every accelerator" in both["engine_config"]
    assert "differ by GPU" in both["engine_config"]
    alone = capplan.size_inference("Llama-3.1-8B", 32, 2000, 200, accelerators=["A100-80GB"])
    assert "2048 batched tokens and 256 sequences" in alone["engine_config"]
    # The A100 sized alone at the large-GPU figures is the A100 of the comparison, number for number.
    same = capplan.size_inference("Llama-3.1-8B", 32, 2000, 200, accelerators=["A100-80GB"],
                                  prefill_chunk_tokens=8192, max_num_seqs=1024)
    a100 = next(o for o in both["options"] if o["accelerator"].startswith("A100"))
    assert same["options"][0] == a100
    assert "8192 batched tokens" in same["engine_config"] and "differ" not in same["engine_config"]
    with pytest.raises(capplan.ConfigError, match="/prefill_chunk_tokens"):
        capplan.size_inference("Llama-3.1-8B", 32, 2000, 200, accelerators=["H100"], prefill_chunk_tokens=0)


def test_why_not_fewer_names_the_closest_miss_and_targets_at_that_miss_accept_it():
    r = capplan.size_inference("Llama-3.1-70B", 50, 2000, 500, accelerators=["H200", "H100"], ttft_p99="2 s",
                               tpot_p99="50 ms")
    lines = dict(line.split(": ", 1) for line in r.why_not_fewer())
    h100, h200 = lines["why not fewer H100-SXM"], lines["why not fewer H200"]
    assert h100 == "fewer than 2 do not hold the weights and the users' caches in any layout tried"
    # "1 x H200 (tp 1, fp8 weights, bf16 KV cache): p99 TTFT 2.499 s, 25% over 2 s; p99 TPOT 56.88 ms, 14% over 50 ms"
    count = int(h200.split(" x ")[0])
    assert count < next(o["count"] for o in r["options"] if o["accelerator"] == "H200")
    missed = {}
    for part in h200.split(": ", 1)[1].split("; "):
        name, value = part.split(",")[0].split(" ", 2)[1:]
        missed[name] = capplan.Quantity(value).si
    # Targets just above the miss it reports: that layout now meets them and is the answer.
    looser = capplan.size_inference("Llama-3.1-70B", 50, 2000, 500, accelerators=["H200"],
                                    ttft_p99=f"{1.01 * missed.get('TTFT', 2.0)} s",
                                    tpot_p99=f"{1.01 * missed.get('TPOT', 0.05)} s")
    assert looser["options"][0]["count"] == count
    assert "why not fewer H200" in repr(r) and "quality: the recommendation" not in repr(r)  # unpriced: no advice


def test_cli_size_states_the_engine_and_rejects_its_flags_for_training(run_cli):
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "8", "--input", "1000",
                             "--output", "100", "--accelerators", "H100", "--prefill-chunk", "4096", "--max-num-seqs", "64")
    assert code == 0, err
    assert "engine: vLLM V1 (v0.11) with 4096 batched tokens and 64 sequences a step on every accelerator" in out
    code, _, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--prefill-chunk", "4096")
    assert code == 2 and "--prefill-chunk" in err


def test_size_training_states_its_defaults_prices_layouts_and_says_how_many_devices_fit(run_cli):
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--count", "16", "--price", "H100=2.5",
                             "--top", "2")
    assert code == 0, err
    assert out.startswith("Llama-3.1-8B: training on 16 x H100-SXM (DGX-H100), sequences of 4,096 tokens, global "
                          "batch 1,024 sequences (4.19 M tokens a step); defaults taken: --system DGX-H100, "
                          "--seq-len 4096, --global-batch 1024")
    assert "columns: tp tensor-parallel ranks" in out and "$ at $2.50 per accelerator-hour" in out
    lines = out.splitlines()

    def cell(name):  # the first layout's cell under a column (the table is aligned to its header)
        start = lines[1].index(name)
        return lines[3][start:].split("  ")[0].strip()
    tokens_per_s = float(cell("tokens/s"))
    # 16 accelerators x $2.50 = $40.00 an hour; a billion tokens take 1e9 / tokens_per_s seconds.
    assert cell("$/h") == "$40.00"
    per_billion = float(cell("$/1B tokens").strip("$").replace(",", ""))
    assert per_billion == pytest.approx(40 * 1e9 / (tokens_per_s * 3600), rel=2e-3)  # tokens/s printed rounded
    # Llama-3.1-405B's training states alone (16 B per parameter: 6.5 TB) need more than 8 x 80 GB.
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-405B", "--count", "8", "--seq-len", "2048",
                             "--global-batch", "256")
    assert code == 0, err
    assert "no layout fits memory" in out and "defaults taken: --system DGX-H100\n" in out
    fits_from = int(out.split("a layout fits from ")[1].split(" x ")[0])
    assert fits_from >= 6.5e12 / 85.02e9  # at least the devices the states need, driver-visible memory
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-405B", "--count", str(fits_from), "--seq-len",
                             "2048", "--global-batch", "256", "--top", "1")
    assert code == 0 and "fit memory" in out and " 0 fit memory" not in out, err
