"""FP8 training memory as Transformer Engine and Megatron-Core keep it (issue #20 items 2 and 4): the cached FP8 weight
copies by the tensor cores' layouts (compute capability), MXFP8, and the SwiGLU input stored in FP8. Expected values
are by hand from Llama-3.1-8B's config (32 layers, hidden 4096, 8 KV heads of 128, FFN 14,336)."""
import pytest

import capplan

# Llama-3.1-8B's block matrices: 32 x (4096 x (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336).
BLOCK = 32 * (4096 * 10240 + 3 * 4096 * 14336)  # 6,979,321,856


def train(accelerator, compute="fp8", **training):
    return capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": accelerator, "count": 1},
                             "precision": {"compute": compute},
                             "training": {"seq_len": 4096, "global_batch": 1, "recompute": "none", **training}})


def memory(accelerator, compute="fp8", **training):
    return train(accelerator, compute, **training).to_dict()["memory"]


def test_blackwell_caches_no_fp8_transpose(run_cli):
    # Hopper's FP8 GEMMs take only the TN layout: TE caches the FP8 weight and its transpose (2 B a weight); B200's take
    # any layout (compute capability 10.0): the row-wise copy alone (1 B). Same 16-bit weights otherwise.
    assert memory("H100-SXM")["weights_bytes"] - memory("B200")["weights_bytes"] == BLOCK
    assert memory("H100-SXM", "bf16")["weights_bytes"] == memory("B200", "bf16")["weights_bytes"]
    assert memory("B200")["weights_bytes"] - memory("B200", "bf16")["weights_bytes"] == BLOCK
    # The catalog says why: `capplan show` prints the compute capability with its source.
    code, out, _ = run_cli("show", "B200")
    assert code == 0 and "compute_capability:\n    value: 10.0\n    source: NVIDIA, CUDA GPU Compute Capability" in out


def test_mxfp8_keeps_both_block_scaled_copies_and_needs_blackwell():
    # MXFP8: row- and column-wise copies, each 1 B a weight + an E8M0 scale per 32: 2 x 1.03125 B.
    extra = memory("B200", "mxfp8")["weights_bytes"] - memory("B200", "bf16")["weights_bytes"]
    assert extra == pytest.approx(2 * 1.03125 * BLOCK)
    with pytest.raises(capplan.ConfigError) as e:
        train("H100-SXM", "mxfp8")
    assert e.value.field == "/precision/compute" and "10.x" in str(e.value) and "9.0" in str(e.value)
    with pytest.raises(capplan.ConfigError) as e:  # TE: "not supported on 12.0+ architectures yet"
        train("RTX-PRO-6000-Server", "mxfp8")
    assert e.value.field == "/precision/compute" and "12.0" in str(e.value)


def test_fp8_blockwise_scales_its_tiles_and_keeps_both_copies():
    # DeepSeek-V3's fine-grained FP8: weights in 128 x 128 blocks (1 + 4 / 16384 B), both copies cached on every part;
    # saved GEMM inputs in 1 x 128 tiles (1 + 4 / 128 B): the QKV, MLP, o-projection and down-projection inputs,
    # 4096 + 4096 + 4096 + 14336 values a token and layer, 0.03125 B more each than per-tensor FP8's.
    for part in ("H100-SXM", "B200"):
        extra = memory(part, "fp8_blockwise")["weights_bytes"] - memory(part, "bf16")["weights_bytes"]
        assert extra == pytest.approx(2 * (1 + 4 / 16384) * BLOCK)
    more = memory("H100-SXM", "fp8_blockwise")["activations_bytes"] - memory("H100-SXM")["activations_bytes"]
    assert more == pytest.approx(32 * 4096 * (3 * 4096 + 14336) * 0.03125)
    with pytest.raises(capplan.ConfigError) as e:  # TE: FP8 block scaling needs compute capability 9.0
        train("L40S", "fp8_blockwise")
    assert e.value.field == "/precision/compute" and "8.9" in str(e.value)
    # Serving engines have block-FP8 kernels of their own: inference is not held to Transformer Engine's checks.
    served = capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": "L40S", "count": 1},
                               "precision": {"weights": "fp8_blockwise"},
                               "inference": {"input_tokens": 128, "output_tokens": 16}})
    assert served.to_dict()["memory"]["fits"] is True


