"""Serving engines' own all-reduce kernels (docs/formulas.md section 11b) from Python and the CLI: the
kernel's time by hand, the engine's switch from one-shot to two-shot, NCCL beyond its limit, and the
serving estimate with and without it. The published kernel times are compared in test_validation.py."""
import json

import pytest

import capplan

B = 450e9 * 0.80  # H100/H200 NVLink 4 per direction x the ring efficiency on NVSwitch (collectives.hpp)


def test_one_shot_time_by_hand_and_the_switch_to_two_shot():
    r = capplan.collective("all_reduce", "64 KiB", system="HGX-H200", gpus=8, engine="vllm-v1")
    assert r.algorithm == "one_shot"
    assert r.time.in_("us") == pytest.approx(5.6 + 7 * 65536 / B * 1e6, rel=1e-9)
    assert r.protocol.startswith("vLLM custom all-reduce")
    # vLLM switches to two-shot at 256 KiB on 8 GPUs: 14.8 + 1.75 x 262,144 / B.
    two = capplan.collective("all_reduce", "256 KiB", system="HGX-H200", gpus=8, engine="vllm-v1")
    assert two.algorithm == "two_shot"
    assert two.time.in_("us") == pytest.approx(14.8 + 1.75 * 262144 / B * 1e6, rel=1e-9)
    # TensorRT-LLM keeps one-shot there (AUTO: below 512 KiB on 8 GPUs).
    assert capplan.collective("all_reduce", "256 KiB", system="HGX-H200", gpus=8, engine="trtllm-pytorch").algorithm == "one_shot"
    # The kernel is several times faster than NCCL's model for a decode-size message.
    nccl = capplan.collective("all_reduce", "64 KiB", system="HGX-H200", gpus=8)
    assert nccl.time.in_("us") > 3 * r.time.in_("us")


def test_a_forced_algorithm_and_the_sweep():
    forced = capplan.collective("all_reduce", "1 MiB", system="DGX-H100", gpus=4, engine="sglang", algorithm="one_shot")
    assert forced.time.in_("us") == pytest.approx(5.6 + 3 * 1048576 / B * 1e6, rel=1e-9)
    rows = capplan.collective_sweep("all_reduce", "16KiB:4MiB", system="DGX-H100", gpus=4, engine="vllm-v1")
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert [r["algorithm"] for r in rows] == ["one_shot"] * 5 + ["two_shot"] * 4  # 16..256 KiB, then 512 KiB..4 MiB


@pytest.mark.parametrize("kwargs,field", [
    (dict(size="8 MiB", gpus=8), "/size"),                     # the engine calls NCCL from 8 MiB
    (dict(size="64 KiB", gpus=3), "/engine"),                  # vLLM's kernel runs on 2, 4, 6 or 8 GPUs
    (dict(size="64 KiB", gpus=8, algorithm="ring"), "/algorithm"),  # not one of the engine's kernels
])
def test_where_the_engine_would_not_run_its_kernel_the_error_names_the_field(kwargs, field):
    size = kwargs.pop("size")
    with pytest.raises(capplan.ConfigError, match=f"^{field}"):
        capplan.collective("all_reduce", size, system="HGX-H200", engine="vllm-v1", **kwargs)


def test_one_shot_without_an_engine_and_an_unknown_engine_are_errors():
    with pytest.raises(capplan.ConfigError, match="^/algorithm.*serving engine"):
        capplan.collective("all_reduce", "64 KiB", system="HGX-H200", gpus=8, algorithm="one_shot")
    with pytest.raises(capplan.ConfigError, match="^/engine.*vllm-v1"):
        capplan.collective("all_reduce", "64 KiB", system="HGX-H200", gpus=8, engine="vllm-v2")
    with pytest.raises(capplan.ConfigError, match="^/engine"):
        capplan.collective("all_gather", "64 KiB", system="HGX-H200", gpus=8, engine="vllm-v1")


def _estimate(**inference):
    return capplan.estimate({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8}, "parallelism": {"tp": 8},
                             "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1, **inference}})


def test_the_estimate_names_the_kernel_and_custom_allreduce_false_restores_nccl():
    own, nccl = _estimate(), _estimate(custom_allreduce=False)
    assert any("vLLM custom all-reduce" in n for n in own.notes)
    assert not any("custom all-reduce" in n for n in nccl.notes)
    # Batch-1 decode: 160 all-reduces of 16 KiB, each 5.6 + 7 x 16,384 / B us with the kernel.
    saved = 160 * (capplan.collective("all_reduce", "16 KiB", system="HGX-H200", gpus=8).time.in_("s")
                   - (5.6 + 7 * 16384 / B * 1e6) * 1e-6)
    assert float(nccl.inference.tpot_s) - float(own.inference.tpot_s) == pytest.approx(saved, rel=0.02)
    with pytest.raises(capplan.ConfigError, match="^/inference/custom_allreduce"):
        _estimate(custom_allreduce="yes")


def test_cli_collective_engine_and_list_engines(run_cli):
    code, out, _ = run_cli("collective", "all_reduce", "--system", "HGX-H200", "--gpus", "8", "--size", "64KiB",
                           "--engine", "vllm-v1", "--format", "json")
    assert code == 0 and json.loads(out)["algorithm"] == "one_shot"
    code, _, err = run_cli("collective", "all_reduce", "--system", "HGX-H200", "--gpus", "8", "--size", "16MiB",
                           "--engine", "vllm-v1")
    assert code == 2 and err.startswith("capplan: error: /size") and len(err.strip().splitlines()) == 1
    code, out, _ = run_cli("list", "engines", "--format", "json")
    kernels = {p["name"]: p["allreduce"] for p in json.loads(out)}
    assert kernels["sglang"]["group_sizes"] == [2, 4, 6, 8] and kernels["trtllm-tensorrt"]["nccl_from_bytes"] == 8 * 2**20
