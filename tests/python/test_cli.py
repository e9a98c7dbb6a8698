"""The `capplan` console script: estimate, list, show; bad input exits 2 with one line."""
import csv
import io
import json
import subprocess
import sys

import pytest


def test_estimate_default_table(run_cli):
    code, out, err = run_cli("estimate")
    assert code == 0, err
    assert "built-in default scenario" in out
    assert "Llama-3.1-70B" in out and "17.64 GB" in out  # 141.1 GB bf16 weights / tp 8, norms replicated


def test_estimate_file_json_and_csv(run_cli, tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"model": "Qwen2.5-7B", "system": {"accelerator": "L40S"}}))
    code, out, _ = run_cli("estimate", str(f), "--format", "json")
    assert code == 0
    d = json.loads(out)
    # Qwen2.5 model card: 7.61B parameters
    assert d["model"]["parameters"] == pytest.approx(7.61e9, rel=0.02)
    code, out, _ = run_cli("estimate", str(f), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1 and int(rows[0]["model.parameters"]) == d["model"]["parameters"]
    code, out, _ = run_cli("estimate", "-", "--format", "json", stdin=f.read_text())
    assert json.loads(out) == d


@pytest.mark.parametrize("kind,name", [("models", "DeepSeek-V3"), ("accelerators", "MI300X"),
                                       ("systems", "GB200-NVL72"), ("storage", "ObjectStore-S3"),
                                       ("links", "PCIe-Gen5")])
def test_list(run_cli, kind, name):
    code, out, _ = run_cli("list", kind)
    assert code == 0 and name in out
    code, out, _ = run_cli("list", kind, "--format", "json")
    assert name in json.loads(out)


def test_show(run_cli):
    code, out, _ = run_cli("show", "H100")
    assert code == 0 and "H100-SXM" in out and "source" in out
    code, out, _ = run_cli("show", "Mixtral-8x7B", "--format", "json")
    assert json.loads(out)["config"]["num_local_experts"] == 8
    # Readable: quantities auto-scaled (the entry writes "56000 MB/s"), missing figures said, lines wrapped at 100
    # columns (a word longer than that, such as a URL, stays whole).
    code, out, _ = run_cli("show", "NVMe-Gen4-8x")
    assert code == 0 and "  read_bandwidth: 56 GB/s\n" in out and "  latency: not given\n" in out
    assert all(len(line) <= 100 or " " not in line.strip() for line in out.splitlines())
    # Objects a field a line under their key, so a price's source and date read as such; a list of offers an item a line.
    code, out, _ = run_cli("show", "IB-NDR")
    assert code == 0 and "\n  fabric:\n    switch:\n      model: NVIDIA Quantum-2 QM9700" in out
    assert "\n      price:\n        usd: [36000, 50000]\n        kind: estimate\n" in out and "\n        date: 2024-08\n" in out
    assert all(len(line) <= 100 or " " not in line.strip() for line in out.splitlines())
    code, out, _ = run_cli("show", "DGX-H100")
    assert "\n  cloud:\n    - provider: Lambda; instance: gpu_8x_h100_sxm5; commitment: on_demand; usd_per_hour: 23.92;" in out


@pytest.mark.parametrize("args,stdin,needle", [
    (["show", "H1000"], None, "unknown entry 'H1000'; did you mean"),
    (["estimate", "no-such-file.json"], None, "scenario file not found"),
    (["estimate", "-"], '{"model": "Llama-3.1-8B", "system": {"accelerator": "H100"}', "malformed JSON"),
    (["estimate", "-"], '{"model": "Lama", "system": {"accelerator": "H100"}}', "/model: unknown model 'Lama'"),
    (["estimate", "-"], '{"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": -1}}', "/system/count"),
    (["estimate", "-"], '{"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic", "memory": '
                        '{"capacity": "80 GX", "bandwidth": null}, "peak_dense_flops": {"bf16": null}}}}', "'GX'"),
    (["estimate", "-"], '{"model": "Llama-3.1-8B"}', "/system: required field is missing"),
    (["estimate", "-"], '{"model": "Llama-3.1-8B", "system": {"accelerator": "H100"}, "x": 1}', "/x: unknown key"),
    (["list", "gpus"], None, "invalid choice"),
    (["frobnicate"], None, "invalid choice"),
])
def test_bad_input_exits_2_with_one_line(run_cli, args, stdin, needle):
    code, out, err = run_cli(*args, stdin=stdin)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and needle in lines[0]


def test_python_dash_m():
    p = subprocess.run([sys.executable, "-m", "capplan", "list", "systems", "--format", "json"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "HGX-H200" in json.loads(p.stdout)


def test_broken_catalog_is_one_line_exit_2(tmp_path):
    import os
    exe = os.path.join(os.path.dirname(sys.executable), "capplan")
    (tmp_path / "accelerators").mkdir()
    (tmp_path / "accelerators" / "x.json").write_text('{"name": "X", "oops": ')
    for catalog, needle in ((tmp_path, "malformed JSON"), (tmp_path / "missing", "catalog folder not found")):
        p = subprocess.run([exe, "list", "accelerators"], capture_output=True, text=True,
                           env={**os.environ, "CAPPLAN_CATALOG": str(catalog)})
        assert p.returncode == 2, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr


def test_counts_beyond_an_int_are_one_line_errors_not_a_crash(run_cli):
    # count 2^32 used to end the process with SIGFPE (exit 136), and so did --nodes-of 2^32.
    scenario = ('{"model":"Llama-3.1-70B","system":{"preset":"HGX-H200","count":4294967296},'
                '"inference":{"input_tokens":2000,"output_tokens":500,"concurrency":50}}')
    code, out, err = run_cli("estimate", "-", stdin=scenario)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "/system/count" in err and "at most 1048576" in err
    code, _, err = run_cli("collective", "all_reduce", "--system", "DGX-H100", "--nodes-of", "4294967296", "--size", "1GiB")
    assert code == 2 and "--nodes-of: 4294967296 is out of range" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra,flag", [(["--count", "0"], "--count"), (["--top", "-1"], "--top"),
                                        (["--price", "B200=2"], "--price"), (["--price", "cheap"], "--price")])
def test_size_training_refuses_what_it_would_ignore(run_cli, extra, flag):
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", *extra)
    assert code == 2 and out == "" and flag in err and len(err.strip().splitlines()) == 1


def test_a_layout_search_worker_error_is_one_line_not_a_terminate(run_cli):
    # Reported: std::terminate (the layout search's worker threads did not hand their exception on).
    code, _, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "L40S-PCIe-Server", "--count", "16",
                           "--seq-len", "4096", "--global-batch", "64")
    assert code == 2 and "/system/scale_out" in err and len(err.strip().splitlines()) == 1


