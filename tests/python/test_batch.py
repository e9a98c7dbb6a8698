"""Sweeps and the batch CLI for spreadsheets."""
import csv
import json
import math
import sys
import time

import pytest

import capplan
from capplan.batch import read_table, run_rows, write_table


def test_sweep_grid_rows_inputs_and_results():
    rows = capplan.sweep({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
                          "inference": {"input_tokens": 1000, "output_tokens": 200}},
                         {"system.count": [1, 2], "inference.batch": [1, 8, 64]})
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert len(rows) == 6
    first = rows[0]
    assert first["system.count"] == 1 and first["inference.batch"] == 1
    assert first["model.parameters"] == 8_030_261_248
    assert "memory.per_device_bytes" in first and "capplan_version" in first and "catalog_version" in first
    # more requests never need less memory
    by_count = [r for r in rows if r["system.count"] == 1]
    mems = [r["memory.per_device_bytes"] for r in sorted(by_count, key=lambda r: r["inference.batch"])]
    assert mems == sorted(mems)


def test_batch_1000_rows_with_10_bad_in_under_5_s(tmp_path, run_cli):
    path = tmp_path / "scenarios.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "system.accelerator", "system.count", "parallelism.tp", "inference.input_tokens",
                    "inference.output_tokens", "inference.batch"])
        for i in range(1000):
            accel = "H1000" if i % 100 == 7 else ["H100", "H200", "A100-80GB", "MI300X"][i % 4]
            w.writerow(["Llama-3.1-8B", accel, 2, 2, 500 + i, 100, 1 + i % 16])
    out = tmp_path / "results.csv"
    start = time.perf_counter()
    code, msg, err = run_cli("batch", str(path), "-o", str(out))
    elapsed = time.perf_counter() - start
    assert code == 0, err
    assert "990 results, 10 errors" in msg
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 1000
    bad = [r for r in rows if r["error"]]
    assert len(bad) == 10 and all("unknown accelerator 'H1000'" in r["error"] for r in bad)
    assert rows[0]["system.accelerator"] == "H100" and rows[0]["model.parameters"] == "8030261248"
    assert elapsed < 5.0, elapsed


def test_xlsx_round_trip(tmp_path):
    pytest.importorskip("openpyxl")
    rows = [{"model": "Qwen2.5-7B", "system.accelerator": "L40S", "inference.input_tokens": 100,
             "inference.output_tokens": 10, "inference.batch": 4}]
    src = tmp_path / "in.xlsx"
    write_table(rows, src)
    back = read_table(src)
    assert back[0]["system.accelerator"] == "L40S" and back[0]["inference.batch"] == 4
    out = run_rows(back)
    dst = tmp_path / "out.xlsx"
    write_table(out, dst)
    import openpyxl
    ws = openpyxl.load_workbook(dst).active
    header = [c.value for c in next(ws.iter_rows(max_row=1))]
    assert "memory.per_device_bytes" in header and "catalog_version" in header
    json_out = tmp_path / "out.json"
    write_table(out, json_out)
    assert json.loads(json_out.read_text())[0]["model.name"] == "Qwen2.5-7B"


def test_sweep_is_a_dataframe_with_pandas_and_a_list_without(monkeypatch):
    pandas = pytest.importorskip("pandas")  # capplan[notebook] and [test]
    base = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
            "inference": {"input_tokens": 1000, "output_tokens": 200}}
    df = capplan.sweep(base, {"inference.batch": [1, 8]})
    assert isinstance(df, pandas.DataFrame) and list(df["inference.batch"]) == [1, 8]
    assert "inference.tpot_s" in df.columns and "roofline.ops" not in df.columns  # per-op list stays in the JSON
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    rows = capplan.sweep(base, {"inference.batch": [1, 8]})
    assert isinstance(rows, list) and rows[1]["inference.tpot_s"] == df["inference.tpot_s"][1]


