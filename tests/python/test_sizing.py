"""Sizing to an SLO: the chosen layout meets the targets, and the ranking follows the prices."""
import json

import pytest

import capplan


def test_size_inference_meets_targets_and_ranks_by_cost():
    r = capplan.size_inference("Llama-3.1-8B", concurrency=32, input_tokens=1000, output_tokens=200,
                               ttft_p99="1 s", tpot_p99="40 ms", accelerators=["H100", "L40S", "A100-80GB"],
                               prices={"H100": 2.5, "L40S": 1.0, "A100-80GB": 1.6})
    assert r["options"], r
    costs = [o["cost_per_hour"] for o in r["options"]]
    assert costs == sorted(costs)
    for o in r["options"]:
        assert o["ttft_p99_s"] <= 1.0 and o["tpot_p99_s"] <= 0.040
        assert o["count"] == o["tp"] * o["replicas"]
        assert o["cost_per_hour"] == pytest.approx({"H100-SXM": 2.5, "L40S": 1.0, "A100-80GB-SXM": 1.6}[o["accelerator"]]
                                                   * o["count"])


def test_impossible_targets_are_rejected_with_reasons():
    r = capplan.size_inference("Llama-3.1-70B", concurrency=8, input_tokens=500, output_tokens=100,
                               ttft_p99="1 ms", tpot_p99="1 ms", accelerators=["H100"])
    assert r["options"] == [] and r["rejected"][0]["accelerator"] == "H100-SXM"
    assert "miss the targets" in r["rejected"][0]["reason"]


def test_cli_size(run_cli):
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "16", "--input", "500",
                             "--output", "100", "--ttft-p99", "1s", "--tpot-p99", "50ms", "--accelerators", "H100",
                             "--format", "json")
    assert code == 0, err
    assert json.loads(out)["options"][0]["accelerator"] == "H100-SXM"
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "16", "--input", "500",
                             "--output", "100", "--accelerators", "H1000")
    assert code == 2 and "H100" in err and len(err.strip().splitlines()) == 1
