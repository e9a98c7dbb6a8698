// The sweep over any scenario keys (search/scenario_sweep.hpp, issue #23 item 1) and the result columns it fills
// (report/result_columns.hpp): each point's figures are exactly those estimate() gives for the scenario with the
// point's values written in, and each column is the value the result JSON carries under its dotted key.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "capplan/estimate.hpp"
#include "capplan/report/result_columns.hpp"
#include "capplan/report/result_object.hpp"
#include "capplan/search/scenario_sweep.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;
using ojson = nlohmann::ordered_json;

namespace {

const char* static_batch = R"({"model": "Llama-3.1-8B", "system": "HGX-H100",
    "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 8}})";

const sweep_column& column(const sweep_table& t, const std::string& key) {
    for (const auto& c : t.columns)
        if (c.key == key) return c;
    FAIL("no column " << key);
    return t.columns.front();
}

// The value under a dotted key of a result object, or null.
ojson at_dotted(const ojson& j, const std::string& key) {
    const ojson* node = &j;
    for (std::size_t start = 0;;) {
        const std::size_t dot = key.find('.', start);
        const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!node->is_object() || !node->contains(part)) return nullptr;
        node = &(*node)[part];
        if (dot == std::string::npos) return *node;
        start = dot + 1;
    }
}

// Every column of `r` against the result object's value under the same key.
void check_columns_match_json(const estimate_result& r) {
    const ojson j = result_object(r);
    for (const result_column& c : result_columns()) {
        CAPTURE(c.key);
        const ojson v = at_dotted(j, c.key);
        if (c.kind == column_kind::text) {
            const auto t = c.text(r);
            REQUIRE(t.has_value() == v.is_string());
            if (t) CHECK(*t == v.get<std::string>());
            continue;
        }
        const auto x = c.number(r);
        REQUIRE(x.has_value() == (v.is_number() || v.is_boolean()));
        if (x) CHECK(*x == (v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>()));
    }
}

// Numeric leaves of the sections a sweep tabulates, outside lists and ranges: each must be a column.
void check_every_figure_is_a_column(const ojson& j, const std::string& prefix) {
    for (const auto& [k, v] : j.items()) {
        const std::string key = prefix + k;
        if (v.is_object()) {
            check_every_figure_is_a_column(v, key + ".");
        } else if ((v.is_number() || v.is_boolean()) && key.find("_range") == std::string::npos) {
            CAPTURE(key);
            CHECK_NOTHROW(result_column_named(key, "/columns"));
        }
    }
}

}  // namespace

TEST_CASE("result columns: each is the result JSON's value under its key, and every figure has one") {
    const catalog& cat = test::shipped_catalog();
    const char* scenarios[] = {
        static_batch,
        R"({"model": "Llama-3.1-8B", "system": "HGX-H100", "inference": {"input_tokens": 500, "output_tokens": 100,
            "concurrency": 16}, "cost": {}})",
        R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16, "storage": "parallelfs"},
            "training": {"seq_len": 4096, "global_batch": 256, "tokens": 1e11}, "cost": {}})",
        R"({"model": "Llama-3.1-70B", "system": "HGX-H100", "parallelism": {"tp": 1},
            "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 8}})",
    };
    for (const char* text : scenarios) {
        CAPTURE(text);
        const estimate_result r = estimate(read_scenario(text, cat), cat);
        check_columns_match_json(r);
        const ojson j = result_object(r);
        for (const char* section : {"memory", "inference", "training", "flops", "checkpoint", "cold_start", "roofline"})
            if (j.contains(section)) check_every_figure_is_a_column(j[section], std::string(section) + ".");
    }
    // An estimate with none of the optional parts has every figure it claims (computed_in) as the whole one has it.
    estimate_parts none = estimate_parts::headline();
    none.notes = true;
    for (const char* text : scenarios) {
        CAPTURE(text);
        const scenario s = read_scenario(text, cat);
        const estimate_result whole = estimate(s, cat), part = estimate(s, cat, none);
        CHECK(part.reasons == whole.reasons);
        for (const result_column& c : result_columns()) {
            CAPTURE(c.key);
            if (!computed_in(none, c)) continue;
            if (c.kind == column_kind::text) CHECK(c.text(part) == c.text(whole));
            else CHECK(c.number(part) == c.number(whole));
        }
        // The parts left out are not computed: the per-operator roofline table, a training job's data reading.
        if (whole.roofline) CHECK((!whole.roofline->ops.empty() && part.roofline && part.roofline->ops.empty()));
        if (whole.training && whole.training->data_read_bytes_per_s)
            CHECK_FALSE(part.training->data_read_bytes_per_s.has_value());
    }
    const config_error e = test::error_of([] { result_column_named("inference.ttft", "/columns/0"); });
    CHECK(e.field() == "/columns/0");
}

