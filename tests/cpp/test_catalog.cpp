// catalog.hpp: the shipped catalog loads, lookups by alias, suggestions, and strict validation.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <filesystem>
#include <fstream>

#include "capplan/catalog.hpp"
#include "capplan/error.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;
namespace fs = std::filesystem;

namespace {
const catalog& shipped() { return test::shipped_catalog(); }

// A throw-away catalog folder holding one accelerator file with the given text.
fs::path one_accelerator(const std::string& text) {
    const fs::path dir = fs::temp_directory_path() / "capplan_test_catalog";
    fs::remove_all(dir);
    fs::create_directories(dir / "accelerators");
    std::ofstream(dir / "accelerators" / "x1.json") << text;
    return dir;
}
}  // namespace

TEST_CASE("every kind the issue lists is in the shipped catalog") {
    const auto& c = shipped();
    CHECK(c.names(entry_kind::model).size() >= 24);
    CHECK(c.names(entry_kind::accelerator).size() >= 22);
    CHECK(c.names(entry_kind::system).size() >= 8);
    CHECK(c.names(entry_kind::storage).size() >= 8);
    CHECK(c.names(entry_kind::link).size() >= 16);
}

TEST_CASE("datasheet values come through typed") {
    const auto& h100 = shipped().accelerator("H100-SXM");
    // NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s, BF16 1,979 TFLOP/s with sparsity = 989.5 dense.
    CHECK(h100.memory_capacity->in(GB) == 80.0);
    CHECK(h100.memory_bandwidth->in(TB / s) == doctest::Approx(3.35));
    CHECK(h100.peak("bf16").value.in(TFLOP / s) == doctest::Approx(989.5));
    CHECK(h100.peak("fp4").status == peak_rate::state::unsupported);
    CHECK(h100.peak("fp6").status == peak_rate::state::unknown);
    // 400 Gb/s NDR port = 50 GB/s per direction.
    CHECK(shipped().link("IB-NDR").bandwidth_per_direction->in(GB / s) == doctest::Approx(50.0));
}

TEST_CASE("lookups are case-insensitive and accept aliases") {
    const auto& c = shipped();
    CHECK(c.accelerator("h100-sxm").name == "H100-SXM");
    CHECK(c.accelerator("H100").name == "H100-SXM");
    CHECK(c.model("meta-llama/Llama-3.1-8B").name == "Llama-3.1-8B");
    CHECK(c.model("deepseek-ai/DeepSeek-V3-Base").name == "DeepSeek-V3");
    CHECK(c.model("deepseek-r1").name == "DeepSeek-R1");  // its own entry since issue #19
    CHECK(c.kind_of("HGX-H200") == entry_kind::system);
}

TEST_CASE("unknown names suggest the closest catalog names") {
    try {
        shipped().accelerator("H1000", "/system/accelerator");
        FAIL("expected unknown_name_error");
    } catch (const unknown_name_error& e) {
        CHECK(e.field() == "/system/accelerator");
        REQUIRE_FALSE(e.suggestions().empty());
        CHECK(e.suggestions().front().find("H100") == 0);
    }
    CHECK_THROWS_AS(shipped().model("H100-SXM"), unknown_name_error);  // right name, wrong kind
}

TEST_CASE("a system preset resolves its accelerator, links and storage") {
    const system_spec s = shipped().system("DGX-H100");
    CHECK(s.accelerator.name == "H100-SXM");
    CHECK(s.count == 8);
    CHECK(s.per_node == 8);
    REQUIRE(s.scale_up);
    CHECK(s.scale_up->name == "NVLink-4");
    REQUIRE(s.scale_out);
    CHECK(s.scale_out->nics_per_node == 8);
    const system_spec nvl = shipped().system("GB200-NVL72");
    CHECK(nvl.count == 72);
    CHECK(nvl.nodes() == 18);
    CHECK(nvl.scale_up_domain == 72);
}

TEST_CASE("unknown keys are rejected with the file and JSON pointer") {
    const std::string good = R"({"name": "X1", "source": "test", "confidence": "derived", "vendor": "generic",
        "memory": {"capacity": "10 GB", "bandwidth": "1 TB/s"}, "peak_dense_flops": {"bf16": "100 TFLOP/s"}})";
    CHECK(catalog::load(one_accelerator(good)).accelerator("X1").memory_capacity->in(GB) == 10.0);

    std::string bad = good;
    bad.replace(bad.find("\"bandwidth\""), 11, "\"bandwith\"");
    try {
        catalog::load(one_accelerator(bad));
        FAIL("expected config_error");
    } catch (const config_error& e) {
        const std::string m = e.what();
        CHECK(m.find("x1.json#/memory/bandwith: unknown key") != std::string::npos);
        CHECK(m.find("did you mean 'bandwidth'") != std::string::npos);
    }
}

TEST_CASE("bad values in catalog files name the file and pointer") {
    CHECK_THROWS_WITH_AS(
        catalog::load(one_accelerator(R"({"name": "X1", "source": "t", "confidence": "derived", "vendor": "generic",
            "memory": {"capacity": "10 GX", "bandwidth": null}, "peak_dense_flops": {"bf16": null}})")),
        doctest::Contains("x1.json#/memory/capacity: unknown unit 'GX'"), unit_error);
    CHECK_THROWS_WITH_AS(
        catalog::load(one_accelerator(R"({"name": "X1", "source": "t", "confidence": "derived", "vendor": "generic",
            "memory": {"capacity": "10 GB", "bandwidth": null}, "peak_dense_flops": {"fp8": null}})")),
        doctest::Contains("x1.json#/peak_dense_flops/bf16: required field is missing"), config_error);
    CHECK_THROWS_WITH_AS(catalog::load(one_accelerator("{\"name\": ")), doctest::Contains("malformed JSON"), json_error);
    CHECK_THROWS_AS(catalog::load("/nonexistent/capplan/catalog"), config_error);
}

