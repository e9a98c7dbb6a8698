"""Invariants that must hold for any valid scenario (issue #21 item 5), over generated scenarios (hypothesis,
derandomized so CI sees the same cases): per-device weights never grow with more devices, a longer prompt never
lowers TTFT, more memory bandwidth never slows a step, no result beats the compute roofline, a plan that fits stays
within its memory, results are finite and positive, a scenario gives the same result as a dict and as JSON text, and
a simulation with the same seed gives the same answer."""
import json
import math
import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import capplan

# CI runs 30 fixed cases per property; CAPPLAN_PROPERTY_EXAMPLES=N runs N random ones (docs/reliability.md).
_LONG = int(os.environ.get("CAPPLAN_PROPERTY_EXAMPLES", "0"))
SETTINGS = settings(max_examples=_LONG or 30, deadline=None, derandomize=not _LONG,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

MODELS = st.sampled_from(["Llama-3.1-8B", "Qwen3-8B", "Mistral-7B", "Gemma-2-9B", "Mixtral-8x7B", "Qwen3-30B-A3B",
                          "gpt-oss-20b", "Llama-3.2-1B", "Phi-4"])
ACCELERATORS = st.sampled_from(["H100-SXM", "H200", "A100-80GB-SXM", "B200", "MI300X", "L40S"])
FORMATS = st.sampled_from(["bf16", "fp8"])


def _inference(model, accelerator, tp, inp, out, batch, weights="bf16"):
    return {"model": model, "system": {"accelerator": accelerator, "count": tp}, "parallelism": {"tp": tp},
            "precision": {"weights": weights}, "inference": {"input_tokens": inp, "output_tokens": out, "batch": batch}}


def _estimate(scenario):
    """The result, or None where the scenario is not a valid one (a ConfigError naming a field)."""
    try:
        return capplan.estimate(scenario)
    except capplan.ConfigError:
        return None


def _numbers(value, path=""):
    """Every number in a result's dict, with its path."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{path}/{i}")


@SETTINGS
@given(model=MODELS, accelerator=ACCELERATORS, tp=st.sampled_from([1, 2, 4]), weights=FORMATS)
def test_more_devices_never_raise_per_device_weight_bytes(model, accelerator, tp, weights):
    few = _estimate(_inference(model, accelerator, tp, 1000, 100, 1, weights))
    many = _estimate(_inference(model, accelerator, 2 * tp, 1000, 100, 1, weights))
    assume(few is not None and many is not None)
    assert many.to_dict()["memory"]["weights_bytes"] <= few.to_dict()["memory"]["weights_bytes"] * (1 + 1e-12)


@SETTINGS
@given(model=MODELS, accelerator=ACCELERATORS, tp=st.sampled_from([1, 2, 8]), inp=st.integers(1, 32000),
       more=st.integers(1, 32000), batch=st.integers(1, 64))
def test_a_longer_prompt_never_lowers_ttft(model, accelerator, tp, inp, more, batch):
    short = _estimate(_inference(model, accelerator, tp, inp, 64, batch))
    long = _estimate(_inference(model, accelerator, tp, inp + more, 64, batch))
    assume(short is not None and long is not None)
    assert long.to_dict()["inference"]["ttft_s"] >= short.to_dict()["inference"]["ttft_s"] * (1 - 1e-12)


def _card(bandwidth_tb_s):
    """An inline accelerator whose memory bandwidth is the only thing that changes."""
    return {"name": "Prop-X", "vendor": "generic", "source": "hypothetical card for the property tests",
            "memory": {"capacity": "192 GB", "bandwidth": f"{bandwidth_tb_s} TB/s"},
            "peak_dense_flops": {"fp32": "60 TFLOP/s", "bf16": "1000 TFLOP/s", "fp16": "1000 TFLOP/s",
                                 "fp8": "2000 TFLOP/s"},
            "scale_up": {"link": "NVLink-4"}}


@SETTINGS
@given(model=MODELS, bandwidth=st.floats(0.5, 8.0), factor=st.floats(1.0, 4.0), tp=st.sampled_from([1, 2, 4]),
       inp=st.integers(1, 8000), batch=st.integers(1, 256))
def test_more_memory_bandwidth_never_slows_a_step(model, bandwidth, factor, tp, inp, batch):
    def run(bw):
        s = _inference(model, "H100-SXM", tp, inp, 128, batch)
        s["system"]["accelerator"] = _card(bw)
        return _estimate(s)
    slow, fast = run(bandwidth), run(bandwidth * factor)
    assume(slow is not None and fast is not None)
    a, b = slow.to_dict()["inference"], fast.to_dict()["inference"]
    assert b["tpot_s"] <= a["tpot_s"] * (1 + 1e-9)
    assert b["ttft_s"] <= a["ttft_s"] * (1 + 1e-9)


@SETTINGS
@given(model=MODELS, accelerator=ACCELERATORS, tp=st.sampled_from([1, 2, 4, 8]), inp=st.integers(1, 16000),
       out=st.integers(1, 4000), batch=st.integers(1, 512), weights=FORMATS)
def test_no_result_beats_the_compute_roofline_and_every_number_is_finite(model, accelerator, tp, inp, out, batch,
                                                                         weights):
    r = _estimate(_inference(model, accelerator, tp, inp, out, batch, weights))
    assume(r is not None)
    d = r.to_dict()
    bad = [(path, v) for path, v in _numbers(d) if not math.isfinite(v) or v < 0]
    assert not bad, bad
    if d.get("feasible") is False:  # an infeasible plan says why
        assert d["reasons"]
        return
    peak = d["roofline"]["peak_flops_per_s"] * tp
    inference = d["inference"]
    assert inference["ttft_s"] > 0 and inference["tpot_s"] > 0
    # A prompt's FLOPs cannot run faster than every device's peak, nor a token's.
    assert d["flops"]["prefill_flops"] / peak <= inference["ttft_s"] * (1 + 1e-9)
    assert inference["throughput_tokens_per_s"] * d["flops"]["decode_token_flops"] <= peak * (1 + 1e-9)
    memory = d["memory"]
    if memory["fits"]:  # usable: what the runtime sees (H100's "80 GB" shows 79.18 GiB) x the engine's utilisation
        assert memory["per_device_bytes"] <= memory["usable_bytes"] <= memory["capacity_bytes"] * 1.1


@SETTINGS
@given(model=MODELS, accelerator=ACCELERATORS, tp=st.sampled_from([1, 2, 8]), seq=st.sampled_from([1024, 4096, 8192]),
       micro=st.sampled_from([1, 2, 4]), recompute=st.sampled_from(["none", "selective", "full"]), zero=st.integers(0, 3))
def test_training_mfu_never_exceeds_one_and_a_fitting_plan_stays_in_memory(model, accelerator, tp, seq, micro,
                                                                           recompute, zero):
    gpus = 8
    r = _estimate({"model": model, "system": {"accelerator": accelerator, "count": gpus}, "parallelism": {"tp": tp},
                   "training": {"seq_len": seq, "global_batch": 64 * micro, "micro_batch": micro,
                                "recompute": recompute, "zero": zero}})
    assume(r is not None)
    d = r.to_dict()
    bad = [(path, v) for path, v in _numbers(d) if not math.isfinite(v) or v < 0]
    assert not bad, bad
    t = d["training"]
    assert t["step_time_s"] > 0 and 0 < t["mfu"] <= t["hfu"] * (1 + 1e-12) <= 1.0
    if d["memory"]["fits"]:
        assert d["memory"]["per_device_bytes"] <= d["memory"]["usable_bytes"]


@SETTINGS
@given(model=MODELS, accelerator=ACCELERATORS, tp=st.sampled_from([1, 2, 4]), inp=st.integers(1, 8000),
       users=st.integers(1, 64))
def test_a_scenario_gives_the_same_result_as_a_dict_and_as_json_text(model, accelerator, tp, inp, users):
    scenario = {"model": model, "system": {"accelerator": accelerator, "count": tp}, "parallelism": {"tp": tp},
                "inference": {"input_tokens": inp, "output_tokens": 64, "concurrency": users,
                              "workload": {"requests": 40}}}
    r = _estimate(scenario)
    assume(r is not None)
    assert capplan.estimate(json.dumps(scenario)).to_dict() == r.to_dict()


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), rate=st.floats(0.5, 20.0), users=st.integers(1, 32))
def test_the_same_seed_gives_the_same_simulation(seed, rate, users):
    def run(workload):
        return capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 1},
                                 "inference": {"input_tokens": 1000, "output_tokens": 100, "concurrency": users,
                                               "workload": workload}}).to_dict()["inference"]
    poisson = {"arrival": "poisson", "rate_per_s": rate, "requests": 60, "seed": seed,
               "input": {"kind": "lognormal", "sigma": 0.5}, "output": {"kind": "uniform", "min": 10, "max": 200}}
    assert run(poisson) == run(poisson)
    closed = {"requests": 60, "seed": seed, "input": {"kind": "uniform", "min": 100, "max": 2000}}
    assert run(closed) == run(closed)


_ANY = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=8),
                 st.lists(st.integers(0, 8), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                 st.binary(max_size=4))


@SETTINGS
@given(op=st.one_of(st.sampled_from(["all_reduce", "all_gather", "all_to_all"]), _ANY),
       gpus=st.one_of(st.sampled_from([2, 8, 16]), _ANY), per_node=st.one_of(st.sampled_from([None, 8]), _ANY),
       algorithm=st.one_of(st.sampled_from([None, "ring", "tree"]), _ANY), nvls=_ANY, imbalance=_ANY, size=_ANY,
       system=st.one_of(st.sampled_from(["DGX-H100", {"preset": "DGX-H100", "count": 16}]), _ANY))
def test_any_argument_to_a_collective_is_a_result_or_a_capplan_error(op, gpus, per_node, algorithm, nvls, imbalance,
                                                                     size, system):
    # issue #21 item 1: values of any type reach the caller as a capplan.Error naming the argument, never another
    # exception (pybind's TypeError, int()'s ValueError, OverflowError).
    try:
        capplan.collective(op, size, system=system, gpus=gpus, per_node=per_node, algorithm=algorithm, nvls=nvls,
                           imbalance=imbalance)
    except capplan.Error as e:
        assert str(e).startswith("/"), str(e)
