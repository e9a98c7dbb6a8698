"""Issue #19's catalog: today's models and hardware are there, each shows its sources, and a part without
measurements says whose efficiencies it borrows."""
import json
from pathlib import Path

import pytest

import capplan

NEW_MODELS = ["gpt-oss-120b", "gpt-oss-20b", "Llama-4-Scout-17B-16E", "Llama-4-Maverick-17B-128E", "Kimi-K2", "DeepSeek-R1",
              "DeepSeek-V3.2", "GLM-4.5", "GLM-4.5-Air", "Gemma-3-27B", "Gemma-3-4B", "Gemma-3-1B", "Qwen3-Next-80B-A3B",
              "Qwen3-Coder-480B-A35B", "Qwen3-235B-A22B-2507", "Qwen3-14B", "Qwen3-4B", "Qwen3-1.7B", "Qwen3-0.6B", "Phi-4",
              "Mistral-Large-2", "Nemotron-3-Nano-30B-A3B"]
NEW_ACCELERATORS = ["B300", "GB300", "MI350X", "MI355X", "TPU7x", "Trainium3", "RTX-PRO-6000-Server", "Ascend-910C", "Rubin",
                    "GH200", "GH200-96GB", "H200-NVL"]
NEW_SYSTEMS = ["GB300-NVL72", "HGX-B300", "MI355X-Platform", "TPU7x-Slice", "Trn2-UltraServer"]


def test_at_least_45_models_and_32_accelerators():
    assert len(capplan.list_models()) >= 45
    assert len(capplan.list_accelerators()) >= 32
    assert set(NEW_MODELS) <= set(capplan.list_models())
    assert set(NEW_ACCELERATORS) <= set(capplan.list_accelerators())
    assert set(NEW_SYSTEMS) <= set(capplan.list_systems())


@pytest.mark.parametrize("name", NEW_MODELS + NEW_ACCELERATORS + NEW_SYSTEMS)
def test_show_prints_the_entry_s_sources(run_cli, name):
    code, out, _ = run_cli("show", name, "--format", "json")
    assert code == 0
    entry = json.loads(out)
    assert entry["name"] == name and len(entry["source"]) > 40  # a citation, not a word


def test_common_aliases_users_type():
    assert capplan.model("Llama-3.3-70B").name == "Llama-3.1-70B"  # same layer shapes (the entry's notes)
    assert capplan.model("openai/gpt-oss-120b").name == "gpt-oss-120b"
    assert capplan.model("Qwen/Qwen3-Coder-480B-A35B-Instruct").name == "Qwen3-Coder-480B-A35B"
    assert capplan.model("mistralai/Mistral-Large-Instruct-2407").name == "Mistral-Large-2"


def _speed_note(system):
    r = capplan.estimate({"model": "Llama-3.1-70B", "system": {"preset": system, "count": 8}, "parallelism": {"tp": 8},
                          "inference": {"input_tokens": 1000, "output_tokens": 100}})
    return next(n for n in r.notes if n.startswith("speed:"))


def test_borrowed_and_missing_efficiencies_are_said_in_the_result():
    assert "B200 catalog, shared by B300" in _speed_note("HGX-B300")
    assert "MI300X catalog, shared by MI355X" in _speed_note("MI355X-Platform")
    assert "mean of measured accelerators" in _speed_note("TPU7x-Slice")  # no measured sibling


def test_new_formats_are_in_the_peaks():
    b300 = capplan.accelerator("B300").to_dict()["peak_dense_flops_per_s"]
    assert b300["fp4"] == pytest.approx(14e15)   # Blackwell Ultra's dense FP4 (datasheet's per-GPU row)
    assert b300["int8"] == pytest.approx(153.5e12)  # the fast INT8 path removed
    mi355x = capplan.accelerator("MI355X").to_dict()["peak_dense_flops_per_s"]
    assert mi355x["fp6"] == pytest.approx(mi355x["fp4"])  # CDNA 4 runs MXFP6 at the MXFP4 rate


