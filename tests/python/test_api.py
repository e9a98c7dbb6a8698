"""The Python API: estimate(), catalog lookups, Model.from_hf_config, results and errors."""
import json

import pytest

import capplan
from capplan import ConfigError, JsonError, UnitError, UnknownNameError
from capplan import calibration

LLAMA_1B_CONFIG = {  # Llama-3.2-1B config.json fields (meta-llama/Llama-3.2-1B), plus keys capplan ignores
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": True,
    "bos_token_id": 128000, "rope_scaling": {"factor": 32.0, "rope_type": "llama3"},
}


def test_estimate_default_scenario():
    r = capplan.estimate(capplan.default_scenario())
    assert r.model.name == "Llama-3.1-70B"
    assert r.model.parameters == 70_553_706_496  # HF safetensors total of meta-llama/Llama-3.1-70B
    # (70,553,706,496 - 1,318,912 replicated norm weights) / tp 8 + 1,318,912, x 2 B (bf16) = 17,640,734,720 B
    assert r.memory.weights_bytes.si == 17_640_734_720
    assert str(r.memory.capacity_bytes) == "141 GB"
    d = r.to_dict()
    assert d["memory"]["weights_bytes"] == 17_640_734_720
    assert d["inference"]["batch"] == 50 and d["inference"]["ttft_s"] > 0
    assert "training" not in d
    assert "Llama-3.1-70B" in repr(r)
    assert "<table>" in r._repr_html_()


def test_estimate_accepts_inline_hf_config_dict_and_config_path(tmp_path):
    r = capplan.estimate({"model": LLAMA_1B_CONFIG, "system": {"accelerator": "L4"}})
    # Llama 3.2 model card: 1.23B parameters
    assert r.model.parameters == pytest.approx(1.23e9, rel=0.02)
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text(json.dumps(LLAMA_1B_CONFIG))
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"model": "my-model/config.json", "system": {"accelerator": "L4"}}))
    r2 = capplan.estimate(scenario)  # the path is relative to the scenario file
    assert r2.model.name == "my-model"
    assert r2.model.parameters == r.model.parameters
    r3 = capplan.estimate(str(scenario))
    assert r3.to_dict() == r2.to_dict()


def test_model_from_hf_config(tmp_path):
    m = capplan.Model.from_hf_config(LLAMA_1B_CONFIG, name="l1b")
    assert m.name == "l1b" and m.attention == "gqa" and m.num_hidden_layers == 16
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_1B_CONFIG))
    assert capplan.Model.from_hf_config(tmp_path).parameters == m.parameters
    assert capplan.Model.from_hf_config(tmp_path / "config.json").parameters == m.parameters
    with pytest.raises(ConfigError) as e:
        capplan.Model.from_hf_config({"model_type": "bert", "hidden_size": 768})
    assert "/model/model_type" in str(e.value) and "llama" in str(e.value)


def test_catalog_lookups():
    assert "Llama-3.1-8B" in capplan.list_models()
    assert "H100-SXM" in capplan.list_accelerators()
    assert "GB200-NVL72" in capplan.list_systems()
    assert "NVMe-Gen5" in capplan.list_storage()
    assert capplan.model("deepseek-r1").name == "DeepSeek-R1"  # its own entry (issue #19)
    assert capplan.model("deepseek-ai/DeepSeek-V3-Base").name == "DeepSeek-V3"
    h200 = capplan.accelerator("H200")
    assert str(h200.memory) == "141 GB" and str(h200.peak("bf16")) == "989.5 TFLOP/s"
    assert capplan.accelerator("A100-80GB").peak("fp8") == "unsupported"
    s = capplan.system("DGX-H100")
    assert s.count == 8 and s.accelerator.name == "H100-SXM"
    assert "DGX-H100" in repr(s) and s.accelerator.memory.si == 80e9  # H100 SXM: 80 GB
    assert capplan.entry("IB-NDR")["bandwidth_per_direction"] == "400 Gb/s"