def test_long_sweep_shows_a_tqdm_progress_bar_and_keeps_every_point(capsys, monkeypatch):
    tqdm = pytest.importorskip("tqdm").tqdm  # capplan[notebook] and [test]
    import io
    import capplan.batch as batch
    base = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
            "inference": {"input_tokens": 1000, "output_tokens": 200}}
    grid = {"inference.batch": list(range(1, 41)), "inference.input_tokens": list(range(100, 3100, 100))}
    rows = capplan.sweep(base, grid)
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert len(rows) == 1200 and not any("error" in r for r in rows)
    assert capsys.readouterr().err == ""  # output is not a terminal: the bar stays quiet
    drawn = io.StringIO()  # a terminal's view: the same bar, drawn
    monkeypatch.setattr(batch, "progress_bar", lambda total, unit: tqdm(total=total, unit=unit, file=drawn))
    capplan.sweep(base, grid)
    assert "1200/1200" in drawn.getvalue()  # the bar reached the end


def test_interrupted_long_sweep_keeps_the_points_already_computed(monkeypatch):
    import capplan.batch as batch
    real, calls = batch._core.estimate_many_flat, []

    def interrupt_on_second_chunk(texts, base_dir, threads=0, skip=()):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C while the core computes the second chunk
        return real(texts, base_dir, threads, list(skip))

    monkeypatch.setattr(batch._core, "estimate_many_flat", interrupt_on_second_chunk)
    base = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
            "inference": {"input_tokens": 1000, "output_tokens": 200}}
    from capplan._progress import StoppedWarning
    with pytest.warns(StoppedWarning, match="256 of 1100 scenarios computed"):
        rows = capplan.sweep(base, {"inference.batch": list(range(1, 1101))})
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert calls == [256, 256] and len(rows) == 256 and rows[-1]["inference.batch"] == 256


def test_sweep_inference_blanks_the_speed_of_points_that_do_not_fit_unless_asked():
    base = {"model": "Llama-3.1-70B", "system": {"preset": "HGX-H100", "count": 8},
            "inference": {"input_tokens": 2000, "output_tokens": 200, "batch": 1}}
    grid = {"parallelism.tp": [1, 8]}  # 70B in bf16 (141 GB) cannot fit one 80 GB H100; tp 8 can
    blank = capplan.sweep_inference(base, grid)
    kept = capplan.sweep_inference(base, grid, infeasible_speed=True)
    as_rows = lambda c: c.to_dict("records") if hasattr(c, "to_dict") else [dict(zip(c, v)) for v in zip(*c.values())]
    (b1, b8), (k1, k8) = as_rows(blank), as_rows(kept)
    assert not b1["fits"] and b8["fits"]
    assert math.isnan(b1["output_tokens_per_s"]) and k1["output_tokens_per_s"] > 0
    assert b8["output_tokens_per_s"] == k8["output_tokens_per_s"] > 0
    with pytest.raises(capplan.ConfigError, match="/infeasible_speed"):
        capplan.sweep_inference(base, grid, infeasible_speed="no")


