"""What the H200 measured (issue #24): the shipped CUDA calibrations (models/calibration/h200-cuda-*.json) and
the prefill and decode steps of tests/data/gpu, measured by scripts/device_check.sh on 2026-12-04.

The calibrations validate, say where and when they were measured, and apply to estimates. Every measured step is
held out (no constant of capplan was chosen with it): the catalog's prediction of each step the GPU paced stays
within 10% (docs/validation.md, 'Measured on an H200 here', lists them), the calibrated prediction of decode
steps within 10%, and the calibrated prefill's known gap (kernel-level GEMM efficiency, element-wise work the
step model under-counts) is bounded so that it cannot grow unnoticed. The figures come from
scripts/validation_report.py, so this test and the document cannot disagree.
"""
import json
import pathlib

import pytest

import capplan
from schema_support import validator as schema_validator
from test_validation import report  # scripts/validation_report.py, loaded by path

ROOT = pathlib.Path(__file__).resolve().parents[2]
CALIBRATIONS = sorted((ROOT / "models" / "calibration").glob("h200-cuda-*.json"))


@pytest.fixture(scope="module")
def rows():
    return report._gpu_rows()


def test_the_shipped_h200_calibrations_validate_and_say_where_they_were_measured():
    assert [f.name for f in CALIBRATIONS] == ["h200-cuda-llama-3.1-8b.json", "h200-cuda-qwen3-8b.json"]
    validate = schema_validator("efficiency_calibration.schema.json")
    for f in CALIBRATIONS:
        cal = json.loads(f.read_text())
        validate.validate(cal)
        where = cal["provenance"]
        assert where["backend"] == "cuda" and where["device"].startswith("NVIDIA H200 (sm_90")
        assert "driver 13.0" in where["runtime"] and "SM 1980 MHz" in where["clocks"]
        assert where["date"].startswith("2026-12-04")
        # Raw measurements of every probe kind beside the fitted curves.
        kinds = {m["kind"] for m in cal["measurements"]}
        assert kinds == {"gemm", "memory_copy", "host_to_device", "device_to_host", "decode_attention", "launch"}
        assert set(cal["curves"]["gemm"]) == {"bf16", "fp16", "fp8"}


def test_a_calibration_fits_only_gemms_at_or_above_the_ridge():
    # H200 bf16 ridge: 989.5 TFLOP/s / 4.8 TB/s = 206 FLOP/B; the knots are the compute-bound shapes' FLOPs.
    cal = json.loads(CALIBRATIONS[0].read_text())
    ridge = 989.5e12 / 4.8e12
    above = sorted({m["flops"] for m in cal["measurements"]
                    if m["kind"] == "gemm" and m["format"] == "bf16" and m["flops"] / m["bytes"] >= ridge})
    knots = [p["flops"] for p in cal["curves"]["gemm"]["bf16"]]
    assert knots == pytest.approx(above, rel=1e-9)
    assert len(knots) == 8  # 4 GEMMs of the layer at 512 and at 2,048 tokens; 1, 16 and 128 tokens are below


def test_the_calibration_applies_to_an_h200_estimate():
    cal = CALIBRATIONS[0]
    scenario = {"model": "Llama-3.1-8B", "system": {"accelerator": "H200", "count": 1},
                "inference": {"input_tokens": 2048, "output_tokens": 64, "batch": 1}}
    r = capplan.estimate(scenario, calibration=cal).to_dict()
    measured = json.loads(cal.read_text())
    assert r["efficiency_table"] == measured["name"]
    # Its kernel launch is the measured one (a tiny kernel in a CUDA graph), not the catalog's 2.2 us.
    launch = next(m["time_s"] for m in measured["measurements"] if m["kind"] == "launch")
    assert capplan.quantity(measured["kernel_launch"]).si == pytest.approx(launch, rel=1e-3)
    assert any(f"{measured['kernel_launch']} per kernel" in n for n in r["notes"])


def test_every_step_the_gpu_paced_is_a_held_out_row_of_both_predictions(rows):
    steps = [s for s in report.gpu_steps("compiled") if not s["host_bound"]]
    assert len(steps) == 12  # 2 models x (2 prompts + 4 decode batches); the 512-token prompts were host-bound
    assert len(rows) == 2 * len(steps) and all(r["role"] == "held_out" for r in rows)
    bound = [s for s in report.gpu_steps("compiled") if s["host_bound"]]
    assert {(s["model"], s["phase"], s["tokens"]) for s in bound} == {("Llama-3.1-8B", "prefill", 512),
                                                                      ("Qwen3-8B", "prefill", 512)}


