// estimate.hpp + report/result.hpp: the fields this stage computes, and absent ones stay absent.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const catalog& cat() { return test::shipped_catalog(); }
estimate_result run(const std::string& text) { return estimate(read_scenario(text, cat()), cat()); }
}  // namespace

TEST_CASE("Llama-3.1-70B in bf16 over tp=8 on H200: weights per device by hand") {
    const auto r = run(default_scenario_json());
    // 70,553,706,496 parameters x 2 B = 141,107,412,992 B. Per device: everything / 8 except the
    // replicated RMSNorms (80 x 2 x 8192 + 8192 = 1,318,912 parameters):
    // (70,553,706,496 - 1,318,912) / 8 + 1,318,912 = 8,820,367,360 parameters x 2 B = 17,640,734,720 B
    CHECK(r.model.parameters == 70'553'706'496LL);
    CHECK(r.memory.weights_total->in(B) == 141'107'412'992.0);
    CHECK(r.memory.weights->in(B) == 17'640'734'720.0);
    CHECK(r.memory.capacity->in(GB) == 141.0);
    CHECK_FALSE(r.feasible.has_value());  // nothing proves it infeasible; fits needs the full memory model
}

TEST_CASE("weights that cannot fit make the plan infeasible, with a reason") {
    const auto r = run(R"({"model": "Llama-3.1-405B", "system": {"accelerator": "L4"}})");
    REQUIRE(r.feasible.has_value());
    CHECK_FALSE(*r.feasible);
    REQUIRE(r.reasons.size() == 1);
    CHECK(r.reasons[0].find("weights alone need 811.7 GB per device") == 0);  // 405.85e9 x 2 B
}

TEST_CASE("the weights-alone check compares with the memory programs can allocate, not the marketed figure") {
    // H100 "80 GB": the driver shows 79.18 GiB = 85.02 GB (catalog memory.visible); 70.55e9 x 2 B = 141.1 GB.
    const auto r = run(R"({"model": "Llama-3.1-70B", "system": {"accelerator": "H100-SXM"}})");
    CHECK(r.memory.capacity->in(GB) == 80.0);
    CHECK(r.memory.visible->in(GiB) == doctest::Approx(79.18));
    REQUIRE(r.reasons.size() == 1);
    CHECK(r.reasons[0] == "weights alone need 141.1 GB per device, more than the 85.02 GB one H100-SXM lets "
                          "programs allocate");
}

TEST_CASE("a compute format the accelerator lacks is infeasible; weight-only fp8 is fine") {
    // A100 has no FP8 tensor cores (NVIDIA A100 datasheet lists TF32/BF16/FP16/INT8/INT4 only).
    const auto r = run(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "A100-80GB-SXM"},
                          "precision": {"weights": "fp8"}})");
    REQUIRE(r.feasible.has_value());
    CHECK_FALSE(*r.feasible);
    CHECK(r.reasons[0].find("A100-80GB-SXM has no fp8 matrix units") == 0);
    const auto ok = run(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "A100-80GB-SXM"},
                           "precision": {"weights": "fp8", "compute": "bf16"}})");
    CHECK_FALSE(ok.feasible.has_value());
}

TEST_CASE("MoE experts shard over ep (whole experts) and etp (split experts)") {
    // Mixtral-8x7B bf16, tp=2 ep=2 (etp defaults to 1) on 2 GPUs. Per device and layer: attention
    // 41,943,040 / 2, experts 1,409,286,144 / 2 (4 whole experts), router 32,768 and norms 8,192
    // replicated = 725,655,552; x 32 layers + embeddings 2 x 131,072,000 / 2 + final norm 4,096
    // = 23,352,053,760 parameters x 2 B = 46,704,107,520 B.
    const auto r = run(R"({"model": "Mixtral-8x7B", "system": {"accelerator": "H100", "count": 2},
                          "parallelism": {"tp": 2, "ep": 2}})");
    CHECK(r.memory.weights->in(B) == 46'704'107'520.0);
    // tp=2, ep=2, etp=2 on 4 GPUs (Megatron expert tensor parallelism): experts / 4 per device,
    // 1,409,286,144 / 4 = 352,321,536 per layer instead of 704,643,072: 32 x 352,321,536 x 2 B less.
    const auto r4 = run(R"({"model": "Mixtral-8x7B", "system": {"accelerator": "H100", "count": 4},
                           "parallelism": {"tp": 2, "ep": 2, "etp": 2}})");
    CHECK(r4.memory.weights->in(B) == 46'704'107'520.0 - 32.0 * 352'321'536 * 2);
}

