"""Typed calls (issue #23 items 0 and 1): capplan.Scenario read once and estimated without JSON text, results kept
typed until read, and sweeps whose figures come back as columns from the core. Each is checked against the JSON path
it replaces: the same figures, key for key."""
import math
import pickle
import sys
import warnings

import pytest

import capplan
from capplan._progress import StoppedWarning

pandas = pytest.importorskip("pandas")

STATIC = {"model": "Llama-3.1-8B", "system": "HGX-H100",
          "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 8}}
SERVING = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
           "inference": {"input_tokens": 500, "output_tokens": 16, "concurrency": 4, "workload": {"requests": 40}}}
TRAINING = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16, "storage": "parallelfs"},
            "training": {"seq_len": 4096, "global_batch": 256, "tokens": 1e11}, "cost": {}}


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if a is None and isinstance(b, float) and math.isnan(b) or b is None and isinstance(a, float) and math.isnan(a):
        return True
    return a == b


def assert_same_figures(columnar, full):
    """Every column the columnar sweep has is in the full sweep's rows, with the same value in every row."""
    assert len(columnar) == len(full)
    for key in columnar.columns:
        if key in ("error",) and key not in full:
            assert columnar[key].isna().all()
            continue
        assert key in full.columns, key
        for i, (a, b) in enumerate(zip(columnar[key].tolist(), full[key].tolist())):
            assert same(a, b), (key, i, a, b)


@pytest.mark.parametrize("scenario, grid", [
    # tp 3 cannot split 8 GPUs (an error); 100k-token prompts at batch 64 do not fit (infeasible, speed blanked).
    (STATIC, {"parallelism.tp": [1, 3, 8], "inference.batch": [1, 64], "inference.input_tokens": [1000, 100000]}),
    (SERVING, {"inference.concurrency": [1, 4, 16], "inference.output_tokens": [8, 16]}),
    (TRAINING, {"parallelism.tp": [1, 2, 4], "training.micro_batch": [1, 2]}),
    # No error, plans that fit and one that does not (the core leaves feasible unset where nothing is against it).
    (STATIC, {"inference.batch": [1, 64], "inference.input_tokens": [1000, 100000]}),
], ids=["static-batch", "serving", "training", "static-batch-mixed"])
def test_a_columnar_sweep_gives_the_full_sweeps_figures(scenario, grid):
    full = capplan.sweep(scenario, grid, progress=False)
    columnar = capplan.sweep(scenario, grid, progress=False, columns="all")
    assert_same_figures(columnar, full)
    assert columnar["feasible"].dtype == full["feasible"].dtype
    assert list(columnar.columns[:len(grid) + 2]) == list(grid) + ["feasible", "reasons"]
    assert list(columnar.columns[-2:]) == ["capplan_version", "catalog_version"]
    # Only figures: no lists, names or notes.
    assert "notes" not in columnar and "training.breakdown" not in columnar and "model.name" not in columnar
    if "error" in full:
        assert columnar["error"].tolist() == full["error"].where(full["error"].notna(), None).tolist()


def test_asked_columns_come_alone_and_in_order_with_the_inputs_echoed():
    grid = {"system.count": [1, 8], "inference.batch": [1, 16, 64]}
    t = capplan.sweep(STATIC, grid, progress=False, columns=["inference.tpot_s", "memory.fits", "inference.batch"])
    assert list(t.columns) == ["system.count", "inference.batch", "feasible", "reasons", "inference.tpot_s",
                               "memory.fits", "result.inference.batch", "capplan_version", "catalog_version"]
    assert t["system.count"].tolist() == [1, 1, 1, 8, 8, 8]  # the last key varies fastest
    assert t["inference.batch"].tolist() == [1, 16, 64] * 2
    assert t["result.inference.batch"].tolist() == [1, 16, 64] * 2
    one = capplan.estimate(dict(STATIC, system={"preset": "HGX-H100", "count": 8}, inference=dict(STATIC["inference"], batch=64)))
    assert t["inference.tpot_s"].iloc[5] == one.to_dict()["inference"]["tpot_s"]
    assert t["memory.fits"].dtype == bool