def test_errors_typed_with_builtin_bases_and_field_paths():
    with pytest.raises(UnknownNameError) as e:
        capplan.estimate({"model": "Lama-3.1-8B", "system": {"accelerator": "H100"}})
    err = e.value
    assert isinstance(err, KeyError) and isinstance(err, ValueError) and isinstance(err, capplan.Error)
    assert err.field == "/model" and "Llama-3.1-8B" in err.suggestions
    assert str(err).startswith("/model: unknown model 'Lama-3.1-8B'; did you mean Llama-3.1-8B")

    cases = [
        ({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"}, "colour": 1}, ConfigError, "/colour"),
        ({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": -2}}, ConfigError, "/system/count"),
        ({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic",
          "memory": {"capacity": "80 GX", "bandwidth": None}, "peak_dense_flops": {"bf16": None}}}},
         UnitError, "/system/accelerator/memory/capacity"),
        ({"system": {"accelerator": "H100"}}, ConfigError, "/model"),
        ({"model": "Llama-3.1-8B", "system": {"accelerator": "H1000"}}, UnknownNameError, "/system/accelerator"),
        ({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
          "inference": {"input_tokens": 100, "output_tokens": 10, "prefill_dispatch": "lazy"}}, ConfigError,
         "/inference/prefill_dispatch"),
        ({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
          "inference": {"input_tokens": 100, "output_tokens": 10, "engine_overhead": {"prefill_kernel": "-1 us"}}},
         ConfigError, "/inference/engine_overhead/prefill_kernel"),
        ({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
          "inference": {"input_tokens": 100, "output_tokens": 10, "engine_overhead": {"step": "2 GB"}}},
         UnitError, "/inference/engine_overhead/step"),
    ]
    for scenario, cls, field in cases:
        with pytest.raises(cls) as e:
            capplan.estimate(scenario)
        assert e.value.field == field, (scenario, str(e.value))
        assert str(e.value).startswith(field + ":")
    with pytest.raises(JsonError) as e:
        capplan.estimate('{"model": "Llama-3.1-8B", ')
    assert "malformed JSON" in str(e.value) and isinstance(e.value, ValueError)


def test_infeasible_is_a_result_not_an_exception():
    r = capplan.estimate({"model": "Llama-3.1-405B", "system": {"accelerator": "L4"}})
    assert r.feasible is False
    assert "weights alone need" in r.reasons[0]


def test_result_sections_give_quantities_and_plain_dicts():
    r = capplan.estimate({"model": "Qwen3-30B-A3B", "system": {"accelerator": "H100"}})
    assert isinstance(r.memory.weights_bytes, capplan.Quantity)
    assert r.model.active_parameters < r.model.parameters
    assert "weights_bytes" in r.memory
    with pytest.raises(AttributeError, match="not in this result"):
        r.memory.kv_cache_bytes
    flat = r.to_flat_dict()
    assert flat["model.parameters"] == r.model.parameters


def test_devices_reports_a_reason_without_gpu():
    d = capplan.devices()
    assert set(d) == {"built_with_cuda", "devices", "reason"}
    if not d["devices"]:
        assert d["reason"]


def test_stub_file_lists_every_core_function():
    from pathlib import Path
    stub = (Path(capplan.__file__).parent / "_core.pyi").read_text()
    public = [n for n in dir(capplan._core) if not n.startswith("_")]
    declared = lambda n: any(f"{k}{n}{end}" in stub for k, end in (("def ", "("), ("class ", "("), ("class ", ":"), ("\n", ": ")))  # noqa: E731
    missing = [n for n in public if not declared(n)]
    assert not missing, f"_core.pyi lacks {missing}"


def test_memory_bad_input_and_warnings():
    base = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100"}}
    # a context beyond the model's maximum is a warning in the result, not an error
    r = capplan.estimate({**base, "inference": {"input_tokens": 200_000, "output_tokens": 1000, "batch": 1}})
    assert "exceeds Llama-3.1-8B's max_position_embeddings of 131072" in r.warnings[0]
    # tp that does not divide the heads: infeasible, with the reason
    r = capplan.estimate({**base, "system": {"accelerator": "H100", "count": 3}, "parallelism": {"tp": 3}})
    assert r.feasible is False and "does not divide the 32 attention heads" in r.reasons[0]
    for bad, field in (({"input_tokens": 0, "output_tokens": 1, "batch": 1}, "/inference/input_tokens"),
                       ({"input_tokens": 5, "output_tokens": 1, "batch": -4}, "/inference/batch"),
                       ({"input_tokens": 5, "output_tokens": 1, "memory_utilization": 1.5}, "/inference/memory_utilization"),
                       ({"input_tokens": 5, "output_tokens": 1, "runtime_reserve": "-1 GiB"}, "/inference/runtime_reserve")):
        with pytest.raises(ConfigError) as e:
            capplan.estimate({**base, "inference": bad})
        assert e.value.field == field, str(e.value)
    with pytest.raises(ConfigError) as e:
        capplan.estimate({**base, "precision": {"kv_cache": "fp7"}})
    assert e.value.field == "/precision/kv_cache" and "fp8" in str(e.value)


def test_inference_memory_result_and_reasons():
    r = capplan.estimate({"model": "Llama-3.1-70B", "system": {"accelerator": "H100", "count": 4},
                          "parallelism": {"tp": 4}, "inference": {"input_tokens": 30000, "output_tokens": 2000,
                                                                  "concurrency": 40}})
    assert r.memory.fits is False and r.feasible is False
    reason = r.reasons[-1]
    assert "the largest part is the KV cache" in reason
    assert f"at most {r.inference.max_batch} requests of this length" in reason
    assert "an fp8 KV cache" not in reason or r.inference.max_batch * 2 >= 40
    ok = capplan.estimate({"model": "Llama-3.1-70B", "system": {"accelerator": "H100", "count": 4},
                           "parallelism": {"tp": 4}, "inference": {"input_tokens": 30000, "output_tokens": 2000,
                                                                   "batch": r.inference.max_batch}})
    assert ok.memory.fits is True


def test_training_and_inference_together_is_an_error():
    with pytest.raises(ConfigError) as e:
        capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
                          "training": {"seq_len": 8, "global_batch": 1},
                          "inference": {"input_tokens": 8, "output_tokens": 1}})
    assert e.value.field == "/inference"


