"""Fitted and held-out published rows kept apart (issue #18): every row the speed tests compare carries a
role in tests/data/published_inference.json, and the held-out rows meet the issue's targets.

The statistics come from scripts/validation_report.py (the script that writes docs/validation.md), so
the test and the document cannot disagree. Whether docs/validation.md is up to date is not tested here
(the model changes more often than the document is regenerated): `python scripts/validation_report.py
--check` says.
"""
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(name, path):
    # By path: the tests run from outside the tree against the installed wheel.
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load("validation_report", ROOT / "scripts" / "validation_report.py")
_DATA = json.loads(report.DATA.read_text())
_ROWS = _DATA["latency_measurements"]

# Held-out entries ("<id> <quantity>") beyond report.ROW_LIMIT (35%), each with its documented cause
# (the row's notes or the table's not_checked, and docs/formulas.md). The figures are the model's today.
_MOE_H100 = ("Qwen3-235B-A22B on 8 H100s with attention data parallelism, decode-heavy shapes: on 80 GB the cache "
             "left after each rank's whole attention weights holds a third of the H200's requests, and how "
             "TensorRT-LLM caps the batch there is not published with the table (docs/formulas.md section 12)")
DOCUMENTED_CAUSES = {
    "latency_measurements[75] ttft": "Mixtral-8x7B fp16 A100 TP2 128 tokens, +52%: 23.8 ms would read all eight "
        "experts' weights at 96% of peak bandwidth, so the benchmark's synthetic tokens likely reach fewer experts "
        "than uniform routing (docs/formulas.md section 14)",
    "latency_measurements[37] throughput_static": "vLLM benchmark_latency, Llama-3.1-8B bf16 on an H200, batch 8, "
        "+41%: 833 ms for 128 tokens is 6.5 ms a step where the weights take 4.0 ms to read; that vLLM (its version "
        "not recorded) spent about 2 ms a step on the host (scheduling, sampling, detokenising), which capplan's "
        "default engine, with no per-step host work, leaves out (engine profiles, issue #18 item 5)",
    "latency_measurements[38] throughput_static": "vLLM benchmark_latency, Llama-3.1-70B bf16 on 4 H200s, batch 8, "
        "+37%: the same per-step host work as the 8B row above, a larger share once the tp all-reduces run vLLM's "
        "own kernel (about 6 us each instead of NCCL's 20-25 us)",
    "latency_measurements[98] tpot": "DeepSeek-V3 fp8 on 8 H200s at 4 users, -35%: a 61-layer MoE step of about "
        "1,500 small kernels at batch 4, whose launch gaps inside the CUDA graph and low-occupancy expert kernels "
        "capplan does not cost; NCCL's 20-25 us per all-reduce used to hide it, the engine's 6 us kernel shows it "
        "(docs/formulas.md section 11b)",
    "saturated_throughput.tables[7] 128/2048 throughput_saturated": _MOE_H100 + ", +48%",
    "saturated_throughput.tables[7] 128/4096 throughput_saturated": _MOE_H100 + ", +63%",
    "saturated_throughput.tables[7] 500/2000 throughput_saturated": _MOE_H100 + ", +43%",
    "saturated_throughput.tables[7] 2048/2048 throughput_saturated": _MOE_H100 + ", +41%",
}


@pytest.fixture(scope="module")
def rows():
    return report.collect(_DATA)


@pytest.fixture(scope="module")
def stats(rows):
    return report.summarise(rows)


def test_every_row_and_table_is_labelled_and_fitted_rows_say_what_they_fixed():
    for n, row in enumerate(_ROWS):
        assert row.get("role") in ("fitted", "held_out", "unused"), n
        assert bool(row.get("fitted_for")) == (row["role"] == "fitted"), n
    for table in _DATA["saturated_throughput"]["tables"]:
        assert table.get("role") == "held_out", table["doc_column"]  # none was fitted, none is left out
    assert {"role", "fitted_for"} <= set(_DATA["_meta"]["roles"])


def _one(**match):
    found = [r for r in _ROWS if all(match[k](r) if callable(match[k]) else r.get(k) == match[k] for k in match)]
    assert len(found) == 1, match
    return found[0]


def _value(field, v):
    return lambda r: (r.get(field) or {}).get("value") == v