@pytest.mark.parametrize("columns, field", [("some", "/columns"), ([], "/columns"), (5, "/columns"),
                                            (["inference.ttft"], "/columns/0"), ([1], "/columns/0"),
                                            (["inference.ttft_s", "inference.ttft_s"], "/columns/1: asked for twice")])
def test_bad_columns_name_their_field(columns, field):
    with pytest.raises(capplan.ConfigError, match=field):
        capplan.sweep(STATIC, {"inference.batch": [1]}, progress=False, columns=columns)


def test_without_pandas_or_numpy_the_columns_are_lists(monkeypatch):
    grid = {"parallelism.tp": [1, 3], "inference.batch": [1, 64]}
    with_numpy = capplan.sweep(STATIC, grid, progress=False, columns="all")
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "numpy", None)
    plain = capplan.sweep(STATIC, grid, progress=False, columns="all")
    assert isinstance(plain, dict) and all(isinstance(v, list) for v in plain.values())
    assert list(plain) == list(with_numpy.columns)
    for key, values in plain.items():
        for a, b in zip(values, with_numpy[key].tolist()):
            assert same(a, b), key


def test_ctrl_c_keeps_the_points_done(monkeypatch):
    from test_progress import ctrl_c_when
    grid = {"training.global_batch": [8 * b for b in range(1, 4097)]}  # a few seconds on one core
    base = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
            "training": {"seq_len": 4096, "global_batch": 64, "zero": 3}}  # fits: every point has a step time
    with ctrl_c_when(monkeypatch, lambda p: p.done() >= 64), pytest.warns(StoppedWarning, match=r"of 4096 points"):
        part = capplan.sweep(base, grid, workers=1, columns=["training.step_time_s"])
    assert 64 <= len(part) < 4096 and len(part) % 64 == 0
    assert part["training.global_batch"].tolist() == grid["training.global_batch"][:len(part)]
    assert part["training.step_time_s"].notna().all()


def test_a_scenario_read_once_estimates_as_its_dict_does():
    s = capplan.Scenario(TRAINING)
    assert capplan.estimate(s).to_dict() == capplan.estimate(TRAINING).to_dict()
    assert capplan.Scenario(s).to_dict() == s.to_dict() == capplan.Scenario(repr_free(TRAINING)).to_dict()
    wider = s.replace({"system.count": 32, "training.micro_batch": 2, "training.tokens": None})
    direct = dict(TRAINING, system=dict(TRAINING["system"], count=32), training=dict(TRAINING["training"], micro_batch=2))
    assert capplan.estimate(wider).to_dict() == capplan.estimate(direct).to_dict()
    assert s.to_dict()["system"]["count"] == 16  # a variant leaves its origin as it was
    preset = capplan.Scenario(STATIC).replace({"system.count": 4})
    assert preset.to_dict()["system"] == {"preset": "HGX-H100", "count": 4}
    # A variant whose change reaches the model (or the system) reads that section again; the other is kept.
    other = s.replace({"model": "Mistral-7B"})
    assert capplan.estimate(other).to_dict() == capplan.estimate(dict(TRAINING, model="Mistral-7B")).to_dict()
    assert capplan.estimate(other.replace({"model": TRAINING["model"]})).to_dict() == capplan.estimate(s).to_dict()


def repr_free(d):
    import json
    return json.dumps(d)  # JSON text makes the same scenario