TEST_CASE("a fabric part's price is read with its source and date, and a missing date is named") {
    const auto link = [](const std::string& price) {
        const fs::path dir = fs::temp_directory_path() / "capplan_test_catalog_link";
        fs::remove_all(dir);
        fs::create_directories(dir / "links");
        std::ofstream(dir / "links" / "l1.json")
            << R"({"name": "L1", "source": "t", "confidence": "derived", "kind": "infiniband", "scope": "per_port",
                  "bandwidth_per_direction": "50 GB/s", "fabric": {"source": "t", "date": "2026",
                  "switch": {"model": "S", "ports": 64, "price": )"
            << price << R"(}, "nic": {"model": "N"}, "switch_optic": {"model": "O", "ports": 2},
                  "node_optic": {"model": "O", "ports": 2}, "cable": {"model": "C", "price": {"usd": 100,
                  "kind": "street", "source": "t", "date": "2026"}}}})";
        return dir;
    };
    const catalog c = catalog::load(link(R"({"usd": [36000, 50000], "kind": "estimate", "source": "t", "date": "2024-08",
                                                "note": "n"})"));
    const fabric_parts* f = c.fabric("L1");
    REQUIRE(f != nullptr);
    REQUIRE(f->switch_.price.has_value());
    CHECK(f->switch_.price->usd.low == 36000.0);
    CHECK(f->switch_.price->usd.high == 50000.0);
    CHECK(f->switch_.price->from.date == "2024-08");
    REQUIRE(f->cable.has_value());
    CHECK(f->cable->price->usd.mid() == 100.0);
    // Without its date the error names the date (not the note beside it), with the file and pointer.
    CHECK_THROWS_WITH_AS(catalog::load(link(R"({"usd": 36000, "kind": "estimate", "source": "t", "note": "n"})")),
                         doctest::Contains("l1.json#/fabric/switch/price/date: required field is missing"), config_error);
    CHECK_THROWS_WITH_AS(catalog::load(link(R"({"usd": [5, 3], "kind": "street", "source": "t", "date": "2026"})")),
                         doctest::Contains("l1.json#/fabric/switch/price/usd"), config_error);
}

TEST_CASE("a part sharing another's efficiencies keeps its own matrix fractions, format by format") {
    // MI355X borrows MI300X's measured efficiencies ("as") but carries matrix fractions from its own GEMM
    // measurements: those replace MI300X's (bf16 0.42 -> 0.47) and add fp8 and fp4; the rest stays MI300X's.
    const accelerator_spec& mi355 = shipped().accelerator("MI355X");
    const accelerator_spec& mi300 = shipped().accelerator("MI300X");
    CHECK(mi355.efficiency_as == "MI300X");
    CHECK(mi355.matmul_efficiency.at("bf16") == doctest::Approx(0.47));
    CHECK(mi300.matmul_efficiency.at("bf16") == doctest::Approx(0.42));
    CHECK(mi355.matmul_efficiency.at("fp4") == doctest::Approx(0.31));
    CHECK(mi355.memory_efficiency == mi300.memory_efficiency);
    // MI350X shares MI300X's whole block: nothing of its own.
    CHECK(shipped().accelerator("MI350X").matmul_efficiency == mi300.matmul_efficiency);
    CHECK(shipped().accelerator("MI350X").own_matmul_efficiency.empty());
    // An inline part may do the same; its own fraction is checked as any other (an efficiency in (0, 1.5]).
    const std::string inline_part = R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic",
        "memory": {"capacity": "80 GB", "bandwidth": "3.35 TB/s"}, "peak_dense_flops": {"bf16": "989.5 TFLOP/s"},
        "efficiency": {"as": {"value": "H100-SXM", "source": "a test"}, "matmul": {"bf16": @@}}}, "count": 1},
        "inference": {"input_tokens": 100, "output_tokens": 10}})";
    auto with = [&](const std::string& x) { return std::string(inline_part).replace(inline_part.find("@@"), 2, x); };
    CHECK(read_scenario(with("0.5"), shipped()).system.accelerator.matmul_efficiency.at("bf16") == 0.5);
    CHECK_THROWS_WITH_AS(read_scenario(with("2.0"), shipped()), doctest::Contains("efficiency/matmul/bf16"), config_error);
}

TEST_CASE("a part named in a scenario keeps its matrix units' source: borrowed, or its own beside a borrowed block") {
    // Resolving a named part again (the scenario reader does) must not turn borrowed fractions into its own.
    auto notes_of = [](const std::string& accelerator) {
        std::string all;
        const auto r = estimate(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": ")" + accelerator +
                                                  R"(", "count": 1}, "inference": {"input_tokens": 100, "output_tokens": 10, "batch": 1}})",
                                              shipped()),
                                shipped());
        for (const auto& n : r.notes) all += n + "\n";
        return all;
    };
    CHECK(notes_of("H800").find("of bf16 peak (H100-SXM catalog, shared by H800)") != std::string::npos);
    CHECK(notes_of("MI355X").find("0.47 of bf16 peak (MI355X catalog)") != std::string::npos);
}