def test_every_row_the_speed_tests_compare_has_a_role_and_their_fit_marks_agree(rows):
    speed = _load("speed_tests_for_roles", ROOT / "tests" / "python" / "test_inference_speed.py")
    compared = []
    for label, model, accel, tp, _, _, _, tpot in speed.TPOT_BATCH1:
        compared.append(_one(gpu=accel, tp=tp, concurrency=1, model=lambda r, m=model: report._model(r) == m,
                             tpot_ms=lambda r, v=tpot: _value("tpot_ms", v)(r) or _value("itl_ms", v)(r)))
    for label, model, accel, tp, _, inp, _, ttft in speed.TTFT_BATCH1:
        row = _one(gpu=accel, tp=tp, input_tokens=inp, concurrency=1, model=model, ttft_ms=_value("ttft_ms", ttft))
        # The speed tests mark the rows a default was derived from '(fit)': the same rows as here.
        assert ("(fit" in label) == (row["role"] == "fitted"), label
        compared.append(row)
    compared += [_one(ttft_ms=_value("ttft_ms", ttft)) for _, _, ttft in speed.DSR1_H200]
    # Hard-coded in their tests: NIM at 25 and 50 users (mean ITL), vLLM's Qwen3-30B-A3B at 10 users.
    compared += [_one(itl_ms=_value("itl_ms", v)) for v in (38.75, 59.73)] + [_one(ttft_ms=_value("ttft_ms", 300.05))]
    compared += [r for r in _ROWS if r.get("checked")]  # the Poisson, burst and InferenceX tests
    assert all(r["role"] in report.ROLES for r in compared)
    tables = _DATA["saturated_throughput"]["tables"]
    assert all(tables[i]["role"] in report.ROLES for i, *_ in speed.SATURATED)
    # And the report runs every one of them.
    reported = {r["id"] for r in rows
                if not r["id"].startswith(("published_serving", "published_engine_allreduce", "published_checkpoint",
                                               "published_lora", "published_training", "collectives", "measured_gpu"))}
    assert all(f"latency_measurements[{n}]" in reported for n, r in enumerate(_ROWS) if any(r is c for c in compared))
    assert len(reported) == sum(r["role"] in report.ROLES for r in _ROWS) + sum(
        len(t["output_tokens_per_s"]) for t in tables if t["role"] in report.ROLES)


def test_fitted_rows_fit(rows, stats):
    # A fitted row proves nothing, but one its constant no longer fits within the batch-1 tests' 20%
    # means that constant should be re-derived.
    assert stats["ttft", "fitted"]["count"] == sum(r["role"] == "fitted" for r in _ROWS)
    # Fitted rows with a documented gap (the TensorRT-LLM v0.5 decode-heavy rows, fitted only for the
    # reading of their table's unit) are off for the documented cause, not a stale constant.
    gaps = _known_gaps()
    assert all(abs(r["error"]) <= 0.20 for r in rows if r["role"] == "fitted" and r["id"] not in gaps), stats["ttft", "fitted"]


@pytest.mark.parametrize("quantity", sorted(set(report.TARGETS) - report.OPEN_TARGETS))
def test_held_out_median_error_within_the_issue_18_target(stats, quantity):
    s = stats[quantity, "held_out"]
    assert s["median_abs"] <= report.TARGETS[quantity], s


def test_held_out_training_step_error_does_not_grow(stats):
    # Issue #20's 7% is open (docs/validation.md says missed): 7.3% over 35 rows until 2026-12-02, when seven held-out
    # Megatron-Bridge 26.04.01 MoE rows (capplan 16-40% fast, a documented gap) raised it to 8.1% over 42; this bound
    # keeps it from growing unnoticed until the issue's work meets the target. 2026-12-05, thirty-fourth session: 7.8%
    # over 72 rows with Megatron-Bridge 26.06's 18 MoE rows (held out, predicted once; 6.6% over the 55 before), one
    # 25.11 Llama-3.1-405B row relabelled fitted after its recipe's 16-bit gradient reduction was read.
    assert stats["training_step", "held_out"]["median_abs"] <= 0.085


def test_held_out_lora_step_error_does_not_grow(stats):
    # Issue #20's 7% applied to fine-tuning steps, kept open: 11.3% over 25 rows at the thirty-third session's start, 7.8%
    # over 59 with its 34 MLPerf rows; then seven rows that prompted sequence parallelism's FP8 all-gathers were
    # relabelled fitted, leaving 52 whose median was 6.4% before that change as after it (one of them moved). The
    # thirty-fourth session ran NeMo's packed SQuAD samples (published_lora.json _meta.squad_packing_rule) and relabelled
    # every row it moved (twelve; six Llama-3-8B rows had prompted it); then added NeMo 24.07's three LoRA rows and NeMo
    # AutoModel's eleven, each by a rule fixed before predicting (AutoModel's one row with dropout relabelled after its
    # dropout_position was written): 53 rows. The issue's "80% within 12%" is missed. This bound keeps the median
    # from growing unnoticed.
    assert stats["lora_time", "held_out"]["median_abs"] <= 0.07