TEST_CASE("scenario sweep: each point is estimate() of the base with the point's values, the last axis fastest") {
    const catalog& cat = test::shipped_catalog();
    const std::vector<sweep_axis> axes{{"system.count", {"1", "8"}}, {"inference.batch", {"1", "16", "64"}}};
    const sweep_table t = sweep_scenario(static_batch, {}, axes, {}, 1, nullptr, cat);
    REQUIRE(t.points == 6);
    CHECK_FALSE(t.stopped);
    const int counts[] = {1, 1, 1, 8, 8, 8}, batches[] = {1, 16, 64, 1, 16, 64};
    for (std::size_t i = 0; i < 6; ++i) {
        CAPTURE(i);
        CHECK(t.errors.count(i) == 0);
        // "system": "HGX-H100" refined by "system.count" becomes {"preset": ..., "count": ...}.
        const std::string text = R"({"model": "Llama-3.1-8B", "system": {"preset": "HGX-H100", "count": )" +
                                 std::to_string(counts[i]) + R"(}, "inference": {"input_tokens": 1000,
            "output_tokens": 200, "batch": )" + std::to_string(batches[i]) + "}}";
        const estimate_result r = estimate(read_scenario(text, cat), cat);
        CHECK(column(t, "system.count").numbers[i] == counts[i]);
        CHECK(column(t, "inference.batch").numbers[i] == batches[i]);
        CHECK(column(t, "inference.ttft_s").numbers[i] == *r.inference->ttft_s);
        CHECK(column(t, "inference.throughput_tokens_per_s").numbers[i] == *r.inference->throughput_tokens_per_s);
        CHECK(column(t, "memory.per_device_bytes").numbers[i] == r.memory.per_device->si());
        CHECK(*column(t, "inference.method").texts[i] == "roofline");
    }
    // Only the columns some point has: no training figures for inference.
    for (const auto& c : t.columns) CHECK(c.key.rfind("training.", 0) != 0);
}

TEST_CASE("scenario sweep: the model and system kept from the point before are what reading them again gives") {
    const catalog& cat = test::shipped_catalog();
    // The last axes vary fastest, so most points take the model and system of the point before; tp 3 fails after both
    // were taken (32 heads), and the point after it must read them again.
    const std::vector<sweep_axis> axes{{"model", {"\"Llama-3.1-8B\"", "\"Qwen3-30B-A3B\""}},
                                       {"system", {"\"HGX-H100\"", R"({"preset": "HGX-H200", "count": 4})"}},
                                       {"parallelism.tp", {"3", "1", "4"}},
                                       {"inference.batch", {"1", "64"}}};
    const sweep_table t = sweep_scenario(static_batch, {}, axes, {}, 1, nullptr, cat);
    REQUIRE(t.points == 24);
    std::size_t i = 0;
    for (const auto& model : axes[0].values)
        for (const auto& system : axes[1].values)
            for (const auto& tp : axes[2].values)
                for (const auto& batch : axes[3].values) {
                    CAPTURE(i);
                    nlohmann::json doc = nlohmann::json::parse(static_batch);
                    doc["model"] = nlohmann::json::parse(model);
                    doc["system"] = nlohmann::json::parse(system);
                    doc["parallelism"]["tp"] = std::stoi(tp);
                    doc["inference"]["batch"] = std::stoi(batch);
                    if (tp == "3") {
                        CHECK(t.errors.count(i) == 1);
                        CHECK_THROWS(read_scenario(doc.dump(), cat));
                        ++i;
                        continue;
                    }
                    REQUIRE(t.errors.count(i) == 0);
                    const estimate_result r = estimate(read_scenario(doc.dump(), cat), cat);
                    for (const sweep_column& c : t.columns) {
                        CAPTURE(c.key);
                        const result_column& rc = result_column_named(c.key, "");
                        if (c.kind == column_kind::text) {
                            CHECK(c.texts[i] == rc.text(r));
                        } else {
                            const auto x = rc.number(r);
                            CHECK(x.has_value() == !std::isnan(c.numbers[i]));
                            if (x) CHECK(c.numbers[i] == *x);
                        }
                    }
                    ++i;
                }
}

