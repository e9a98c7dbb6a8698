"""inference.speculative, inference.prefix_cache and static-batch prefill through the Python API: the
result keys, the summary rows, and errors naming the user's field (hand-derived values: tests/cpp)."""
import json
from pathlib import Path

import pytest

import capplan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "assistant-speculative-prefix-cache.json"


def _llama8b(**inference):
    return capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
                             "inference": {"input_tokens": 3000, "output_tokens": 300, **inference}})


def test_result_keys_and_summary_rows():
    r = capplan.estimate(EXAMPLE)
    d = r.to_dict()["inference"]
    # 3,000-token prompts, hit rate 0.75 and a 1,500-token shared prefix: 2,250 cached, 750 computed.
    assert d["prefix_cache"] == {"cached_tokens": 2250, "computed_tokens": 750}
    # EAGLE, 3 drafted tokens at acceptance 0.7: 1 + 0.7 + 0.49 + 0.343 tokens a step.
    assert d["speculative"]["tokens_per_step"] == pytest.approx(2.533)
    assert d["method"] == "simulation" and "prefill_steps" not in d
    text = str(r)
    assert "speculative decoding" in text and "prefix cache" in text and "2250 tokens cached" in text
    assert "runs of tokens with speculation" in text


def test_static_batch_rows_and_prefill_flops_follow_the_cache():
    plain, cached = _llama8b(batch=8), _llama8b(batch=8, prefix_cache={"hit_rate": 0.75})
    assert plain.inference.prefill_steps == 4  # 8,192-token steps on an H100 hold 2 whole 3,000-token prompts: 8 / 2
    assert "the batch's prefill in 4 step(s)" in str(plain)
    assert cached.inference.prefill_steps == 1  # 750 computed tokens a prompt: all 8 in one step
    # Prefill FLOPs: the projections and MLP scale with the computed tokens (a quarter); attention of the
    # 750 new tokens still reaches the 2,250 cached ones, so the whole is a little over a quarter.
    ratio = float(cached.flops.prefill_flops) / float(plain.flops.prefill_flops)
    assert 0.25 < ratio < 0.30


def test_one_token_answers_gain_nothing_from_speculation():
    r = _llama8b(batch=1, output_tokens=1, speculative={"method": "ngram", "tokens": 4, "acceptance": 0.9})
    assert r.inference.speculative.speedup == 1.0
    assert "breakeven_batch" not in r.to_dict()["inference"]["speculative"]
    assert any("one-token answers" in n for n in r.notes)


@pytest.mark.parametrize("features,field", [
    ({"speculative": {"method": "eagle", "tokens": 65, "acceptance": 0.5}}, "/inference/speculative/tokens"),
    ({"speculative": {"method": "draft", "draft_model": "missing/config.json", "tokens": 3, "acceptance": 0.5}},
     "/inference/speculative/draft_model"),
    ({"speculative": {"method": "eagle", "tokens": 3, "acceptance": "high"}}, "/inference/speculative/acceptance"),
    ({"prefix_cache": {"hit_rate": -0.1}}, "/inference/prefix_cache/hit_rate"),
    ({"prefix_cache": {"shared_prefix_tokens": 1.5}}, "/inference/prefix_cache/shared_prefix_tokens"),
    ({"prefix_cache": {"hit_rate": 0.5, "extra": 1}}, "/inference/prefix_cache/extra"),
])
def test_bad_feature_input_names_the_field(features, field):
    with pytest.raises(capplan.ConfigError, match=field):
        _llama8b(batch=1, **features)