def test_held_out_training_rows_without_a_gap_and_with_one_are_guarded_apart(rows):
    # The 0.085 above mixes two groups; each has its own bound so neither can drift behind the other. 2026-12-02,
    # twelfth session: 24 rows without a documented gap, median 4.5%, worst 13.8%; 18 with one, small models and MoE,
    # all fast, -4% to -42%. Thirteenth session, with the activation kernel and the loss costed (every dense row 1-4%
    # slower) and four small-model rows added: 28 rows without a gap, median 6.1% (the 24 alone 5.8%), worst 10.2%.
    # 2026-12-04, with llm-foundry's Triton FlashAttention at its published rate: 34 rows without a gap, median 6.0%,
    # worst 10.3%; 12 with one, MoE and four of llm-foundry's rows, -38% to -1%, and MPT-70B on A100 +13% (the one
    # slow gap: its attention is 2% of its FLOPs; docs/validation.md).
    # 2026-12-05: three held-out Megatron-Bridge 26.06 Llama-3.1-405B rows (GB200, H100; GB300's two are fitted): 2
    # without a gap (+7.7%, +11.9%), 1 with a slow one of its own (FP8 current scaling, +16.5%), bounded apart.
    held = [r for r in rows if r["quantity"] == "training_step" and r["role"] == "held_out"]
    plain = sorted(abs(r["error"]) for r in held if not r.get("gap"))
    assert plain[len(plain) // 2] <= 0.065 and plain[-1] <= 0.15, plain
    current_scaling = [r for r in held if r.get("gap") and r["gap"].startswith("FP8 current scaling against MXFP8")]
    assert len(current_scaling) == 1 and all(0.10 <= r["error"] <= 0.30 for r in current_scaling), current_scaling
    gaps = [r for r in held if r.get("gap") and r not in current_scaling]
    assert all(-0.45 <= r["error"] <= 0.15 for r in gaps), [(r["label"], r["error"]) for r in gaps]
    assert sum(r["error"] > 0 for r in gaps) <= 1, [(r["label"], r["error"]) for r in gaps]



def test_speculative_speedups_of_held_out_batches_stay_near_the_published(stats):
    # Not an issue #18 target (it sets none for speed-ups): capplan's own bound, so the comparison can fail.
    # Today +20% median, always above the published speed-up (docs/validation.md).
    assert stats["speculative_speedup", "held_out"]["median_abs"] <= 0.25


def _known_gaps():
    # Rows of tests/data/published_serving.json carry their documented cause as "known_gap".
    serving = json.loads(report.SERVING.read_text())
    return {f"published_serving {kind}[{n}]" for kind in ("static_batch", "speculative", "prefix_cache", "new_model_saturated",
                                                             "vllm_offline_saturated")
            for n, row in enumerate(serving[kind]) if row.get("known_gap")} | {
        f"published_serving disaggregated_pools[{n}]" for n, row in enumerate(serving["disaggregated_pools"])
        if row.get("known_gap")} | {
        f"published_training[{n}]" for n, row in enumerate(json.loads(report.TRAINING.read_text())["rows"])
        if row.get("known_gap")} | {
        f"published_lora[{n}]" for n, row in enumerate(json.loads(report.LORA.read_text())["rows"])
        if row.get("known_gap")} | {
        f"saturated_throughput.tables[{n}] {shape}" for n, table in enumerate(_DATA["saturated_throughput"]["tables"])
        for shape in table["output_tokens_per_s"] if table.get("known_gap")}


def test_amds_mi300x_vllm_rows_stay_where_they_were_first_predicted(rows):
    # Held out with a documented gap (capplan fast on decode at 1,500-3,200 sequences): first predicted +11% to +48%
    # (tests/data/published_serving.json vllm_offline_saturated). The gap excuses them from the 35% rule, not from
    # drifting: a change that moves them further, or past the published, fails here.
    amd = [r["error"] for r in rows if r["id"].startswith("published_serving vllm_offline_saturated")]
    assert len(amd) == 4 and all(0.0 <= e <= 0.55 for e in amd), amd


def test_held_out_rows_beyond_35_percent_have_a_documented_cause(rows):
    beyond = {f"{r['id']} {r['quantity']}": r["error"] for r in rows
              if r["role"] == "held_out" and abs(r["error"]) > report.ROW_LIMIT}
    gaps = _known_gaps()
    assert not {k for k in beyond if k not in DOCUMENTED_CAUSES and k.rsplit(" ", 1)[0] not in gaps}, beyond


def test_engine_allreduce_kernels_held_out_times_stay_near_the_published(stats):
    # capplan's own bound (the issue sets none for kernel times): the formulas of analysis/engine_allreduce.hpp
    # with two fitted fixed costs against the held-out sizes and group sizes; today 6.7% median, worst -25%.
    s = stats["engine_allreduce", "held_out"]
    assert s["count"] >= 30 and s["median_abs"] <= 0.12, s
    assert abs(s["worst"]) <= 0.30, s
    assert stats["engine_allreduce", "fitted"]["median_abs"] <= 0.01


def test_prefix_cache_rows_with_the_engine_as_the_bottleneck_match(rows):
    # vLLM PR #9668 (L40S, 49% hits, 1.80x) is a prefill-bound burst: capplan's ratio must be within 5%; the
    # no-hit row within the engine's 1.8% bookkeeping. The Qwen2.5-0.5B rows carry their documented gap.
    by_id = {r["id"]: r for r in rows if r["quantity"] == "prefix_cache"}
    assert abs(by_id["published_serving prefix_cache[0]"]["error"]) <= 0.05
    assert abs(by_id["published_serving prefix_cache[1]"]["error"]) <= 0.02
    assert by_id["published_serving prefix_cache[1]"]["modelled"] == 1.0  # no hits: nothing changes