def test_model_kv_and_weight_helpers():
    # Llama-3.1-405B KV per token in bf16: 2 x 126 x 8 x 128 x 2 B = 516,096 B (DeepSeek ISCA'25 Table 1: 516.096 KB)
    assert capplan.model("Llama-3.1-405B").kv_cache_bytes(1).si == 516_096
    # a batch of contexts; Mistral's 4,096-token window caps the second request
    m = capplan.model("Mistral-7B")
    assert m.kv_cache_bytes([100, 10_000]).si == (100 + 4096) * 131_072
    assert m.kv_cache_bytes(1000, block_tokens=16).si == 1008 * 131_072
    assert capplan.model("Llama-3.1-70B").kv_cache_bytes(1, tp=16).si == 2 * 80 * 1 * 128 * 2  # one head per rank
    assert capplan.model("Llama-3.1-8B").weights_bytes("bf16").si == 2 * 8_030_261_248
    custom = capplan.Model.from_hf_config(LLAMA_1B_CONFIG)
    assert custom.kv_cache_bytes(10).si == 10 * 2 * 16 * 8 * 64 * 2
    with pytest.raises(ConfigError):
        m.kv_cache_bytes(10, kv_cache="fp9")


def test_batch_max_with_replicas():
    # 8 devices, tp 2 -> 4 replicas; batch "max" plans the most that fit on every replica.
    r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": 8},
                          "parallelism": {"tp": 2}, "inference": {"input_tokens": 4000, "output_tokens": 96,
                                                                  "batch": "max"}})
    assert r.inference.batch == r.inference.max_batch and r.inference.max_batch % 4 == 0
    assert r.memory.fits is True


