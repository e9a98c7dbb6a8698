"""Property tests of the serving features over generated scenarios (hypothesis, derandomized so CI
sees the same cases): any input is a result or a ConfigError naming an /inference field, never a
crash; and the features move the numbers the way their definitions say."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capplan

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

_number = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=32), st.integers(-10, 10**7),
                    st.none(), st.text(max_size=4), st.booleans())


def _llama8b(**inference):
    return capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 2},
                             "inference": {"input_tokens": 2000, "output_tokens": 100, "batch": 4, **inference}})


@SETTINGS
@given(method=st.sampled_from(["draft", "eagle", "mtp", "ngram", "medusa", 3]), tokens=_number, acceptance=_number,
       hit_rate=_number, shared=_number, tier=st.sampled_from(["host", "NVMe-Gen4", "NFS", "nowhere"]), capacity=_number,
       prefill=_number, decode=_number)
def test_any_feature_input_is_a_result_or_an_error_naming_its_field(method, tokens, acceptance, hit_rate, shared,
                                                                    tier, capacity, prefill, decode):
    features = {
        "speculative": {"method": method, "tokens": tokens, "acceptance": acceptance, "draft_model": "Llama-3.2-1B"}
        if method == "draft" else {"method": method, "tokens": tokens, "acceptance": acceptance},
        "prefix_cache": {"hit_rate": hit_rate, "shared_prefix_tokens": shared},
        "kv_offload": {"tier": tier, "capacity": f"{capacity} GB" if isinstance(capacity, (int, float)) else capacity},
        "disaggregation": {"prefill": {"count": prefill}, "decode": {"count": decode}},
    }
    for key, value in features.items():
        try:
            r = _llama8b(**{key: value})
        except capplan.ConfigError as e:
            assert str(e).startswith(f"/inference/{key}"), (key, value, str(e))
        else:
            assert r.to_dict().get("feasible") is False or float(r.inference.tpot_s) > 0


@SETTINGS
@given(tokens=st.integers(1, 8), acceptance=st.floats(0, 1), batch=st.integers(1, 64))
def test_speculation_gains_between_one_and_k_plus_one_tokens_a_step(tokens, acceptance, batch):
    s = _llama8b(batch=batch, speculative={"method": "ngram", "tokens": tokens, "acceptance": acceptance})
    tps = float(s.inference.speculative.tokens_per_step)
    assert 1.0 <= tps <= tokens + 1 + 1e-9
    # n-gram drafts cost nothing on the GPU: the verify step is never cheaper than a plain one, so the
    # speed-up is at most the tokens a step.
    assert float(s.inference.speculative.speedup) <= tps + 1e-9


@SETTINGS
@given(hit_rate=st.floats(0, 1), shared=st.integers(0, 2000), batch=st.integers(1, 32))
def test_prefix_hits_never_slow_a_prompt_or_grow_memory(hit_rate, shared, batch):
    plain = _llama8b(batch=batch)
    cached = _llama8b(batch=batch, prefix_cache={"hit_rate": hit_rate, "shared_prefix_tokens": shared})
    assert float(cached.inference.ttft_s) <= float(plain.inference.ttft_s) * (1 + 1e-9)
    assert float(cached.memory.kv_cache_bytes) <= float(plain.memory.kv_cache_bytes) * (1 + 1e-12)
    assert cached.inference.max_batch >= plain.inference.max_batch


@SETTINGS
@given(capacity_gb=st.integers(1, 4000), context=st.integers(1000, 200000))
def test_an_offload_tier_never_fits_fewer_requests(capacity_gb, context):
    load = {"input_tokens": context, "output_tokens": 100, "batch": 8}
    plain = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 1}, "inference": load})
    spill = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 1},
                              "inference": {**load, "kv_offload": {"tier": "host", "capacity": f"{capacity_gb} GB"}}})
    assert spill.inference.max_batch >= plain.inference.max_batch
    assert float(spill.memory.per_device_bytes) <= float(plain.memory.per_device_bytes) * (1 + 1e-12)
    if plain.memory.fits:  # nothing spills: the same speed
        assert float(spill.inference.tpot_s) == pytest.approx(float(plain.inference.tpot_s))