@pytest.mark.parametrize("make, field", [
    (lambda: capplan.Scenario({"model": "Llama-3.1-8B"}), "/system"),
    (lambda: capplan.Scenario(STATIC).replace({"parallelism.tp": 3}), "/parallelism"),
    (lambda: capplan.Scenario(STATIC).replace({"inference.batch": 0}), "/inference/batch"),
    (lambda: capplan.Scenario(STATIC).replace(["inference.batch"]), "/changes"),
    (lambda: capplan.Scenario(STATIC).replace({1: 2}), "/changes"),
    (lambda: capplan.Scenario(STATIC).replace({"inference.batch": float("nan")}), "/inference.batch: not a finite number"),
    (lambda: capplan.Scenario(dict(STATIC, inference=dict(STATIC["inference"], batch=float("inf")))),
     "/inference/batch: not a finite number"),
    (lambda: capplan.Scenario(3), "/"),
])
def test_a_scenario_with_bad_input_is_a_config_error_naming_the_field(make, field):
    with pytest.raises(capplan.ConfigError, match=field):
        make()


def test_a_typed_result_reads_one_figure_without_its_dict_and_pickles_as_the_dict():
    r = capplan.estimate(capplan.Scenario(STATIC))
    assert "_dict" not in r.__dict__  # nothing built yet
    assert r.value("inference.ttft_s") == pytest.approx(r.inference.ttft_s.si, rel=0)
    assert r.value("memory.fits") is True and r.value("inference.batch") == 8
    assert r.value("inference.method") == "roofline"
    assert r.value("training.mfu") is None  # not a training scenario
    with pytest.raises(capplan.ConfigError, match="/key"):
        r.value("inference.ttft")
    with pytest.raises(capplan.ConfigError, match="/key"):
        r.value(3)
    back = pickle.loads(pickle.dumps(r))
    assert back.to_dict() == r.to_dict()
    assert back.value("inference.ttft_s") == r.value("inference.ttft_s")  # a dict-made result reads the same keys
    with pytest.raises(capplan.ConfigError, match="/key"):
        back.value("nope")


@pytest.mark.parametrize("scenario", [STATIC, TRAINING, SERVING], ids=["static-batch", "training", "serving"])
def test_every_figure_of_a_typed_result_is_its_dicts(scenario):
    # A static batch or a training step is estimated in part first (its headline figures); reading a figure of
    # another part (max_batch, the cold start, the checkpoint, FLOPs, cost) completes it. Each read on a fresh result.
    whole = capplan.result.flatten(capplan.estimate(scenario).to_dict())
    parsed = capplan.Scenario(scenario)
    for key, _ in capplan._core.result_column_keys():
        got = capplan.estimate(parsed).value(key)
        assert same(got, whole.get(key)), key


def test_plans_that_cannot_run_are_blanked_whatever_the_columns():
    # Feasibility comes from the core even when not asked for; a grid where no plan fits blanks every speed.
    grid = {"inference.batch": [1, 64], "inference.input_tokens": [1000, 100000]}
    full = capplan.sweep(STATIC, grid, progress=False)
    few = capplan.sweep(STATIC, grid, progress=False, columns=["inference.ttft_s"])
    assert few["feasible"].tolist() == full["feasible"].tolist() == [True, True, True, False]
    assert few["inference.ttft_s"].iloc[:3].tolist() == full["inference.ttft_s"].iloc[:3].tolist()
    assert math.isnan(few["inference.ttft_s"].iloc[3])
    none_fit = capplan.sweep(STATIC, {"inference.batch": [64, 128], "inference.input_tokens": [100000]},
                             progress=False, columns="all")
    assert none_fit["feasible"].tolist() == [False, False]
    assert none_fit["inference.ttft_s"].isna().all() and none_fit["inference.tpot_s"].isna().all()
    assert none_fit["memory.per_device_bytes"].notna().all()  # memory is not a speed: kept


@pytest.mark.parametrize("grid, field", [
    ({"inference.batch": [float("nan"), 2]}, "/grid/inference.batch: not a finite number"),
    ({"inference.batch": []}, "/grid/inference.batch: no values"),
    ({"": [1]}, "/grid: a key with an empty part"),
    ({"inference..batch": [1]}, "/grid: a key with an empty part"),
])
@pytest.mark.parametrize("columns", [None, "all"])
def test_both_sweeps_refuse_a_bad_grid_alike(grid, field, columns):
    with pytest.raises(capplan.ConfigError, match=field):
        capplan.sweep(STATIC, grid, progress=False, columns=columns)


