"""CUDA calibration backend (issue 8.3): clear errors without a GPU; with one (skipped otherwise),
the probes' numbers are physical and the layer's GEMM operators are predicted within 15% after
calibration (the issue's H200 check)."""
import pytest

import capplan
from capplan.calibration import calibrate_cuda

HAS_GPU = bool(capplan.devices()["devices"])


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present")
def test_without_a_gpu_the_cuda_backend_is_a_device_error(run_cli):
    with pytest.raises(capplan.DeviceError, match="CUDA"):
        calibrate_cuda("Llama-3.2-1B")
    with pytest.raises(capplan.DeviceError, match="CUDA"):
        calibrate_cuda("Llama-3.2-1B", accelerator="H200")
    assert issubclass(capplan.DeviceError, RuntimeError) and issubclass(capplan.DeviceError, capplan.Error)
    code, _, stderr = run_cli("calibrate", "--backend", "cuda", "--model", "Llama-3.2-1B")
    assert code == 2 and "CUDA" in stderr and stderr.count("\n") == 1
    code, _, stderr = run_cli("calibrate", "--backend", "cuda")
    assert code == 2 and "--model" in stderr


@pytest.mark.skipif(not HAS_GPU, reason="no GPU")
def test_cuda_calibration_on_the_gpu(tmp_path):
    cal = calibrate_cuda("Llama-3.2-1B", gemm_tokens=(1, 128, 2048), layer_tokens=2048, max_time="0.2 s",
                         output=tmp_path / "gpu.json")
    accel = capplan.accelerator(cal["accelerator"])
    assert cal["provenance"]["backend"] == "cuda" and "sm_" in cal["provenance"]["device"]
    for fmt, points in cal["curves"]["gemm"].items():
        assert all(0 < p["efficiency"] <= 1.05 for p in points), fmt  # no GEMM beats the datasheet peak
    copies = [m for m in cal["measurements"] if m["kind"] == "memory_copy"]
    assert max(m["achieved_bytes_per_s"] for m in copies) <= 1.02 * float(accel.memory_bandwidth)
    launch = capplan.quantity(cal["kernel_launch"])
    assert 0.5e-6 < float(launch) < 50e-6
    pinned = next(m for m in cal["measurements"] if m["probe"].startswith("host to device pinned"))
    pageable = next(m for m in cal["measurements"] if m["probe"].startswith("host to device pageable"))
    assert pinned["achieved_bytes_per_s"] >= 0.9 * pageable["achieved_bytes_per_s"]
    for o in cal["report"]["ops"]:
        assert o["predicted_after_s"] == pytest.approx(o["measured_s"], rel=0.15), o
    # The file is usable by estimates on that accelerator.
    r = capplan.estimate({"model": "Llama-3.2-1B", "system": {"accelerator": cal["accelerator"], "count": 1},
                          "inference": {"input_tokens": 2048, "output_tokens": 64, "batch": 1}},
                         calibration=tmp_path / "gpu.json")
    assert r.to_dict()["efficiency_table"] == cal["name"]