def test_a_draft_model_must_split_like_the_target_and_not_beside_attention_dp():
    # Llama-3.2-1B has 32 heads and 8 KV heads: fine at tp 8. A draft model of 12 heads is not.
    draft = json.loads((Path(__file__).resolve().parents[2] / "models" / "llm" / "llama-3.2-1b.json").read_text())["config"]
    draft = {**draft, "num_attention_heads": 12, "num_key_value_heads": 4, "head_dim": 64}
    r = capplan.estimate({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": 8},
                          "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1,
                                        "speculative": {"method": "draft", "draft_model": draft, "tokens": 3,
                                                        "acceptance": 0.6}}})
    assert not r.feasible and any(reason.startswith("draft model: tp = 8 does not divide the 12") for reason in r.reasons)
    with pytest.raises(capplan.ConfigError, match="/inference/speculative/draft_model.*attention data parallelism"):
        capplan.estimate({"model": "Qwen3-30B-A3B", "system": {"preset": "HGX-H200"},
                          "parallelism": {"tp": 8, "ep": 8, "attention_dp": True},
                          "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 8,
                                        "speculative": {"method": "draft", "draft_model": "Qwen3-8B", "tokens": 3,
                                                        "acceptance": 0.6}}})


def test_disaggregated_result_keys_and_summary():
    r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
                          "inference": {"input_tokens": 2000, "output_tokens": 200, "concurrency": 16,
                                        "disaggregation": {"prefill": {"count": 1}, "decode": {"count": 2, "tp": 2}}}})
    d = r.to_dict()["inference"]["disaggregation"]
    assert d["prefill_replicas"] == 1 and d["decode_replicas"] == 1
    assert 0 < d["prefill_utilization"] <= 1 and 0 < d["decode_utilization"] <= 1
    assert r.to_dict()["system"]["count"] == 3
    assert any(n.startswith("disaggregated: prefill pool of 1 H100-SXM") for n in r.notes)
    assert any("seeded simulation of both pools" in n for n in r.notes)


def test_capplan_list_engines_and_results_name_their_profile(run_cli):
    rc, out, err = run_cli("list", "engines")
    assert rc == 0, err
    for name in ("vllm-v1", "sglang", "trtllm-pytorch", "trtllm-tensorrt"):
        assert name in out
    assert "8192/1024 from 70 GiB (not A100), 2048/256" in out
    rc, out, err = run_cli("list", "engines", "--format", "json")
    profiles = json.loads(out)
    assert all(p["source"] for p in profiles)
    assert _llama8b(batch=1).inference.engine == "vllm-v1"
    r = _llama8b(batch=1, engine="sglang")
    assert r.inference.engine == "sglang" and any(n.startswith("engine: profile 'sglang'") for n in r.notes)


def test_review_edges_name_the_users_fields():
    base = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"}}
    # TensorRT-LLM runs prompts whole: a drawn prompt longer than a step names the step budget, not the
    # simulator's internals.
    with pytest.raises(capplan.ConfigError, match="^/inference/prefill_chunk_tokens"):
        capplan.estimate({**base, "inference": {"input_tokens": 4000, "output_tokens": 100, "concurrency": 4,
                                                "engine": "trtllm-pytorch",
                                                "workload": {"input": {"kind": "lognormal", "sigma": 1.0}}}})
    # A petabyte-scale offload tier is bounded, not an overflow.
    r = capplan.estimate({**base, "inference": {"input_tokens": 1000, "output_tokens": 100, "concurrency": 4,
                                                "kv_offload": {"tier": "host", "capacity": "1e30 B"}}})
    assert r.inference.preemptions == 0
    # A sweep costs aggregated engines: a disaggregated scenario is an error in its row, not silently aggregated.
    grid = capplan.sweep_inference({**base, "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1,
                                    "disaggregation": {"prefill": {"count": 1}, "decode": {"count": 1}}}},
                                   {"inference.batch": [1, 2]})
    assert all("/inference/disaggregation" in str(error) for error in list(grid["error"]))


def test_disaggregated_pools_beyond_the_accelerator_limit_name_the_decode_count():
    # Each pool is within 2^20 accelerators; together they are not.
    with pytest.raises(capplan.ConfigError) as e:
        capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
                          "inference": {"input_tokens": 2000, "output_tokens": 200, "concurrency": 16,
                                        "disaggregation": {"prefill": {"count": 2**20}, "decode": {"count": 8}}}})
    assert e.value.field == "/inference/disaggregation/decode/count" and "1048576" in str(e.value)