def test_the_catalog_predicts_each_measured_step_within_10_percent(rows):
    catalog = {r["id"]: r["error"] for r in rows if r["quantity"] == "gpu_step"}
    assert all(abs(e) <= 0.10 for e in catalog.values()), catalog


def test_the_calibration_predicts_decode_within_10_percent_and_its_prefill_gap_stays_bounded(rows):
    calibrated = [r for r in rows if r["quantity"] == "gpu_step_calibrated"]
    decode = {r["id"]: r["error"] for r in calibrated if " decode " in r["id"]}
    prefill = {r["id"]: r["error"] for r in calibrated if " prefill " in r["id"]}
    assert len(decode) == 8 and all(abs(e) <= 0.10 for e in decode.values()), decode
    # Known gap, 2026-12-04: -18% to -22% (the GEMMs' kernel-level efficiency and under-counted element-wise work).
    assert len(prefill) == 4 and all(-0.25 <= e < 0 for e in prefill.values()), prefill


# Training steps of small decoders, measured by scripts/device_train_step.py (issue #20, item 3), all held out.
@pytest.fixture(scope="module")
def training_rows():
    return {(r["id"], r["quantity"]): r for r in report._gpu_training_rows()}


def test_the_measured_training_steps_were_gpu_bound_and_eager_dispatch_is_measured():
    d = json.loads((ROOT / "tests" / "data" / "gpu" / "h200_train_steps.json").read_text())
    assert d["device"] == "NVIDIA H200" and d["torch"].startswith("2.11")
    assert not d.get("errors") and not d.get("did_not_fit")
    assert [(s["model"], s["compiled"]) for s in d["steps"]] == [
        ("mpt-125m", False), ("mpt-350m", False), ("mpt-760m", False), ("mpt-1b", False), ("tinyllama-1.1b", False),
        ("tinyllama-1.1b", True)]
    for s in d["steps"]:  # the kernels' sum within 5% of the step: the GPU, not Python, paced it
        assert s["profile"]["kernel_ms"] == pytest.approx(s["median_ms"], rel=0.05), s["model"]
    # Eager dispatch on this host: microseconds an operator, far below these steps' kernels (tens of microseconds up).
    assert 1 < d["dispatch"]["issue_us_per_op"] < d["dispatch"]["autograd_fwd_bwd_us_per_op"] < 100


def test_capplan_predicts_the_eager_mpt_training_steps_within_10_percent(training_rows):
    # LayerNorm + GeLU decoders of 125M-1.3B parameters, 14-32 sequences of 2,048 tokens: -8.2% to +0.6% (2026-12-04).
    steps = {k[0]: r for k, r in training_rows.items() if k[1] == "gpu_training_step" and "[mpt-" in k[0]}
    assert len(steps) == 4
    assert all(abs(r["error"]) <= 0.10 for r in steps.values()), {k: r["error"] for k, r in steps.items()}


def test_the_hugging_face_style_llama_steps_gap_stays_bounded(training_rows):
    # Known gap (docs/validation.md): capplan is fast on TinyLlama with Hugging Face-style modules, -15.2% eager and
    # -11.6% compiled on 2026-12-04: eager, rotate_half's kernels over strided q and k and the fp32 residual adds;
    # compiled, Inductor's rotary kernels. Bounded so that it cannot grow unnoticed, and signed: capplan is the faster.
    for tag in ("measured_gpu_training[tinyllama-1.1b]", "measured_gpu_training[tinyllama-1.1b compiled]"):
        assert -0.20 <= training_rows[(tag, "gpu_training_step")]["error"] < 0, tag


def test_the_measured_peak_memory_is_within_15_percent(training_rows):
    # capplan's live tensors against the allocator's peak: +12% to +13% on the MPT steps, -5% and -11% on TinyLlama
    # (2026-12-04): the logits at the loss (capplan 16 bytes each with kernels eager, 8 without, where this loop holds
    # about 14) and the layers' activations (docs/validation.md).
    memory = {k[0]: r["error"] for k, r in training_rows.items() if k[1] == "gpu_training_memory"}
    assert len(memory) == 6 and all(abs(e) <= 0.15 for e in memory.values()), memory