TEST_CASE("result JSON: computed fields present, the rest absent (never zero)") {
    const auto j = nlohmann::json::parse(to_json(run(R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200"},
                                                         "parallelism": {"tp": 8}})")));
    CHECK(j["model"]["parameters"] == 70'553'706'496LL);
    CHECK(j["memory"]["weights_bytes"] == 17'640'734'720.0);
    CHECK_FALSE(j["memory"].contains("kv_cache_bytes"));  // no workload: no cache
    CHECK_FALSE(j.contains("inference"));
    CHECK_FALSE(j.contains("training"));
    CHECK_FALSE(j.contains("feasible"));
    CHECK(j["system"]["parallelism"]["tp"] == 8);
    const auto d = nlohmann::json::parse(to_json(run(default_scenario_json())));
    CHECK(d["memory"].contains("kv_cache_bytes"));
    CHECK(d["inference"]["batch"] == 50);
    CHECK(d["inference"]["ttft_s"] > 0.0);
    CHECK(d["cold_start"]["total_s"] > 0.0);
}

TEST_CASE("an estimate without notes has the same figures, and no notes") {
    // What a Python Scenario's headline estimate and a columnar sweep ask for: the explanations are text only.
    for (const char* text :
         {R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8}, "parallelism": {"tp": 8},
              "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}})",
          R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
              "training": {"seq_len": 4096, "global_batch": 512}})",
          R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 2}, "parallelism": {"tp": 2},
              "training": {"seq_len": 8192, "global_batch": 64}})",  // does not fit: its reasons stay
          R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
              "inference": {"input_tokens": 1000, "output_tokens": 200, "concurrency": 20}})",
          // Shared storage: a parallel file system's aggregate limit (its notes say how it binds), an object store
          // over the nodes' NICs, and an NFS share without a known aggregate, for cold start and checkpoints.
          R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64,
              "storage": {"preset": "AMLFS-125", "capacity": "160 TiB"}},
              "training": {"seq_len": 4096, "global_batch": 512}})",
          R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16, "storage": "ObjectStore-S3"},
              "training": {"seq_len": 4096, "global_batch": 256, "async_checkpoint": true}})",
          R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16, "storage": "NFS"},
              "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 8}})",
          // A LoRA fine-tune's checkpoint (the adapters alone), and a save not fully parallel.
          R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8, "storage": "NFS"},
              "training": {"seq_len": 4096, "global_batch": 64, "lora": {"rank": 16, "targets": "all_linear"}}})",
          R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16, "storage": "NFS"},
              "training": {"seq_len": 4096, "global_batch": 256, "ckpt_fully_parallel_save": false}})"}) {
        CAPTURE(text);
        const scenario sc = read_scenario(text, cat());
        estimate_parts quiet;
        quiet.notes = false;
        estimate_result with = estimate(sc, cat()), without = estimate(sc, cat(), quiet);
        CHECK_FALSE(with.notes.empty());
        CHECK(without.notes.empty());
        CHECK(without.reasons == with.reasons);
        CHECK(without.warnings == with.warnings);
        with.notes.clear();
        CHECK(to_json(without) == to_json(with));
    }
}

TEST_CASE("a training estimate lists its checkpoint's size notes, not its layout's problems again") {
    const estimate_result r = run(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16},
        "training": {"seq_len": 4096, "global_batch": 256}})");
    auto listed = [&](const std::string& start) {
        int n = 0;
        for (const auto& note : r.notes) n += note.rfind(start, 0) == 0;
        return n;
    };
    CHECK(listed("checkpoint: saved per parameter: weights 2 B + optimizer 8 B + master 4 B = 14 B") == 1);
    CHECK(listed("checkpoint: RNG states and metadata") == 1);
    CHECK(listed("checkpoint: layout: ") == 0);
}