TEST_CASE("scenario sweep: a bad point keeps its error, a null value the base's, asked columns come in order") {
    const catalog& cat = test::shipped_catalog();
    // tp 3 does not divide Llama-3.1-8B's 32 heads; null keeps the base's batch of 8.
    const std::vector<sweep_axis> axes{{"parallelism.tp", {"1", "3"}}, {"inference.batch", {"null", "2"}}};
    const sweep_table t = sweep_scenario(static_batch, {}, axes, {"inference.tpot_s", "inference.batch"}, 2, nullptr, cat);
    REQUIRE(t.points == 4);
    REQUIRE(t.columns.size() == 2);
    CHECK(t.columns[0].key == "inference.tpot_s");
    CHECK(t.columns[1].key == "inference.batch");
    CHECK(t.columns[1].numbers[0] == 8);
    CHECK(t.columns[1].numbers[1] == 2);
    CHECK(t.errors.count(0) == 0);
    REQUIRE(t.errors.count(2) == 1);
    CHECK(t.errors.at(2).rfind("/parallelism", 0) == 0);
    CHECK(std::isnan(t.columns[0].numbers[2]));
    CHECK(std::isnan(t.columns[0].numbers[3]));

    CHECK(test::error_of([&] { sweep_scenario(static_batch, {}, axes, {"nope"}, 1, nullptr, cat); }).field() == "/columns/0");
    CHECK(test::error_of([&] { sweep_scenario(static_batch, {}, axes, {"inference.batch", "inference.batch"}, 1, nullptr, cat); })
              .field() == "/columns/1");
    // 2^32 points of every column would take terabytes: refused before anything is allocated.
    std::vector<sweep_axis> huge{{"inference.batch", {}}, {"inference.input_tokens", {}}};
    for (int v = 1; v <= 65536; ++v) {
        huge[0].values.push_back(std::to_string(v));
        huge[1].values.push_back(std::to_string(v));
    }
    CHECK(test::error_of([&] { sweep_scenario(static_batch, {}, huge, {}, 1, nullptr, cat); }).field() == "/grid");
    CHECK(test::error_of([&] { sweep_scenario("[1]", {}, axes, {}, 1, nullptr, cat); }).field() == "/");
    CHECK(test::error_of([&] { sweep_scenario(static_batch, {}, {{"inference.batch", {}}}, {}, 1, nullptr, cat); }).field() ==
          "/grid/inference.batch");
}

TEST_CASE("scenario sweep: infeasible points carry their reasons; a stop before the start computes nothing") {
    const catalog& cat = test::shipped_catalog();
    const sweep_table t = sweep_scenario(R"({"model": "Llama-3.1-70B", "system": {"accelerator": "H100-SXM", "count": 1},
        "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 1}})", {}, {}, {}, 1, nullptr, cat);
    REQUIRE(t.points == 1);
    CHECK(column(t, "feasible").numbers[0] == 0.0);
    CHECK_FALSE(t.reasons.at(0).empty());

    progress watch;
    watch.request_stop();
    const sweep_table none = sweep_scenario(static_batch, {}, {{"inference.batch", {"1", "2"}}}, {}, 1, &watch, cat);
    CHECK(none.points == 0);
    CHECK(none.stopped);
    CHECK(watch.total() == 2);
}

TEST_CASE("scenario sweep: asking for a few columns skips the parts no column reads, and gives the same figures") {
    const catalog& cat = test::shipped_catalog();
    struct grid_case {
        const char* base;
        std::vector<sweep_axis> axes;
        std::vector<std::string> columns;
    };
    const grid_case cases[] = {
        // A static batch, fitting and not (its reasons name the limits, computed for it alone).
        {static_batch, {{"inference.batch", {"1", "64", "4096"}}, {"inference.input_tokens", {"1000", "100000"}}},
         {"inference.ttft_s", "inference.tpot_s", "inference.throughput_tokens_per_s", "memory.fits", "memory.per_device_bytes"}},
        // Under concurrency: the most requests that fit decides whether the simulation runs.
        {R"({"model": "Llama-3.1-8B", "system": "HGX-H100", "inference": {"input_tokens": 500, "output_tokens": 100,
            "concurrency": 8}})",
         {{"inference.concurrency", {"4", "16"}}}, {"inference.ttft_p99_s", "inference.tpot_s", "inference.method"}},
        // Training on storage, without the checkpoint or cold start columns.
        {R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16, "storage": "parallelfs"},
            "training": {"seq_len": 4096, "global_batch": 256, "tokens": 1e11}, "cost": {}})",
         {{"parallelism.tp", {"1", "2"}}, {"training.micro_batch", {"1", "4"}}},
         {"training.step_time_s", "training.mfu", "training.time_to_train_s", "memory.fits", "cost.per_run.own_usd"}},
    };
    for (const grid_case& g : cases) {
        CAPTURE(g.base);
        const sweep_table all = sweep_scenario(g.base, {}, g.axes, {}, 1, nullptr, cat);
        const sweep_table few = sweep_scenario(g.base, {}, g.axes, g.columns, 1, nullptr, cat);
        REQUIRE(few.points == all.points);
        CHECK(few.errors == all.errors);
        CHECK(few.reasons == all.reasons);
        for (const sweep_column& c : few.columns) {
            CAPTURE(c.key);
            const sweep_column& full = column(all, c.key);
            for (std::size_t i = 0; i < few.points; ++i) {
                if (c.kind == column_kind::text) CHECK(c.texts[i] == full.texts[i]);
                else CHECK(((std::isnan(c.numbers[i]) && std::isnan(full.numbers[i])) || c.numbers[i] == full.numbers[i]));
            }
        }
    }
    // The parts really are skipped: a point's estimate has no cold start or checkpoint when no column asks.
    const scenario s = read_scenario(cases[2].base, cat);
    estimate_parts parts;
    parts.cold_start = parts.checkpoint = parts.flops = parts.memory_limits = false;
    const estimate_result r = estimate(s, cat, parts);
    CHECK_FALSE(r.cold_start.has_value());
    CHECK_FALSE(r.checkpoint.has_value());
    CHECK_FALSE(r.flops.has_value());
    CHECK(r.training->step_time_s == estimate(s, cat).training->step_time_s);
}
