// spec/scenario_io.hpp: the scenario file, its defaults and its errors.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <filesystem>
#include <fstream>

#include "capplan/error.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const catalog& cat() { return test::shipped_catalog(); }
scenario read(const std::string& text) { return read_scenario(text, cat()); }

std::string error_of(const std::string& text) {
    try {
        read(text);
    } catch (const config_error& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("the built-in default scenario reads") {
    const scenario s = read(default_scenario_json());
    CHECK(s.model.name == "Llama-3.1-70B");
    CHECK(s.system.accelerator.name == "H200");
    CHECK(s.system.count == 8);
    CHECK(s.parallelism.tp == 8);
    CHECK(s.parallelism.dp == 1);
    REQUIRE(s.inference);
    CHECK(*s.inference->concurrency == 50);
}

TEST_CASE("defaults: one node, dp fills the rest, kv cache follows activations") {
    const scenario s = read(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": 4},
                                "parallelism": {"tp": 2}, "precision": {"weights": "int4", "activations": "fp16"}})");
    CHECK(s.system.per_node == 4);
    CHECK(s.parallelism.dp == 2);
    CHECK(s.precision.kv_cache.name == "fp16");
    CHECK(s.precision.compute.name == "fp16");  // W4A16 computes in the activation format
    REQUIRE(s.system.scale_up);
    CHECK(s.system.scale_up->name == "NVLink-4");
}

TEST_CASE("model as inline HF config, as a catalog-format object, and as a config.json path") {
    const scenario a = read(R"({"model": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
        "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
        "tie_word_embeddings": true, "architectures": ["LlamaForCausalLM"]}, "system": {"accelerator": "L4"}})");
    CHECK(a.model.layers == 16);
    const scenario b = read(R"({"model": {"name": "mine", "config": {"model_type": "qwen3", "hidden_size": 1024,
        "intermediate_size": 3072, "num_hidden_layers": 2, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 1000}}, "system": {"accelerator": "L4"}})");
    CHECK(b.model.name == "mine");

    const auto dir = std::filesystem::temp_directory_path() / "capplan_hf_model";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
        "sliding_window": 4096})";
    const scenario c = read_scenario(R"({"model": "capplan_hf_model/config.json", "system": {"accelerator": "L40S"}})",
                                     cat(), std::filesystem::temp_directory_path());
    CHECK(c.model.name == "capplan_hf_model");
    CHECK(c.model.sliding_window == 4096);
}

TEST_CASE("inline accelerator in the catalog's own format") {
    const scenario s = read(R"({"model": "Llama-3.2-1B", "system": {"accelerator": {"name": "future-x",
        "vendor": "generic", "memory": {"capacity": "256 GiB", "bandwidth": "10 TB/s"},
        "peak_dense_flops": {"bf16": "3 PFLOP/s"}}, "count": 2}})");
    CHECK(s.system.accelerator.name == "future-x");
    CHECK(s.system.accelerator.memory_capacity->in(GiB) == 256.0);
    CHECK_FALSE(s.system.scale_up);  // an inline accelerator names no link
}

TEST_CASE("preset overrides: partial nodes, removed links, inherited scale-out fields") {
    const scenario half = read(R"({"model": "Llama-3.1-8B", "system": {"preset": "HGX-H200", "count": 4}})");
    CHECK(half.system.per_node == 4);  // four GPUs of one 8-GPU node
    CHECK(half.system.scale_up_domain == 4);
    const scenario nvl = read(R"({"model": "Llama-3.1-8B", "system": {"preset": "GB200-NVL72"}})");
    CHECK(nvl.system.scale_up_domain == 72);  // the domain spans trays, not one node
    const scenario bare = read(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "scale_out": null,
                                   "storage": null}})");
    CHECK_FALSE(bare.system.scale_out);
    CHECK_FALSE(bare.system.storage);
    const scenario over = read(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16,
                                   "scale_out": {"oversubscription": 2}}})");
    REQUIRE(over.system.scale_out);
    CHECK(over.system.scale_out->link.name == "IB-NDR");
    CHECK(over.system.scale_out->nics_per_node == 8);
    CHECK(over.system.scale_out->oversubscription == 2.0);
    const scenario node = read(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "MI300X", "per_node": 8}})");
    CHECK(node.system.count == 8);
    CHECK(node.system.scale_up_topology == "full_mesh");
}