def test_a_nan_cell_in_a_batch_is_that_rows_error():
    from capplan.batch import run_rows
    rows = run_rows([{"inference.batch": 2}, {"inference.batch": float("nan")}], base=STATIC)
    assert "error" not in rows[0]
    assert rows[1]["error"].startswith("/inference/batch: not a finite number")


def test_a_scenario_sweeps_pickles_and_copies():
    import copy
    s = capplan.Scenario(STATIC)
    for twin in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), copy.copy(s)):
        assert twin.to_dict() == s.to_dict()
        assert capplan.estimate(twin).to_dict() == capplan.estimate(s).to_dict()
    grid = {"inference.batch": [1, 8]}
    assert capplan.sweep(s, grid, progress=False, columns="all").equals(
        capplan.sweep(STATIC, grid, progress=False, columns="all"))
    with pytest.raises(capplan.ConfigError, match="/: a int is not a result"):
        capplan.Result(3)
    assert not hasattr(capplan.Result({"memory": {}}), "_anything")


def test_threads_sharing_one_lazy_result_each_read_the_whole_answer():
    import threading
    r = capplan.estimate(capplan.Scenario(TRAINING))  # in part: reads of the cold start and checkpoint complete it
    expected = capplan.result.flatten(capplan.estimate(TRAINING).to_dict())
    keys = ["cold_start.total_s", "checkpoint.save_s", "training.mfu", "cost.per_run.own_usd", "flops.model_step_flops"]
    start, seen, errors = threading.Barrier(8), [], []

    def read(k):
        try:
            start.wait()
            seen.append((k, r.value(k)) if k != "dict" else ("dict", r.to_dict()))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=read, args=(keys[i % len(keys)] if i < 7 else "dict",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, v in seen:
        if k == "dict":
            assert capplan.result.flatten(v) == expected
        else:
            assert same(v, expected.get(k)), k


def test_a_dict_walked_by_the_core_is_the_scenario_its_json_text_is():
    # capplan.estimate(dict) no longer writes JSON text: the core walks the dict, and hands what is not plain JSON
    # data (Quantity, Model, numpy values) back to capplan.api._jsonable. The same scenario, the same result.
    import json
    import numpy as np
    from capplan.api import _jsonable
    cases = [
        dict(STATIC, system={"accelerator": "H100-SXM", "count": np.int64(2)},
             inference={"input_tokens": np.int32(100), "output_tokens": 20, "batch": 2,
                        "memory_utilization": np.float64(0.85), "runtime_reserve": capplan.Quantity("2 GiB")}),
        dict(TRAINING, model=capplan.model("Llama-3.1-8B")),
        {"model": "Llama-3.1-8B", "system": "HGX-H100", "precision": {"weights": "fp8"},
         "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": [8][0]}},
    ]
    for c in cases:
        text = json.dumps(_jsonable(c))
        assert capplan.Scenario(c).to_dict() == json.loads(text)
        assert capplan.estimate(c).to_dict() == capplan._core.estimate_object(text, ".")


@pytest.mark.parametrize("value, error, field", [
    (float("nan"), capplan.ConfigError, "/inference/batch: not a finite number"),
    (2 ** 70, capplan.ConfigError, "/inference/batch: must be at most"),
    ("\ud800", capplan.JsonError, "/inference/batch"),
    ({1: 2}, capplan.ConfigError, "/inference/batch: a int key is not text"),
    ({(1, 2): 2}, capplan.ConfigError, "/inference/batch: a tuple key is not text"),
    (object(), capplan.ConfigError, "/inference/batch: a object is not a scenario value"),
])
def test_a_dict_value_no_scenario_holds_is_an_error_naming_it(value, error, field):
    bad = dict(STATIC, inference=dict(STATIC["inference"], batch=value))
    with pytest.raises(error, match=field.replace("(", r"\(")):
        capplan.estimate(bad)