def test_html_repr_is_valid_html_with_svg_charts():
    from html.parser import HTMLParser

    class Checker(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.svgs = [], 0

        def handle_starttag(self, tag, attrs):
            if tag == "svg":
                self.svgs += 1
            if tag not in ("rect", "line", "br"):
                self.stack.append(tag)

        def handle_endtag(self, tag):
            if tag in ("rect", "line", "br"):
                return
            assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
            self.stack.pop()

    r = capplan.estimate(capplan.default_scenario())
    for lang in ("en", "zh"):
        c = Checker()
        c.feed(r.html(lang))
        assert c.stack == [] and c.svgs == 4  # memory, decode chain, cold start, roofline
    assert "瓶颈" in r.html("zh") and "bottleneck" in r._repr_html_()


def test_an_inline_accelerator_can_share_a_catalog_ones_efficiencies():
    h800 = dict(capplan.entry("H800"))
    h800.pop("$schema", None)
    mine = {**h800, "name": "my-H800", "aliases": []}
    scenario = {"model": "Llama-3.1-8B", "inference": {"input_tokens": 2048, "output_tokens": 2, "batch": 1}}
    shared = capplan.estimate({**scenario, "system": {"accelerator": mine}}).inference.ttft_s
    assert shared == capplan.estimate({**scenario, "system": {"accelerator": "H100-SXM"}}).inference.ttft_s
    mine["efficiency"] = {"as": {"value": "H900", "source": "typo"}}
    with pytest.raises(capplan.UnknownNameError, match="/system/accelerator/efficiency/as/value"):
        capplan.estimate({**scenario, "system": {"accelerator": mine}})


@pytest.mark.parametrize("bad", [12, 1.5, None, ["model"], b"{}"])
def test_a_scenario_of_the_wrong_type_is_a_capplan_error(bad):
    with pytest.raises(capplan.ConfigError, match="a scenario is a dict, JSON text or the path"):
        capplan.estimate(bad)


def test_numpy_values_are_numbers_and_other_objects_are_errors_naming_their_field():
    # Jupyter users pass numpy scalars and arrays where numbers and lists go (issue #21 item 1).
    np = pytest.importorskip("numpy")
    plain = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                              "inference": {"input_tokens": 100, "output_tokens": 10, "concurrency": 4}})
    numpy = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": np.int64(8)},
                              "inference": {"input_tokens": np.int32(100), "output_tokens": np.array(10),
                                            "concurrency": np.int64(4)}})
    assert numpy.to_dict() == plain.to_dict()
    with pytest.raises(capplan.ConfigError) as e:
        capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": {8}}})
    assert e.value.field == "/system/count" and "a set is not a scenario value" in str(e.value)


_TRAIN = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
          "training": {"seq_len": 4096, "global_batch": 64}}
_BAD_ARGUMENTS = [  # (call, the field its error must name): wrong types and values at every entry point
    (lambda: capplan.collective(3, "1 GiB", system="DGX-H100", gpus=8), "/op"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus="eight"), "/gpus"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus=8.5), "/gpus"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus=0), "/gpus"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus=True), "/gpus"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", per_node=[8]), "/per_node"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system=5, gpus=8), "/system"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", algorithm=2), "/algorithm"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", nvls="no"), "/nvls"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", imbalance=float("nan")), "/imbalance"),
    (lambda: capplan.collective_sweep("all_reduce", sizes=5, system="DGX-H100"), "/sizes"),
    (lambda: capplan.model(5), "/model"),
    (lambda: capplan.accelerator(None), "/accelerator"),
    (lambda: capplan.system(["DGX-H100"]), "/system"),
    (lambda: capplan.entry(b"H100-SXM"), "/name"),
    (lambda: capplan.size_inference("Llama-3.1-8B", "many", 1000, 100, accelerators=["H100-SXM"]), "/concurrency"),
    (lambda: capplan.size_inference("Llama-3.1-8B", 8, 2**40, 100, accelerators=["H100-SXM"]), "/input_tokens"),
    (lambda: capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators="H100-SXM"), "/accelerators"),
    (lambda: capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM"],
                                    prices={"H100-SXM": "cheap"}), "/prices/H100-SXM"),
    (lambda: capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM"], engine=None), "/engine"),
    (lambda: capplan.search_training(_TRAIN, top_k="x"), "/top_k"),
    (lambda: capplan.search_training(_TRAIN, threads=-1), "/threads"),
    (lambda: capplan.training_limits(_TRAIN, threads=1.5), "/threads"),
    (lambda: capplan.sweep(_TRAIN, 5), "/grid"),
    (lambda: capplan.sweep(_TRAIN, {"parallelism.tp": 2}), "/grid/parallelism.tp"),
    (lambda: capplan.sweep_inference(_TRAIN, {"inference.batch": ["many"]}), "/grid/inference.batch"),
    (lambda: capplan.sweep_inference(_TRAIN, {"inference.batch": [1]}, threads="all"), "/threads"),
    (lambda: capplan.collective("all_reduce", "1 GiB", system="DGX-H100", calibration=5), "/calibration"),
    (lambda: capplan.size_inference(5, 8, 1000, 100, accelerators=["H100-SXM"]), "/model"),
    (lambda: capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM"], calibrations="c.json"),
     "/calibrations"),
    (lambda: capplan.sweep_inference(_TRAIN, {"inference.batch": [1]}, infeasible_speed="no"), "/infeasible_speed"),
    # calibration entry points
    (lambda: calibration.calibrate_collectives(5, "DGX-H100"), "/file"),
    (lambda: calibration.calibrate_collectives("out.txt", 5), "/system"),
    (lambda: calibration.calibrate_collectives("out.txt", "DGX-H100", ranks="x"), "/ranks"),
    (lambda: calibration.measure_cpu(shapes=[(1, 2)]), "/shapes/0"),
    (lambda: calibration.measure_cpu(shapes=[("a", 2, 3)]), "/shapes/0/0"),
    (lambda: calibration.measure_cpu(shapes=[(8, 8, 8)], formats="fp32"), "/formats"),
    (lambda: calibration.measure_cpu(shapes=[(8, 8, 8)], threads=2.5), "/threads"),
    (lambda: calibration.calibrate_cpu(5), "/model"),
    (lambda: calibration.calibrate_cpu("Llama-3.2-1B", layer_tokens="x"), "/layer_tokens"),
    (lambda: calibration.calibrate_cpu("Llama-3.2-1B", gemm_tokens=[0]), "/gemm_tokens/0"),
    (lambda: calibration.calibrate_cpu("Llama-3.2-1B", triad_arrays="64 MiB"), "/triad_arrays"),
    (lambda: calibration.host_scenario(5, "Llama-3.2-1B"), "/calibration"),
    (lambda: calibration.host_scenario({}, "Llama-3.2-1B"), "/calibration/host_accelerator"),
    (lambda: calibration.host_scenario({"host_accelerator": {"name": "x"}}, "Llama-3.2-1B", input_tokens=0), "/input_tokens"),
    (lambda: calibration.model_gemm_shapes("Llama-3.2-1B", tp=0), "/tp"),
    (lambda: calibration.model_gemm_shapes("Llama-3.2-1B", tokens=["a"]), "/tokens/0"),
    (lambda: calibration.calibrate_cuda(5), "/model"),
    (lambda: calibration.calibrate_cuda("Llama-3.2-1B", device=-1), "/device"),
]


