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
import statistics
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


# Training steps of small decoders, measured by scripts/device_train_step.py (issue #20, item 3), all held out (the first
# set's eager steps shaped the eager kernel model's form: docs/validation.md).
SECOND_SET = ("smollm2-360m", "qwen2.5-0.5b", "llama-3.2-1b")


@pytest.fixture(scope="module")
def training_rows():
    return {(r["id"], r["quantity"]): r for r in report._gpu_training_rows()}


def test_the_measured_training_steps_were_gpu_bound_and_eager_dispatch_is_measured():
    d = json.loads((ROOT / "tests" / "data" / "gpu" / "h200_train_steps.json").read_text())
    assert d["device"] == "NVIDIA H200" and d["torch"].startswith("2.11")
    assert not d.get("errors") and not d.get("did_not_fit")
    assert [(s["model"], s["compiled"]) for s in d["steps"]] == [
        ("mpt-125m", False), ("mpt-350m", False), ("mpt-760m", False), ("mpt-1b", False), ("tinyllama-1.1b", False),
        ("smollm2-360m", False), ("qwen2.5-0.5b", False), ("llama-3.2-1b", False), ("tinyllama-1.1b", True),
        ("llama-3.2-1b", True)]
    for s in d["steps"]:  # the kernels' sum within 5% of the step: the GPU, not Python, paced it
        assert s["profile"]["kernel_ms"] == pytest.approx(s["median_ms"], rel=0.05), s["model"]
    # Eager dispatch on this host: microseconds an operator, far below these steps' kernels (tens of microseconds up).
    assert 1 < d["dispatch"]["issue_us_per_op"] < d["dispatch"]["autograd_fwd_bwd_us_per_op"] < 100


def test_the_second_set_measured_after_the_eager_kernel_model_meets_the_small_model_target(training_rows):
    # Issue #20's target for held-out training rows: median |error| within 7%, each within 12%. SmolLM2-360M,
    # Qwen2.5-0.5B and Llama-3.2-1B shapes, measured after eager_kernels.hpp was written: -2.2%, -0.9%, +6.0% eager,
    # -2.2% compiled (2026-12-04; capplan before the change read -28.2%, -17.4%, -9.7%).
    errors = [r["error"] for (tag, q), r in training_rows.items()
              if q == "gpu_training_step" and any(f"[{m}" in tag for m in SECOND_SET)]
    assert len(errors) == 4
    assert statistics.median(abs(e) for e in errors) <= 0.07 and all(abs(e) <= 0.12 for e in errors), errors


def test_the_first_set_stays_within_10_percent_and_the_mpt_excess_is_bounded(training_rows):
    # Re-measured with the second set: MPT +0.8% to +9.4% (capplan's GEMMs at the catalog's 0.61 of the bf16 peak where
    # these ran at 0.72-0.77), TinyLlama +3.7% eager and -8.8% compiled (Inductor's rotary kernels, not counted).
    steps = {tag: r["error"] for (tag, q), r in training_rows.items()
             if q == "gpu_training_step" and not any(f"[{m}" in tag for m in SECOND_SET)}
    assert len(steps) == 6 and all(abs(e) <= 0.10 for e in steps.values()), steps
    assert -0.12 <= steps["measured_gpu_training[tinyllama-1.1b compiled]"] < 0


def test_the_eager_kernel_classes_come_from_the_micro_benchmark():
    # models/accelerators/h200.json efficiency.eager_elementwise is each class's median measured bandwidth / 4.8 TB/s.
    d = json.loads((ROOT / "tests" / "data" / "gpu" / "h200_eager_kernels.json").read_text())
    catalog = json.loads((ROOT / "models" / "accelerators" / "h200.json").read_text())["efficiency"]["eager_elementwise"]
    by_class = {}
    for k in d["eager_kernels"]:
        by_class.setdefault(k["kernel_class"], []).append(k["gb_per_s"])
    assert set(by_class) == set(catalog)
    for cls, rates in by_class.items():
        assert catalog[cls]["value"] == pytest.approx(statistics.median(rates) / 4800, abs=0.0015), cls


def test_the_measured_peak_memory_is_within_20_percent(training_rows):
    # capplan's live tensors against the allocator's peak: -6% to +13% on the eager steps, -11% and -20% compiled
    # (2026-12-04): the logits at the loss (capplan 16 bytes each with kernels eager, 8 without, where this loop holds
    # about 14), autocast's cached 16-bit weights and the layers' activations (docs/validation.md).
    memory = {k[0]: r["error"] for k, r in training_rows.items() if k[1] == "gpu_training_memory"}
    assert len(memory) == 10 and all(abs(e) <= 0.20 for e in memory.values()), memory



def test_the_moe_expert_gemms_of_the_published_rows_ran_at_about_twice_capplans_grouped_ceiling():
    # scripts/device_moe_gemm.py (docs/validation.md, "MoE expert GEMMs of training measured on the H200"): at the H100
    # and B200 Megatron-Bridge rows' expert shapes one torch._grouped_mm bf16 kernel reached 0.60-0.72 of the bf16 peak
    # in each of the forward, input-gradient and weight-gradient products, where capplan charges at most 0.30.
    d = json.loads((ROOT / "tests" / "data" / "gpu" / "h200_moe_gemm.json").read_text())
    ceiling = json.loads((ROOT / "models" / "accelerators" / "h200.json").read_text())["efficiency"]["grouped_matmul"]["bf16"]["value"]
    assert len(d["cases"]) == 8
    for c in d["cases"]:
        for kind, t in c["times_ms"].items():
            fraction = c["flop_per_kind"] / (t["grouped_mm_bf16"] * 1e-3) / 989.4e12
            assert 0.55 <= fraction <= 0.8 and fraction >= 1.8 * ceiling, (c["case"], kind, fraction)