def test_gpt_oss_120b_fits_one_80_gb_gpu_as_released_and_not_in_bf16():
    # OpenAI's model card: the MXFP4 experts let gpt-oss-120b run within 80 GB. Experts 114.70B x 0.53125 B + the
    # other 2.13B parameters x 2 B = 65.19 GB.
    def run(**precision):
        sc = {"model": "gpt-oss-120b", "system": {"accelerator": "H100-SXM", "count": 1},
              "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 1}}
        if precision:
            sc["precision"] = precision
        return capplan.estimate(sc)
    released, bf16 = run(), run(expert_weights="bf16")
    assert released.to_dict()["memory"]["weights_bytes"] == pytest.approx(65_190_340_224)
    assert released.inference.max_batch > 0 and bf16.inference.max_batch == 0
    assert any("routed experts in mxfp4" in n and "as released" in n for n in released.notes)
    with pytest.raises(capplan.ConfigError, match="^/precision/expert_weights"):
        run(expert_weights="fp5")


def test_cli_size_takes_a_config_json_of_any_new_architecture(run_cli, tmp_path):
    # `--model path/to/config.json` (issue #19 item 4): the file as released, read as it is.
    configs = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
    code, out, err = run_cli("size", "inference", "--model", str(configs / "qwen3-next-80b-a3b.json"),
                             "--concurrency", "8", "--input", "2000", "--output", "200", "--tpot-p99", "100ms",
                             "--accelerators", "H200", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["options"][0]["accelerator"] == "H200"
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "falcon_h1", "hidden_size": 8}))
    code, _, err = run_cli("size", "inference", "--model", str(bad), "--concurrency", "8", "--input", "2000",
                           "--output", "200")
    assert code == 2 and "unsupported model_type" in err and "nemotron_h" in err and "src/hf_config.cpp" in err
    # A Model built from a file goes into any scenario dict, named after the file.
    m = capplan.Model.from_hf_config(configs / "gpt-oss-20b.json")
    assert m.name == "gpt-oss-20b"
    r = capplan.estimate({"model": m, "system": {"accelerator": "H100-SXM"}, "inference": {"input_tokens": 100, "output_tokens": 10}})
    assert r.to_dict()["model"]["parameters"] == capplan.model("gpt-oss-20b").parameters


def _config(name):
    return json.loads((Path(__file__).resolve().parents[1] / "data" / "hf_configs" / f"{name}.json").read_text())


@pytest.mark.parametrize("edit,field", [
    (lambda c: c["text_config"].update(no_rope_layers=["a"] * 48), "text_config/no_rope_layers"),
    (lambda c: c["text_config"].update(no_rope_layers=[1] * 47), "text_config/no_rope_layers"),
    (lambda c: c["text_config"].update(moe_layers="x"), "text_config/moe_layers"),
])
def test_malformed_llama4_layer_lists_are_config_errors(edit, field):
    cfg = _config("llama-4-scout-17b-16e")
    edit(cfg)
    with pytest.raises(capplan.ConfigError, match=field):
        capplan.Model.from_hf_config(cfg)


def test_release_defaults_and_malformed_quantization():
    cfg = _config("gpt-oss-20b")
    for key in ("sliding_window", "attention_bias"):
        cfg.pop(key)
    m = capplan.Model.from_hf_config(cfg)  # GptOssConfig: 128-token bands, biased projections
    assert m.to_dict()["sliding_window"] == 128 and m.parameters == capplan.model("gpt-oss-20b").parameters
    cfg["quantization_config"] = {"quant_method": 5}
    assert capplan.Model.from_hf_config(cfg).parameters == m.parameters  # not MXFP4: read as it stands, no crash
    nxt = _config("qwen3-next-80b-a3b")
    nxt["sliding_window"] = 4096  # with use_sliding_window false it is not used
    assert capplan.Model.from_hf_config(nxt).to_dict()["sliding_layers"] == 0
    # Python's weight size follows the release's expert format too.
    assert capplan.model("gpt-oss-120b").weights_bytes().in_("GB") == pytest.approx(65.190340224)
    assert capplan.model("gpt-oss-120b").weights_bytes(experts="bf16").in_("GB") == pytest.approx(233.658313344)


@pytest.mark.parametrize("name,edit,field", [
    ("nemotron-3-nano-30b-a3b", lambda c: c.update(hybrid_override_pattern="MEM"), "hybrid_override_pattern"),
    ("nemotron-3-nano-30b-a3b", lambda c: c.update(hybrid_override_pattern="X" * 52), "hybrid_override_pattern"),
    ("nemotron-3-nano-30b-a3b", lambda c: c.update(mamba_ssm_cache_dtype="float5"), "mamba_ssm_cache_dtype"),
    ("gpt-oss-20b", lambda c: c.update(layer_types=["banded"] * 24), "layer_types"),
    ("gpt-oss-20b", lambda c: c.update(layer_types=["full_attention"] * 23), "layer_types"),
])
def test_malformed_hybrid_and_layer_type_fields_are_config_errors(name, edit, field):
    cfg = _config(name)
    edit(cfg)
    with pytest.raises(capplan.ConfigError, match=field):
        capplan.Model.from_hf_config(cfg)


def test_sizing_serves_gpt_oss_as_released():
    # size_inference builds its own scenarios: they too keep the MXFP4 experts, so one 80 GB H100 holds the model.
    r = capplan.size_inference("gpt-oss-120b", 4, 1000, 100, ttft_p99="10s", tpot_p99="1s", accelerators=["H100-SXM"])
    assert r["options"][0]["count"] == 1


def test_bad_engine_and_serving_switch_values(run_cli):
    code, _, err = run_cli("collective", "all_reduce", "--system", "HGX-H200", "--gpus", "8", "--size", "64KiB",
                           "--engine", "vllm-v9")
    assert code == 2 and err.startswith("capplan: error: /engine") and len(err.strip().splitlines()) == 1
    with pytest.raises(capplan.ConfigError, match="^/inference/chunked_prefill"):
        capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM"},
                          "inference": {"input_tokens": 10, "output_tokens": 10, "chunked_prefill": "yes"}})
