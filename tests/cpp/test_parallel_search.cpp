// The searches that run on several threads (layout search, inference grid) give the answer one thread gives, and a
// bad layout's error on a worker reaches the caller. These are the multithreaded paths scripts/sanitize.sh runs under
// ThreadSanitizer (issue #21 item 4).
#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include "capplan/error.hpp"
#include "capplan/search/inference_grid.hpp"
#include "capplan/search/layout_search.hpp"
#include "capplan/search/scenario_sweep.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;

namespace {
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }  // a layout's error: NaN
}  // namespace

TEST_CASE("layout search: four threads rank the same layouts at the same step times as one") {
    const scenario s = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 256}})",
                                     test::shipped_catalog());
    const layout_search_result one = search_training_layouts(s, 5, 1), four = search_training_layouts(s, 5, 4);
    REQUIRE(one.best.size() == 5);
    CHECK(four.evaluated == one.evaluated);
    CHECK(four.enumerated == one.enumerated);
    CHECK(four.fit == one.fit);
    REQUIRE(four.best.size() == one.best.size());
    for (std::size_t i = 0; i < one.best.size(); ++i) {
        const auto &a = one.best[i], &b = four.best[i];
        CHECK(a.parallelism.tp == b.parallelism.tp);
        CHECK(a.parallelism.pp == b.parallelism.pp);
        CHECK(a.parallelism.vpp == b.parallelism.vpp);
        CHECK(a.micro_batch == b.micro_batch);
        CHECK(a.zero == b.zero);
        CHECK(a.performance.step.si() == b.performance.step.si());  // bit for bit: no shared state between workers
    }
}

TEST_CASE("inference grid: four threads give every point one thread gives, errors included") {
    std::vector<scenario> layouts;
    for (const char* tp : {"1", "2", "4", "8"})
        layouts.push_back(read_scenario(std::string(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": )") + tp +
                                            R"(}, "parallelism": {"tp": )" + tp +
                                            R"(}, "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1}})",
                                        test::shipped_catalog()));
    const std::vector<std::string> errors{"", "", "a layout that cannot run", ""};
    const std::vector<grid_axis> axes{{"inference.input_tokens", {128, 2048, 32768}}, {"inference.batch", {1, 16, 256}}};
    const inference_grid one = sweep_inference_grid(layouts, errors, axes, 1);
    const inference_grid four = sweep_inference_grid(layouts, errors, axes, 4);
    REQUIRE(one.size() == 4 * 9);
    REQUIRE(four.size() == one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
        CHECK(four.fits[i] == one.fits[i]);
        CHECK(four.errors[i] == one.errors[i]);
        CHECK(same(four.ttft_s[i], one.ttft_s[i]));
        CHECK(same(four.tpot_s[i], one.tpot_s[i]));
        CHECK(same(four.per_device_bytes[i], one.per_device_bytes[i]));
    }
    CHECK(one.errors[2 * 9] == "a layout that cannot run");  // layout 2 owns points 18-26
}

TEST_CASE("layout search: progress counts the shapes on every thread; asked to stop, it returns what it searched") {
    const scenario s = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 256}})",
                                     test::shipped_catalog());
    progress watch;
    const layout_search_result all = search_training_layouts(s, 5, 4, &watch);
    CHECK_FALSE(all.stopped);
    CHECK(all.shapes > 1);
    CHECK(all.shapes_searched == all.shapes);
    CHECK(watch.total() == all.shapes);
    CHECK(watch.done() == all.shapes);
    // Asked before it starts: no shape searched, nothing found, and it says so.
    progress stop;
    stop.request_stop();
    const layout_search_result none = search_training_layouts(s, 5, 4, &stop);
    CHECK(none.stopped);
    CHECK(none.shapes == all.shapes);
    CHECK(none.shapes_searched == 0);
    CHECK(none.evaluated == 0);
    CHECK(none.best.empty());
}

TEST_CASE("scenario sweep: four threads give every point one thread gives; a stop mid-way keeps whole pieces") {
    const char* base = R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
        "training": {"seq_len": 4096, "global_batch": 64}})";
    // tp 3 cannot split the system: its points keep an error on whichever thread computes them. 320 points: five
    // pieces of 64, so four threads share them.
    const std::vector<sweep_axis> axes{{"parallelism.tp", {"1", "2", "3", "4"}},
                                       {"training.micro_batch", {"1", "2"}},
                                       {"training.seq_len", {"1024", "2048", "4096", "8192"}},
                                       {"training.global_batch", {"64", "128", "192", "256", "320", "384", "448", "512",
                                                                  "576", "640"}}};
    const sweep_table one = sweep_scenario(base, {}, axes, {}, 1), four = sweep_scenario(base, {}, axes, {}, 4);
    REQUIRE(one.points == 320);
    REQUIRE(four.points == one.points);
    CHECK(four.errors == one.errors);
    CHECK(four.reasons == one.reasons);
    REQUIRE(one.errors.count(160) == 1);
    CHECK(one.errors.at(160).rfind("/parallelism", 0) == 0);
    REQUIRE(four.columns.size() == one.columns.size());
    for (std::size_t c = 0; c < one.columns.size(); ++c) {
        CAPTURE(one.columns[c].key);
        CHECK(four.columns[c].key == one.columns[c].key);
        for (std::size_t i = 0; i < one.points; ++i) CHECK(same(four.columns[c].numbers.empty() ? 0 : four.columns[c].numbers[i],
                                                                one.columns[c].numbers.empty() ? 0 : one.columns[c].numbers[i]));
        CHECK(four.columns[c].texts == one.columns[c].texts);
    }

    // Stopped from another thread once the first points are in: the points kept are whole pieces of 64, all computed.
    std::vector<sweep_axis> big{{"training.global_batch", {}}};
    for (int b = 1; b <= 2048; ++b) big[0].values.push_back(std::to_string(8 * b));
    progress watch;
    std::thread stopper([&] {
        while (watch.done() < 64) std::this_thread::yield();
        watch.request_stop();
    });
    const sweep_table part = sweep_scenario(base, {}, big, {"training.step_time_s"}, 2, &watch);
    stopper.join();
    CHECK(watch.total() == 2048);
    CHECK(part.points % 64 == 0);
    CHECK(part.points >= 64);
    if (part.points < 2048) CHECK(part.stopped);
    REQUIRE(part.columns.size() == 1);
    for (std::size_t i = 0; i < part.points; ++i) CHECK(part.columns[0].numbers[i] > 0);
}
