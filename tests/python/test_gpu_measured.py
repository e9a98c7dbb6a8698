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


# Training steps of small decoders, measured by scripts/device_train_step.py (issue #20, item 3): the eager steps are
# fitted (the first set shaped the eager kernel model's form, the second was seen before its corrections), the compiled
# ones held out (docs/validation.md). A step's set: its model (the tag's first word) in the report's first set or not.
def _in_first_set(tag):
    return tag[len("measured_gpu_training["):-1].split(" ")[0] in report.GPU_TRAINING_FIRST_SET


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
    # Issue #20's target for training rows: median |error| within 7%, each within 12%. SmolLM2-360M,
    # Qwen2.5-0.5B and Llama-3.2-1B shapes, measured after eager_kernels.hpp was written: +3.1%, +2.2%, +8.9% eager,
    # -2.2% compiled (2026-12-04, after the review's source corrections; -2.2%, -0.9%, +6.0% before them; capplan before
    # the eager model read -28.2%, -17.5%, -9.7%: tests/data/gpu/h200_train_steps_earlier_capplan.json). The eager
    # steps count as fitted since the corrections were settled after their errors had been seen; the compiled one, which
    # the eager model does not touch, stays held out.
    second = {tag: r for (tag, q), r in training_rows.items()
              if q == "gpu_training_step" and not _in_first_set(tag)}
    errors = [r["error"] for r in second.values()]
    assert len(errors) == 4 and all(r["role"] == ("held_out" if tag.endswith("compiled]") else "fitted")
                                    for tag, r in second.items())
    assert statistics.median(abs(e) for e in errors) <= 0.07 and all(abs(e) <= 0.12 for e in errors), errors


def test_the_first_set_which_shaped_the_model_is_fitted_and_within_12_percent(training_rows):
    # Re-measured with the second set: MPT +2.1% to +10.5% (capplan's GEMMs at the catalog's 0.61 of the bf16 peak where
    # these ran at 0.72-0.77), TinyLlama +7.6% eager and -8.8% compiled (Inductor's rotary kernels, not counted). The
    # eager steps shaped the eager kernel model's form: fitted, not held out.
    steps = {tag: r for (tag, q), r in training_rows.items()
             if q == "gpu_training_step" and _in_first_set(tag)}
    assert len(steps) == 6 and all(abs(r["error"]) <= 0.12 for r in steps.values()), steps
    assert [tag for tag, r in steps.items() if r["role"] == "held_out"] == ["measured_gpu_training[tinyllama-1.1b compiled]"]
    assert -0.12 <= steps["measured_gpu_training[tinyllama-1.1b compiled]"]["error"] < 0


def test_the_eager_kernel_classes_come_from_the_micro_benchmark():
    # models/accelerators/h200.json efficiency.eager_elementwise is each class's median measured bandwidth / 4.8 TB/s
    # over the three runs, each kernel in the class the last run's script gives it (the first two named x * rsqrt strided).
    runs = [json.loads((ROOT / "tests" / "data" / "gpu" / name).read_text())["eager_kernels"]
            for name in ("h200_eager_kernels_a.json", "h200_eager_kernels.json", "h200_eager_kernels_b.json")]
    catalog = report._catalog_efficiency("h200", "eager_elementwise")
    bandwidth_gb_per_s = capplan.accelerator("H200").memory_bandwidth.si / 1e9  # 4,800 GB/s
    kind = {k["kernel"]: k["kernel_class"] for k in runs[2]}
    by_class = {}
    for run in runs:
        for k in run:
            by_class.setdefault(kind[k["kernel"]], []).append(k["gb_per_s"])
    assert set(by_class) == set(catalog)
    for cls, rates in by_class.items():
        assert catalog[cls]["value"] == pytest.approx(statistics.median(rates) / bandwidth_gb_per_s, abs=0.0015), cls


def test_the_measured_peak_memory_is_within_15_percent_but_one_compiled_step(training_rows):
    # capplan's live tensors against the allocator's peak: -6% to +13% (2026-12-04): the logits at the loss (capplan 16
    # bytes each with kernels eager, 8 without, where this loop holds about 14) and the layers' activations. Known gap:
    # Llama-3.2-1B compiled, -19.5% (autocast's cached 16-bit weights and Inductor's saved buffers, not counted).
    memory = {k[0]: r["error"] for k, r in training_rows.items() if k[1] == "gpu_training_memory"}
    gap = memory.pop("measured_gpu_training[llama-3.2-1b compiled]")
    assert len(memory) == 9 and all(abs(e) <= 0.15 for e in memory.values()), memory
    assert -0.22 <= gap < 0


def test_the_moe_expert_gemms_of_the_published_rows_ran_at_about_twice_capplans_grouped_ceiling():
    # scripts/device_moe_gemm.py (docs/validation.md, "MoE expert GEMMs of training measured on the H200"): at the
    # Megatron-Bridge rows' expert shapes one torch._grouped_mm bf16 kernel reached 0.59-0.71 of the bf16 peak in each
    # of the forward, input-gradient and weight-gradient products, where capplan charges H100s and H200s at most 0.30.
    d = json.loads((ROOT / "tests" / "data" / "gpu" / "h200_moe_gemm.json").read_text())
    ceiling = report._catalog_efficiency("h200", "grouped_matmul", "bf16")
    assert len(d["cases"]) == 8
    for c in d["cases"]:
        for kind, t in c["times_ms"].items():
            fraction = c["flop_per_kind"] / (t["grouped_mm_bf16"] * 1e-3) / report._h200_peak("bf16")
            assert 0.55 <= fraction <= 0.8 and fraction >= 1.8 * ceiling, (c["case"], kind, fraction)