def test_sweep_inference_matches_estimate_and_names_bad_axes():
    base = {"model": "Llama-3.1-8B", "system": {"preset": "HGX-H200", "count": 8},
            "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 1}}
    grid = {"inference.input_tokens": [500, 8000, 120000], "inference.batch": [1, 64], "parallelism.tp": [1, 3, 8]}
    cols = capplan.sweep_inference(base, grid)
    rows = cols.to_dict("records") if hasattr(cols, "to_dict") else [dict(zip(cols, v)) for v in zip(*cols.values())]
    assert len(rows) == 3 * 2 * 3
    for row in rows:
        if row["parallelism.tp"] == 3:  # 3 does not divide the 8 GPUs: the point says why, the rest go on
            assert "does not divide" in row["error"] and not row["fits"]
            continue
        r = capplan.estimate({**base, "parallelism": {"tp": int(row["parallelism.tp"])},
                              "inference": {"input_tokens": int(row["inference.input_tokens"]), "output_tokens": 200,
                                            "batch": int(row["inference.batch"])}}).to_dict()
        assert bool(row["fits"]) == r["memory"]["fits"]
        assert row["per_device_bytes"] == pytest.approx(r["memory"]["per_device_bytes"], rel=1e-12)
        if not row["fits"]:  # a plan that cannot run has no speed (sorting cannot pick it)
            assert all(math.isnan(row[k]) for k in ("ttft_s", "tpot_s", "output_tokens_per_s"))
            continue
        assert row["ttft_s"] == pytest.approx(r["inference"]["ttft_s"], rel=1e-12)
        assert row["tpot_s"] == pytest.approx(r["inference"]["tpot_s"], rel=1e-12)
        assert row["output_tokens_per_s"] == pytest.approx(r["inference"]["throughput_tokens_per_s"], rel=1e-12)
    with pytest.raises(capplan.ConfigError, match=r"/grid/inference.batch: out of range \(got 0\)"):
        capplan.sweep_inference(base, {"inference.batch": [0]})
    # Any other key makes one scenario per value; a bad one says why on its points.
    cols = capplan.sweep_inference(base, {"system.count": [4, 8], "precision.kv_cache": ["bf16", "fp9"],
                                          "inference.batch": [8, 256]})
    rows = cols.to_dict("records") if hasattr(cols, "to_dict") else [dict(zip(cols, v)) for v in zip(*cols.values())]
    assert len(rows) == 8
    for row in rows:
        if row["precision.kv_cache"] == "fp9":
            assert "fp9" in row["error"] and not row["fits"]
            continue
        r = capplan.estimate({**base, "system": {"preset": "HGX-H200", "count": row["system.count"]},
                              "precision": {"kv_cache": row["precision.kv_cache"]},
                              "inference": {**base["inference"], "batch": int(row["inference.batch"])}}).to_dict()
        assert bool(row["fits"]) == r["memory"]["fits"] and row["error"] == ""
        assert row["tpot_s"] == pytest.approx(r["inference"]["tpot_s"], rel=1e-12)


def test_spreadsheet_csv_with_byte_order_mark_and_semicolons_is_read_and_said(tmp_path, run_cli):
    # Excel's "CSV UTF-8" starts with a byte-order mark; European locales separate with ';'.
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffmodel;system.accelerator;inference.input_tokens;inference.output_tokens\n"
                     "Llama-3.1-8B;H100;1000;100\nLlama-3.1-8B;H200;2000;100\n".encode("utf-8"))
    out = tmp_path / "out.csv"
    code, msg, err = run_cli("batch", str(path), "-o", str(out))
    assert code == 0 and "2 results, 0 errors" in msg
    assert "byte-order mark" in err and "';' separators" in err
    rows = list(csv.DictReader(open(out)))
    assert rows[0]["model"] == "Llama-3.1-8B" and rows[1]["inference.input_tokens"] == "2000"
    assert all(not r.get("error") for r in rows) and rows[0]["model.parameters"] == "8030261248"


@pytest.mark.parametrize("content,problem", [(b"", "is empty"), (b"model,system.accelerator\n", "no scenario rows"),
                                             (b"model\n\xff\xfe\n", "not UTF-8")])
def test_empty_header_only_or_non_utf8_input_is_an_error(tmp_path, run_cli, content, problem):
    path = tmp_path / "in.csv"
    path.write_bytes(content)
    code, _, err = run_cli("batch", str(path), "-o", str(tmp_path / "out.csv"))
    assert code == 2 and problem in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.csv").exists()


def test_unknown_output_extension_is_refused_before_any_work(tmp_path, run_cli):
    path = tmp_path / "in.csv"
    path.write_text("model,system.accelerator\nLlama-3.1-8B,H100\n")
    code, _, err = run_cli("batch", str(path), "-o", str(tmp_path / "out.pdf"))
    assert code == 2 and "/output" in err and ".xlsx" in err
    assert not (tmp_path / "out.pdf").exists()


def test_a_text_file_named_xlsx_is_an_error_and_xlsx_output_has_numbers_and_a_frozen_filtered_header(tmp_path, run_cli):
    openpyxl = pytest.importorskip("openpyxl")
    fake = tmp_path / "fake.xlsx"
    fake.write_text("model\nLlama-3.1-8B\n")
    code, _, err = run_cli("batch", str(fake))
    assert code == 2 and "not an XLSX workbook" in err and len(err.strip().splitlines()) == 1
    dst = tmp_path / "out.xlsx"
    write_table(run_rows([{"model": "Llama-3.1-8B", "system.accelerator": "H100", "inference.input_tokens": 1000,
                           "inference.output_tokens": 100, "inference.batch": 2}]), dst)
    ws = openpyxl.load_workbook(dst).active
    assert ws.freeze_panes == "A2" and ws.auto_filter.ref == ws.dimensions
    header = [c.value for c in ws[1]]
    assert isinstance(ws.cell(row=2, column=header.index("model.parameters") + 1).value, int)
    assert not list(tmp_path.glob(".*capplan-tmp"))  # written beside, then renamed