TEST_CASE("bad input: each error names its field") {
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"memory": {"capacity": "1 GB",
        "bandwidth": null}, "peak_dense_flops": {"bf16": null}}}})").find("/system/accelerator/vendor: required field is missing") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "scale_out": {"link":
        {"scope": "per_port", "bandwidth_per_direction": "400 Gb/s"}}}})").find("/system/scale_out/link/kind: required field is missing") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic", "memory":
        {"capacity": {"value": "1 GB"}, "bandwidth": null}, "peak_dense_flops": {"bf16": null}}}})")
              .find("/system/accelerator/memory/capacity/source: required field is missing") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic", "memory":
        {"capacity": "1 GB", "bandwidth": "1 TB/s"}, "peak_dense_flops": {"bf16": "1 PFLOP/s"},
        "efficiency": {"roofline_norm": 0.5}}}})")
              .find("/system/accelerator/efficiency/roofline_norm: not a norm exponent") == 0);
    CHECK(error_of(R"({"model": "", "system": {"accelerator": "H100"}})").find("/model: empty model name") == 0);
    CHECK(error_of(R"({"name": 3, "model": "Llama-3.1-8B", "system": {"accelerator": "H100"}})").find("/name: expected a string") == 0);
    CHECK(error_of(R"({"model": "Lama-3.1-8B", "system": {"accelerator": "H100"}})")
              .find("/model: unknown model 'Lama-3.1-8B'; did you mean Llama-3.1-8B") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"}, "inferense": {}})")
              .find("/inferense: unknown key; did you mean 'inference'?") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": -8}})")
              .find("/system/count: must be at least 1 (got -8)") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic",
        "memory": {"capacity": "80 GX", "bandwidth": null}, "peak_dense_flops": {"bf16": null}}}})")
              .find("/system/accelerator/memory/capacity: unknown unit 'GX'") == 0);
    CHECK(error_of(R"({"system": {"accelerator": "H100"}})").find("/model: required field is missing") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},)").find("/: malformed JSON") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": 8},
        "parallelism": {"tp": 3}})").find("/parallelism: tp x pp x cp = 3 does not divide the system's 8 accelerators (got tp=3 pp=1 cp=1)") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": 8},
        "parallelism": {"tp": 2, "dp": 2}})").find("/parallelism/dp") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
        "precision": {"weights": "int3"}})").find("/precision/weights: unknown number format") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
        "inference": {"input_tokens": 10, "output_tokens": 5, "batch": 4, "concurrency": 8}})")
              .find("/inference/concurrency: give batch or concurrency, not both") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100"},
        "training": {"seq_len": 4096, "global_batch": 10, "micro_batch": 4}})").find("/training/global_batch") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"preset": "HGX-H200", "scale_out": "IB-NDRR"}})")
              .find("/system/scale_out: unknown link 'IB-NDRR'; did you mean IB-NDR") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": 12, "per_node": 8}})")
              .find("/system/count: not a whole number of nodes of 8") == 0);
    CHECK(error_of(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100", "count": "8"}})")
              .find("/system/count: expected an integer, got string") == 0);
}

TEST_CASE("counts and degrees beyond what an int holds are errors naming the field, never wrapped") {
    auto sys_error = [](const std::string& system, const std::string& parallelism = "{}") {
        return test::error_of([&] {
            read(R"({"model": "Llama-3.1-70B", "system": )" + system + R"(, "parallelism": )" + parallelism +
                 R"(, "inference": {"input_tokens": 2000, "output_tokens": 500, "concurrency": 50}})");
        });
    };
    // 2^32 became 0 (then a division by zero ended the process); 2^32 + 8 ran as 8; 2^31 as -2^31.
    for (const char* count : {"4294967296", "4294967304", "2147483648", "1048577", "1e30", "18446744073709551615"}) {
        const config_error e = sys_error(std::string(R"({"preset": "HGX-H200", "count": )") + count + "}");
        CHECK(e.field() == "/system/count");
        CHECK(e.problem() == "must be at most 1048576");
        CHECK(e.allowed() == "an integer in [1, 1048576]");
    }
    CHECK(sys_error(R"({"preset": "HGX-H200", "per_node": 4294967304})").field() == "/system/per_node");
    CHECK(sys_error(R"({"preset": "HGX-H200"})", R"({"tp": 4294967304})").field() == "/parallelism/tp");
    CHECK(sys_error(R"({"preset": "HGX-H200"})", R"({"dp": 4294967297})").field() == "/parallelism/dp");
    CHECK(sys_error(R"({"preset": "HGX-H200", "count": -9223372036854775807})").problem() == "must be at least 1");
    // The largest allowed degrees multiply in int64: a clear "does not divide", not an overflow.
    const config_error big = sys_error(R"({"preset": "HGX-H200", "count": 1048576, "per_node": 8})",
                                       R"({"tp": 1048576, "pp": 1048576, "cp": 1048576})");
    CHECK(big.problem().find("1152921504606846976 does not divide") != std::string::npos);
    const scenario ok = read(R"({"model": "Llama-3.1-8B", "system": {"preset": "HGX-H200", "count": 1048576}})");
    CHECK(ok.system.count == 1048576);
}