def test_a_scenario_file_that_is_not_utf8_is_one_line(run_cli, tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"model": "Llama-3.1-8B \xe9"}')
    code, _, err = run_cli("estimate", str(bad))
    assert code == 2 and "not UTF-8" in err and len(err.strip().splitlines()) == 1


def test_ten_million_users_is_a_prompt_error_not_a_hang(run_cli):
    # Reported: minutes of simulation and 9 GB before any answer.
    scenario = ('{"model":"Llama-3.1-8B","system":{"preset":"HGX-H200"},'
                '"inference":{"input_tokens":1000,"output_tokens":500,"concurrency":10000000}}')
    code, _, err = run_cli("estimate", "-", stdin=scenario)
    assert code == 2 and "/inference/concurrency" in err and "budget" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["collective", "all_reduce", "--system", "DGX-H100", "--gpus", "99999999999999999999", "--size", "1GiB"],
                                  ["calibrate", "--backend", "cpu", "--model", "Llama-3.2-1B", "--layer-tokens", "99999999999999999999"],
                                  ["size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "4294967296", "--input", "10",
                                   "--output", "10"],
                                  ["size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", "--seq-len", "x"]])
def test_cli_integers_out_of_range_are_usage_errors_not_tracebacks(run_cli, args):
    code, out, err = run_cli(*args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("text,problem", [("[" * 100000 + "]" * 100000, "nested deeper than 256"),
                                          ('{"model": "Llama-3.1-8B", "inference": {"input_tokens": 1e400}}', "number overflow"),
                                          ('{"model": "' + "x" * 5000 + '"}', "unknown model")])
def test_hostile_scenarios_are_one_line_errors(run_cli, text, problem):
    # Reported: a segmentation fault (deep nesting) and two tracebacks.
    code, out, err = run_cli("estimate", "-", stdin=text)
    assert code == 2 and out == "" and problem in err and len(err.strip().splitlines()) == 1


def test_size_engine_out_of_its_choices_is_one_usage_line(run_cli):
    code, _, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "8", "--input", "100",
                           "--output", "100", "--engine", "tgi")
    assert code == 2 and "--engine" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2