def test_infeasible_rows_lead_with_the_verdict_and_carry_no_speed_unless_asked(tmp_path, run_cli):
    # Llama-3.1-405B in bf16 is 811.7 GB of weights: it cannot fit one 24 GB L4; Llama-3.1-8B fits an H100.
    path = tmp_path / "in.csv"
    path.write_text("model,system.accelerator,system.count,inference.input_tokens,inference.output_tokens,inference.batch\n"
                    "Llama-3.1-405B,L4,1,1000,100,1\nLlama-3.1-8B,H100,1,1000,100,1\n")
    for extra, speed_kept in (([], False), (["--infeasible-speed"], True)):
        out = tmp_path / "out.csv"
        code, _, err = run_cli("batch", str(path), "-o", str(out), *extra)
        assert code == 0, err
        header = next(csv.reader(open(out)))
        assert header[6:8] == ["feasible", "reasons"]  # right after the six inputs
        bad, good = list(csv.DictReader(open(out)))
        assert bad["feasible"] == "False" and "811.7 GB" in bad["reasons"] and good["feasible"] == "True"
        assert float(good["inference.throughput_tokens_per_s"]) > 0 and float(good["inference.ttft_s"]) > 0
        assert bool(bad["inference.throughput_tokens_per_s"]) is speed_kept and bool(bad["inference.ttft_s"]) is speed_kept


def test_an_infeasible_estimate_table_leads_with_its_verdict():
    r = capplan.estimate({"model": "Llama-3.1-405B", "system": {"accelerator": "L4", "count": 1},
                          "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1}})
    first = repr(r).splitlines()[1]
    assert first.startswith("feasible") and "NO" in first
    ok = capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": 1},
                           "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1}})
    assert repr(ok).splitlines()[1].startswith("model")


def test_rows_read_from_the_core_without_json_text_equal_the_json_results_flattened():
    # The sweep's rows come from the core as flattened objects (no JSON text written or read per point); they must be
    # what the JSON result gives, flattened, key for key and in order, for every kind of result.
    import json as json_module
    import capplan.batch as batch
    from capplan import _core
    from capplan.result import flatten
    rows = [
        {"model": "Llama-3.1-70B", "system.preset": "HGX-H200", "parallelism.tp": 8, "inference.input_tokens": 2000,
         "inference.output_tokens": 500, "inference.batch": 50, "cost.site": "US-colocation"},
        {"model": "Llama-3.1-8B", "system.accelerator": "H100", "inference.input_tokens": 1000,
         "inference.output_tokens": 100, "inference.concurrency": 8},
        {"model": "Llama-3.1-405B", "system.accelerator": "L4", "inference.input_tokens": 1000,
         "inference.output_tokens": 100, "inference.batch": 1},  # does not fit: reasons, no speed
        {"model": "Llama-3.1-8B", "system.preset": "DGX-H100", "system.count": 16, "training.seq_len": 4096,
         "training.global_batch": 256, "training.zero": 1, "training.tokens": 1e11},
        {"model": "Llama-3.1-8B", "system.accelerator": "H100", "inference.input_tokens": 0},  # an error
    ]
    got = batch.run_rows(rows)
    for row, line in zip(rows, got):
        text = json_module.dumps(batch.scenario_from_row(row))
        try:
            result = json_module.loads(_core.estimate_json(text, "."))
        except capplan.Error as e:
            assert line["error"] == str(e)
            continue
        want = {k: v for k, v in row.items()}
        for key, value in batch._result_columns(flatten(result, skip=batch._NOT_TABULATED), False).items():
            want["result." + key if key in want else key] = value
        want.update(batch._versions())
        assert list(line) == list(want) and line == want