TEST_CASE("hostile JSON is a json_error or a config_error, never a crash or a foreign exception") {
    // 100,000 levels of nesting overflowed the stack (SIGSEGV).
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    CHECK_THROWS_AS(read(deep), json_error);
    const std::string just_allowed = std::string(256, '[') + std::string(256, ']');
    CHECK_THROWS_AS(read(just_allowed), config_error);  // parses; then not an object
    // Brackets inside strings do not count as nesting.
    CHECK_THROWS_WITH_AS(read(R"({"model": ")" + std::string(300, '[') + R"("})"), doctest::Contains("/model"),
                         unknown_name_error);
    // A number beyond double's range escaped as nlohmann's out_of_range.
    CHECK_THROWS_WITH_AS(read(R"({"model": "Llama-3.1-8B", "inference": {"input_tokens": 1e400}})"),
                         doctest::Contains("number overflow"), json_error);
    // A model name longer than a file name escaped as std::filesystem::filesystem_error.
    CHECK_THROWS_AS(read(R"({"model": ")" + std::string(5000, 'x') + R"("})"), unknown_name_error);
}

TEST_CASE("a misspelled required key is reported as the misspelling, not as a missing key") {
    const config_error e = test::error_of([] { read(R"({"modle": "Llama-3.1-8B", "system": "HGX-H200"})"); });
    CHECK(e.field() == "/modle");
    CHECK(e.problem() == "unknown key; did you mean 'model'?");
    const config_error far = test::error_of([] { read(R"({"system": "HGX-H200"})"); });
    CHECK(far.field() == "/model");
    CHECK(far.problem() == "required field is missing");
    const config_error nested = test::error_of([] {
        read(R"({"model": "Llama-3.1-8B", "system": "HGX-H200", "inference": {"input_token": 100, "output_tokens": 10}})");
    });
    CHECK(nested.field() == "/inference/input_token");
}

TEST_CASE("times the simulation adds to its clock are bounded: an infinite sum was an error naming step_time") {
    auto run = [](const std::string& inference) {
        return read_scenario(R"({"model": "Llama-3.2-1B", "system": {"preset": "DGX-H100", "count": 1},
            "inference": {"input_tokens": 500, "output_tokens": 50, "concurrency": 4, )" + inference + "}}",
                             test::shipped_catalog());
    };
    CHECK_THROWS_WITH_AS(run(R"("engine_overhead": {"step": "1e308 s"})"),
                         doctest::Contains("/inference/engine_overhead/step: out of range"), config_error);
    CHECK_THROWS_WITH_AS(run(R"("engine_overhead": {"prefill_kernel": "11 s"})"),
                         doctest::Contains("/inference/engine_overhead/prefill_kernel"), config_error);
    CHECK_THROWS_WITH_AS(run(R"("workload": {"think_time": "1e308 s"})"),
                         doctest::Contains("/inference/workload/think_time: out of range"), config_error);
    CHECK_THROWS_WITH_AS(run(R"("workload": {"turnaround": "2e6 s"})"),
                         doctest::Contains("/inference/workload/turnaround"), config_error);
    CHECK(run(R"("engine_overhead": {"step": "10 s"}, "workload": {"think_time": "1e6 s"})").inference->engine_overhead.step);
}