@pytest.mark.parametrize("call,field", _BAD_ARGUMENTS, ids=[f for _, f in _BAD_ARGUMENTS])
def test_every_entry_point_names_a_bad_argument_instead_of_a_type_error(call, field):
    # issue #21 item 1: not pybind's signature dump, not int()'s ValueError: a ConfigError naming the argument.
    with pytest.raises(capplan.ConfigError) as e:
        call()
    assert e.value.field == field or str(e.value).startswith(field), str(e.value)


def test_arguments_of_every_kind_that_worked_before_still_work():
    # per_node 0 means "as many as fit" as None does; 1 and 0 are booleans; any iterable of names, any Mapping.
    from types import MappingProxyType
    a = capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus=8, per_node=0, nvls=1).to_dict()
    b = capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus=8).to_dict()
    assert a["busbw_bytes_per_s"] == b["busbw_bytes_per_s"]
    rows = capplan.sweep(MappingProxyType({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 1},
                                           "inference": {"input_tokens": 100, "output_tokens": 10, "batch": 1}}),
                         {"inference.batch": (b for b in (1, 2)), "inference.input_tokens": {100}}, progress=False)
    assert len(rows) == 2


def test_numpy_scalars_are_the_numbers_and_text_they_hold_in_arguments():
    np = pytest.importorskip("numpy")
    r = capplan.collective(np.str_("all_reduce"), "1 GiB", system="DGX-H100", gpus=np.int64(8), per_node=np.int32(8),
                           imbalance=np.float64(1.0))
    assert r.to_dict()["gpus"] == 8
    assert capplan.model(np.str_("Llama-3.1-8B")).name == "Llama-3.1-8B"


def test_the_result_dict_read_from_the_core_is_the_json_text_parsed():
    # capplan.estimate reads the result as an object from the core (no JSON text written and parsed again): it must be
    # the dict json.loads gives for the text, with the same key order, for every kind of result.
    import json as json_module
    from capplan import _core
    scenarios = [capplan.default_scenario(),
                 {"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8}, "parallelism": {"tp": 8},
                  "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}, "cost": {}},
                 {"model": "Llama-3.1-405B", "system": {"accelerator": "L4"},
                  "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1}},
                 {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16},
                  "training": {"seq_len": 4096, "global_batch": 256, "zero": 1, "tokens": 1e11}, "cost": {}}]
    for sc in scenarios:
        text = json_module.dumps(sc)
        parsed = json_module.loads(_core.estimate_json(text, "."))
        read = _core.estimate_object(text, ".")
        assert read == parsed and json_module.dumps(read) == json_module.dumps(parsed)
