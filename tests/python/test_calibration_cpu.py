"""CPU calibration backend end to end (issue 8.2/8.5): measurements with provenance, the model's
own GEMM shapes, the CLI, typed errors."""
import json

import pytest

import capplan
from capplan.calibration import measure_cpu, model_gemm_shapes


def test_model_gemm_shapes_are_the_layer_of_the_model():
    # Llama-3.1-8B: hidden 4096, 32 heads and 8 KV heads of 128, gated MLP of 14336 (its config.json).
    shapes = model_gemm_shapes("Llama-3.1-8B", tokens=(16,))
    assert shapes == [(16, (32 + 2 * 8) * 128, 4096), (16, 4096, 4096), (16, 2 * 14336, 4096), (16, 4096, 14336)]
    assert model_gemm_shapes("Llama-3.1-8B", tokens=(1,), tp=2)[0] == (1, (32 + 16) * 128 // 2, 4096)


def test_measure_cpu_reports_work_time_and_provenance():
    run = measure_cpu(shapes=[(64, 64, 64), (128, 32, 96)], formats=("fp32", "fp64"), array="8 MiB", max_time="0.2 s")
    prov = run["provenance"]
    assert prov["backend"] == "cpu" and "Eigen 3." in prov["runtime"] and prov["date"].endswith("Z")
    ms = run["measurements"]
    assert [m["kind"] for m in ms] == ["gemm"] * 4 + ["memory_copy", "memory_triad"]
    g = next(m for m in ms if m["format"] == "fp64" and m["m"] == 128)
    assert g["flops"] == 2 * 128 * 32 * 96 and g["bytes"] == 8 * (128 * 96 + 96 * 32 + 128 * 32)
    assert g["achieved_flops_per_s"] == pytest.approx(g["flops"] / g["time_s"])
    copy = ms[-2]
    assert copy["bytes"] == 2 * 8 * 2**20 and copy["achieved_bytes_per_s"] > 0
    assert all(m["runs"] >= 5 and m["spread"] >= 0 for m in ms)


def test_bad_calibration_input_is_a_typed_error():
    with pytest.raises(capplan.ConfigError, match="fp32, fp64"):
        measure_cpu(shapes=[(8, 8, 8)], formats=("bf16",), array=0)
    with pytest.raises(capplan.ConfigError, match="/m"):
        measure_cpu(shapes=[(0, 8, 8)], array=0)
    with pytest.raises(capplan.UnitError):
        measure_cpu(shapes=[(8, 8, 8)], array="8 MB/s")


def test_cli_calibrate_writes_the_measurements(tmp_path, run_cli):
    out = tmp_path / "cal.json"
    code, stdout, _ = run_cli("calibrate", "--backend", "cpu", "--array", "8MiB", "--max-time", "0.1s",
                              "--model", "Llama-3.2-1B", "--tokens", "1,4", "-o", str(out))
    assert code == 0 and f"wrote {out}" in stdout and "GB/s" in stdout
    data = json.loads(out.read_text())
    assert len(data["measurements"]) == 4 * 2 + 2   # four GEMMs at 1 and 4 tokens, copy, triad
    code, _, stderr = run_cli("calibrate", "--backend", "cuda")
    assert code == 2 and "allowed: cpu" in stderr