_BAD_NEW_FIELDS = [  # each new field of issue #20's MoE and fabric work, a bad value, the field the error must name
    ({"system": {"preset": "DGX-H100", "count": 64, "scale_out": {"pod_nodes": 0}}}, "/system/scale_out/pod_nodes"),
    ({"system": {"preset": "DGX-H100", "count": 64, "scale_out": {"pod_nodes": 2.5}}}, "/system/scale_out/pod_nodes"),
    ({"system": {"preset": "DGX-H100", "count": 64, "scale_out": {"pod_nodes": 4294967296}}}, "/system/scale_out/pod_nodes"),
    ({"parallelism": {"rank_order": "pp-dp"}}, "/parallelism/rank_order"),
    ({"parallelism": {"pp": 3, "pipeline_schedule": "dualpipe"}}, "/parallelism/pipeline_schedule"),
    ({"training": {"overlap_param_gather": "yes"}}, "/training/overlap_param_gather"),
    ({"training": {"overlap_grad_reduce": 0}}, "/training/overlap_grad_reduce"),
    ({"training": {"grad_reduce_in_fp32": "no"}}, "/training/grad_reduce_in_fp32"),
    ({"training": {"mtp_layers": -1}}, "/training/mtp_layers"),
    ({"training": {"mtp_layers": 1e12}}, "/training/mtp_layers"),
    ({"training": {"recompute_modules": "mlp"}}, "/training/recompute_modules"),
    ({"training": {"recompute_modules": ["mla_up_proj"]}}, "/training/recompute_modules"),
    ({"training": {"moe_dispatcher": "nccl"}}, "/training/moe_dispatcher"),
    ({"training": {"cross_entropy": "liger"}}, "/training/cross_entropy"),
    ({"training": {"cross_entropy": True}}, "/training/cross_entropy"),
]


@pytest.mark.parametrize("change,field", _BAD_NEW_FIELDS, ids=[f for _, f in _BAD_NEW_FIELDS])
def test_bad_values_of_the_new_training_and_fabric_fields_end_in_one_line_and_exit_2(run_cli, tmp_path, change, field):
    scenario = {"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
                "parallelism": {"tp": 8}, "training": {"seq_len": 4096, "global_batch": 64}}
    for key, value in change.items():
        scenario[key] = {**scenario[key], **value}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(scenario))
    code, out, err = run_cli("estimate", str(f))
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err


_BAD_TIMES = [  # times the serving simulation adds to its clock: bounded where read (docs/scenario.md)
    ({"engine_overhead": {"step": "1e308 s"}}, "/inference/engine_overhead/step"),
    ({"engine_overhead": {"prefill_kernel": "11 s"}}, "/inference/engine_overhead/prefill_kernel"),
    ({"workload": {"think_time": "1e308 s"}}, "/inference/workload/think_time"),
    ({"workload": {"turnaround": "2e6 s"}}, "/inference/workload/turnaround"),
]


@pytest.mark.parametrize("change,field", _BAD_TIMES, ids=[f for _, f in _BAD_TIMES])
def test_simulation_times_beyond_their_bounds_end_in_one_line_and_exit_2(run_cli, tmp_path, change, field):
    scenario = {"model": "Llama-3.2-1B", "system": {"preset": "DGX-H100", "count": 1},
                "inference": {"input_tokens": 500, "output_tokens": 50, "concurrency": 4, **change}}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(scenario))
    code, out, err = run_cli("estimate", str(f))
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err


def test_size_training_price_out_of_range_is_one_line(run_cli):
    for price in ("-1", "nan", "inf"):
        code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--count", "8", "--price", price)
        assert code == 2 and out == "" and "--price" in err and len(err.strip().splitlines()) == 1, (price, err)