def test_a_checkpoint_saves_the_weights_not_their_fp8_caches():
    # The same model states saved whether the GEMMs run in FP8 or bf16 (the FP8 copies are caches): same bytes per rank
    # and the same save time.
    def ckpt(compute):
        return capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                                 "precision": {"compute": compute},
                                 "training": {"seq_len": 4096, "global_batch": 8, "ckpt_fully_parallel_save": False}}
                                ).to_dict()["checkpoint"]
    fp8, bf16 = ckpt("fp8"), ckpt("bf16")
    for key in ("size_bytes", "save_s", "restore_s"):
        assert fp8[key] == bf16[key], key


def test_activation_func_fp8_input_store_keeps_swiglu_input_in_fp8():
    # 32 layers x 4,096 tokens x 2 x 14,336 gate and up values, 2 B each in bf16 and 1 B in FP8.
    saved = (memory("H100-SXM")["activations_bytes"]
             - memory("H100-SXM", activation_func_fp8_input_store=True)["activations_bytes"])
    assert saved == pytest.approx(32 * 4096 * 2 * 14336)
    with pytest.raises(capplan.ConfigError) as e:  # Megatron-Core's fused SwiGLU: not the eager kernels
        train("H100-SXM", activation_func_fp8_input_store=True, kernels="eager")
    assert e.value.field == "/training/activation_func_fp8_input_store"
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}
    with pytest.raises(capplan.ConfigError) as e:  # a GeLU MLP has no gated input to store
        capplan.estimate({"model": gpt2, "system": {"accelerator": "H100-SXM", "count": 1},
                          "training": {"seq_len": 1024, "global_batch": 8, "activation_func_fp8_input_store": True}})
    assert e.value.field == "/training/activation_func_fp8_input_store"


def test_size_training_takes_block_scaled_fp8_where_the_hardware_runs_it(run_cli):
    # The README's MXFP8 line (smaller): Blackwell sizes it; a Hopper system is told, in one line, why not.
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "HGX-B200", "--count", "8",
                             "--compute", "mxfp8", "--seq-len", "4096", "--global-batch", "64", "--top", "1")
    assert code == 0, err
    assert "8 x B200" in out
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", "--count", "8",
                             "--compute", "mxfp8", "--seq-len", "4096", "--global-batch", "64")
    assert code == 2 and "/precision/compute" in err and "H100-SXM is 9.0" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["10", "1.23", "x.0", "100.0", "", "9.", ".5"])
def test_a_malformed_compute_capability_names_its_field(value):
    # An inline accelerator's compute capability is NVIDIA's major.minor (one or two digits, a dot, one digit).
    accelerator = {"vendor": "generic", "memory": {"capacity": "80 GB", "bandwidth": "3 TB/s"},
                   "peak_dense_flops": {"bf16": "1000 TFLOP/s", "fp8": "2000 TFLOP/s"},
                   "compute_capability": {"value": value, "source": "test"}}
    with pytest.raises(capplan.ConfigError) as e:
        capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": accelerator, "count": 1},
                          "training": {"seq_len": 1024, "global_batch": 1}})
    assert e.value.field == "/system/accelerator/compute_capability/value"
    accelerator["compute_capability"]["value"] = "10.0"  # and a good one takes effect: no FP8 transpose
    ok = capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": accelerator, "count": 1},
                           "precision": {"compute": "fp8"}, "training": {"seq_len": 1024, "global_batch": 1}})
    accelerator.pop("compute_capability")
    hopper_like = capplan.estimate({"model": "Llama-3.1-8B", "system": {"accelerator": accelerator, "count": 1},
                                    "precision": {"compute": "fp8"}, "training": {"seq_len": 1024, "global_batch": 1}})
    assert hopper_like.to_dict()["memory"]["weights_bytes"] - ok.to_dict()["memory"]["weights_bytes"] == BLOCK


@pytest.mark.parametrize("value", ["yes", 1, 0.5, [True]])
def test_activation_func_fp8_input_store_takes_a_boolean(value):
    with pytest.raises(capplan.ConfigError) as e:
        train("H100-SXM", activation_func_fp8_input_store=value)
    assert e.value.field == "/training/activation_func_fp8_input_store"
