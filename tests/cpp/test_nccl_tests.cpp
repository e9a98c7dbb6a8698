// calibration/nccl_tests.hpp: reading nccl-tests text and -J JSON, fitting latency and bus bandwidth.
// The sample outputs are in tests/data/nccl-tests (each starts with a "# source:" citation line);
// figures checked against them below were read off the files by hand.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "capplan/calibration/nccl_tests.hpp"
#include "capplan/error.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const byte_rate GBps = GB / s;

std::string sample(const std::string& name) {
    std::ifstream in(std::string(CAPPLAN_TEST_DATA_DIR) + "/nccl-tests/" + name, std::ios::binary);
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
const char* a3mega = "gcp_a3mega_h100_2node_16gpu_all_reduce.txt";
const char* mi300x = "rccl_mi300x_8gpu_all_reduce.txt";
const char* coreweave = "coreweave_a100_sharp_multinode_all_reduce_oldformat.txt";

using test::error_of;

// Points on the exact line time = latency + S * bus_factor / busbw, sizes 8 B .. 1 GiB.
nccl_tests_run synthetic(collective_op op, int ranks, duration latency, byte_rate busbw) {
    nccl_tests_run run;
    run.source = "synthetic";
    for (double size = 8; size <= GiB.in(B); size *= 2) {
        nccl_tests_point p;
        p.size = size * B;
        p.count = static_cast<std::int64_t>(size / 4);
        p.type = "float";
        p.redop = "sum";
        p.time_out = p.time_in = latency + p.size * bus_factor(op, ranks) / busbw;
        p.algbw_out = p.algbw_in = p.size / p.time_out;
        p.busbw_out = p.busbw_in = p.algbw_out * bus_factor(op, ranks);
        run.points.push_back(p);
    }
    return run;
}

// A -J file laid out as nccl-tests src/util.cu (JSON_FILE_VERSION 2) writes it: "%lf" doubles,
// booleans as strings, root as "%6i" text, one devices[] entry per process.
const char* json_sample = R"({"version":2,"start_time":"2025-06-02 09:14:03",
"args":["./build/all_gather_perf","-b","1M","-e","64M","-f","4","-g","8","-J","ag.json"],
"env":["NCCL_DEBUG=WARN","PATH=/usr/bin"],"nccl_version":22703,
"config":{"nthreads":1,"ngpus":8,"minimum_bytes":1048576,"maximum_bytes":67108864,"step_factor":4,
 "warmup_iters":5,"iterations":20,"aggregated_iterations":1,"validation":1,"graph":0,
 "blocking_collectives":"false","per_iter_timing":"false","parallel_init":"false",
 "devices":[{"rank":0,"group":0,"pid":4242,"hostname":"node-0","device":0,"device_hex":"0000:18:00","device_info":"NVIDIA H100 80GB HBM3"}]},
"results":[
 {"size":1048576,"count":32768,"type":"float","redop":"none","root":"    -1",
  "out_of_place":{"time":30.000000,"alg_bw":34.952533,"bus_bw":30.583467,"nwrong":0.000000},
  "in_place":{"time":29.500000,"alg_bw":35.544949,"bus_bw":31.101830,"nwrong":0.000000},
  "actual_iterations":20,"experiment_name":""},
 {"size":4194304,"count":131072,"type":"float","redop":"none","root":"    -1",
  "out_of_place":{"time":45.000000,"alg_bw":93.206756,"bus_bw":81.555911,"nwrong":null},
  "in_place":{"time":"nan","alg_bw":"nan","bus_bw":"nan","nwrong":null},
  "actual_iterations":20,"experiment_name":""},
 {"size":16777216,"count":524288,"type":"float","redop":"none","root":"    -1",
  "out_of_place":{"time":105.000000,"alg_bw":159.783010,"bus_bw":139.810134,"nwrong":0.000000},
  "in_place":{"time":104.000000,"alg_bw":161.319385,"bus_bw":141.154462,"nwrong":0.000000},
  "actual_iterations":20,"experiment_name":""},
 {"size":67108864,"count":2097152,"type":"float","redop":"none","root":"    -1",
  "out_of_place":{"time":345.000000,"alg_bw":194.518446,"bus_bw":170.203640,"nwrong":0.000000},
  "in_place":{"time":344.000000,"alg_bw":195.083907,"bus_bw":170.698419,"nwrong":0.000000},
  "actual_iterations":20,"experiment_name":""}],
"out_of_bounds":{"count":0,"okay":"true"},
"average_bus_bandwidth":{"bandwidth":105.538288,"okay":"unchecked"},
"errors":[],"end_time":"2025-06-02 09:14:09"})";
}  // namespace

TEST_CASE("nccl-tests text: A3 Mega H100, 2 nodes x 8, current layout") {
    const auto run = parse_nccl_tests_text(sample(a3mega), a3mega);
    CHECK(run.source == a3mega);
    REQUIRE(run.points.size() == 31);  // 8 B .. 8 GiB, factor 2
    CHECK(run.points.front().size.in(B) == 8.0);
    CHECK(run.points.front().count == 2);
    CHECK(run.points.front().type == "float");
    CHECK(run.points.front().redop == "sum");
    CHECK(run.points.front().time_out.in(us) == doctest::Approx(135.8));
    CHECK(run.points.front().time_in.in(us) == doctest::Approx(123.5));
    CHECK(run.points.back().size.in(B) == 8589934592.0);
    // Last row: "8589934592 2147483648 float sum -1 47535 180.71 338.82 0 47743 179.92 337.35 0".
    CHECK(run.points.back().time_out.in(ms) == doctest::Approx(47.535));
    CHECK(run.points.back().algbw_out.in(GBps) == doctest::Approx(180.71));
    CHECK(run.points.back().busbw_out.in(GBps) == doctest::Approx(338.82));
    CHECK(run.points.back().busbw_in.in(GBps) == doctest::Approx(337.35));
    CHECK(run.ranks == 16);  // "#  Rank  0 Group  0 ..." to "#  Rank 15 ..."
    REQUIRE(run.op);
    CHECK(*run.op == collective_op::all_reduce);  // "all_reduce_perf" in the recorded command line
    CHECK(run.nccl_version.empty());               // not printed in this run
    CHECK(run.tests_version.empty());
    CHECK(run.citation.rfind("lessizzmore/create-a3mega-ztan-fork", 0) == 0);
}

TEST_CASE("nccl-tests text: rccl-tests MI300X with a non-comment version line") {
    const auto run = parse_nccl_tests_text(sample(mi300x), mi300x);
    REQUIRE(run.points.size() == 31);
    CHECK(run.points.front().size.in(B) == 8.0);
    CHECK(run.points.back().size.in(B) == 8589934592.0);
    // "1048576 262144 float sum -1 28.39 36.94 64.64 0 28.04 37.40 65.45 0"
    const auto& mb = run.points[17];
    CHECK(mb.size.in(MiB) == 1.0);
    CHECK(mb.busbw_out.in(GBps) == doctest::Approx(64.64));
    CHECK(mb.time_in.in(us) == doctest::Approx(28.04));
    CHECK(run.ranks == 8);
    CHECK(run.tests_version == "rccl-tests develop:a7809b3");  // "rccl-tests: Version develop:a7809b3"
    CHECK(run.nccl_version.empty());                          // the RCCL library version is not printed
    REQUIRE(run.op);
    CHECK(*run.op == collective_op::all_reduce);
}

TEST_CASE("nccl-tests text: old layout, float error column, elided device list and SHARP log lines") {
    const auto run = parse_nccl_tests_text(sample(coreweave), coreweave);
    REQUIRE(run.points.size() == 31);
    CHECK(run.points.front().size.in(B) == 8.0);
    CHECK(run.points.front().time_out.in(us) == doctest::Approx(58.23));
    CHECK(run.points.back().size.in(B) == 8589934592.0);
    CHECK(run.points.back().time_out.in(us) == doctest::Approx(143927));
    // "134217728 33554432 float sum 2619.6 51.24 99.27 5e-07 2600.4 51.61 100.00 5e-07" (no root column)
    const auto& row = run.points[24];
    CHECK(row.size.in(MiB) == 128.0);
    CHECK(row.busbw_out.in(GBps) == doctest::Approx(99.27));
    CHECK(row.busbw_in.in(GBps) == doctest::Approx(100.00));
    CHECK(row.time_in.in(us) == doctest::Approx(2600.4));
    // Five "#   Rank N Pid ..." lines then "...": the 32-rank list is cut, so the count is unknown.
    CHECK(run.ranks == 0);
    CHECK_FALSE(run.op);  // no command line in the file
    CHECK(run.nccl_version.empty());
}

TEST_CASE("nccl-tests text: version lines, test name, launcher prefixes, N/A and timestamps") {
    const std::string text =
        "0: # nccl-tests version 2.13.8 nccl-headers=21806 nccl-library=21805\n"
        "0: # Collective test starting: all_gather_perf\n"
        "0: # nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0\n"
        "0: #\n"
        "0: # Using devices\n"
        "0: #  Rank  0 Group  0 Pid   1001 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
        "1: #  Rank  1 Group  0 Pid   1002 on     node-a device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n"
        "node-a:1001:1001 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
        "0: #\n"
        "0: #                                                              out-of-place                       in-place\n"
        "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong           timestamp\n"
        "0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       %Y-%m-%d %H:%M:%S\n"
        "0:         1024           128     float    none      -1    10.00    0.10    0.05    N/A    10.00    0.10    0.05    N/A  2025-06-02 09:00:00\n"
        "node-a:1001:1003 [0] NCCL INFO Channel 00/02 : 0 1\n"
        "0:         2048           256     float    none      -1    11.00    0.19    0.09    N/A    11.00    0.19    0.09    N/A  2025-06-02 09:00:01\n"
        "0:         4096           512     float    none      -1    12.00    0.34    0.17    N/A    12.00    0.34    0.17    N/A  2025-06-02 09:00:02\n"
        "0: # Out of bounds values : 0 OK\n";
    const auto run = parse_nccl_tests_text(text, "ag.log");
    CHECK(run.points.size() == 3);
    CHECK(run.points[1].size.in(B) == 2048.0);
    CHECK(run.points[1].redop == "none");
    CHECK(run.ranks == 2);
    REQUIRE(run.op);
    CHECK(*run.op == collective_op::all_gather);
    CHECK(run.nccl_version == "NCCL 2.18.5+cuda12.2");  // the INFO line beats nccl-library=21805
    CHECK(run.tests_version == "nccl-tests 2.13.8");

    // Without the INFO line the library code is decoded: 21805 = 2.18.5.
    std::string no_info = text;
    no_info.erase(no_info.find("node-a:1001:1001"), no_info.find('\n', no_info.find("node-a:1001:1001")) - no_info.find("node-a:1001:1001") + 1);
    CHECK(parse_nccl_tests_text(no_info, "ag.log").nccl_version == "NCCL 2.18.5");

    // RCCL's own line.
    const auto rccl = parse_nccl_tests_text("RCCL version : 2.18.3+hip6.0 develop:1234\n" + text.substr(text.find("0: #  Rank")), "x");
    CHECK(rccl.nccl_version == "RCCL 2.18.3+hip6.0");
}

TEST_CASE("nccl-tests text: malformed rows and empty tables are errors naming the line") {
    std::string text = sample(a3mega);
    // Line 32 of the file is the 1024-byte row; drop its last column.
    const std::string row = "        1024           256     float     sum      -1    147.1    0.01    0.01      0    123.1    0.01    0.02      0";
    const auto at = text.find(row);
    REQUIRE(at != std::string::npos);
    std::string short_row = text;
    short_row.replace(at, row.size(), row.substr(0, row.size() - 7));
    auto e = error_of([&] { parse_nccl_tests_text(short_row, a3mega); });
    CHECK(e.field() == "line 32");
    CHECK(std::string(e.what()).rfind("line 32: expected 13 columns (size count type redop root time algbw busbw #wrong", 0) == 0);
    CHECK(std::string(e.what()).find("got 12") != std::string::npos);

    std::string bad_number = text;
    bad_number.replace(at + row.find("147.1"), 5, "14x.1");
    e = error_of([&] { parse_nccl_tests_text(bad_number, a3mega); });
    CHECK(e.field() == "line 32");
    CHECK(e.value() == "'14x.1'");
    CHECK(e.problem().find("column 6 'time'") != std::string::npos);

    // The header but no rows; no table at all.
    const std::string header_only = text.substr(0, text.find("           8             2"));
    e = error_of([&] { parse_nccl_tests_text(header_only, a3mega); });
    CHECK(e.problem().find("has no rows") != std::string::npos);
    e = error_of([&] { parse_nccl_tests_text("NCCL INFO Bootstrap : Using eth0\nsegmentation fault\n", "crash.log"); });
    CHECK(e.field() == "crash.log");
    CHECK(e.problem().find("no nccl-tests result table") != std::string::npos);
    CHECK_THROWS_AS(parse_nccl_tests_text("", "empty.txt"), config_error);

    // Two tables in one log.
    e = error_of([&] { parse_nccl_tests_text(text + text, a3mega); });
    CHECK(e.problem().find("a second nccl-tests table") != std::string::npos);
}

TEST_CASE("nccl-tests JSON (-J): util.cu layout") {
    const auto run = parse_nccl_tests_json(json_sample, "ag.json");
    CHECK(run.source == "ag.json");
    REQUIRE(run.points.size() == 4);
    CHECK(run.points[0].size.in(MiB) == 1.0);
    CHECK(run.points[0].count == 32768);
    CHECK(run.points[0].redop == "none");
    CHECK(run.points[0].time_out.in(us) == doctest::Approx(30.0));
    CHECK(run.points[3].busbw_in.in(GBps) == doctest::Approx(170.698419));
    CHECK(std::isnan(run.points[1].time_in.si()));  // "nan" as jsonDouble writes it
    CHECK(run.ranks == 8);                          // 1 process x 1 thread x 8 GPUs
    CHECK(run.nccl_version == "NCCL 2.27.3");       // 22703
    REQUIRE(run.op);
    CHECK(*run.op == collective_op::all_gather);    // args[0]

    // In-place has 3 usable points (the "nan" one is skipped); out-of-place 4.
    CHECK(fit_collective(run, collective_op::all_gather, 8, true).points == 3);
    CHECK(fit_collective(run, collective_op::all_gather, 8, false).points == 4);
}

TEST_CASE("nccl-tests JSON (-J): errors carry JSON pointers") {
    CHECK_THROWS_AS(parse_nccl_tests_json("{\"version\": 2, \"results\": [", "cut.json"), json_error);
    auto e = error_of([] { parse_nccl_tests_json(R"({"version": 2})", "x.json"); });
    CHECK(e.field() == "/results");
    e = error_of([] { parse_nccl_tests_json(R"({"results": []})", "x.json"); });
    CHECK(e.field() == "/results");
    e = error_of([] {
        parse_nccl_tests_json(R"({"results": [{"size": 8, "count": 2, "type": "float", "redop": "sum",
            "out_of_place": {"time": 1.0, "alg_bw": 0, "bus_bw": 0}, "in_place": {"time": "fast", "alg_bw": 0, "bus_bw": 0}}]})",
                              "x.json");
    });
    CHECK(e.field() == "/results/0/in_place/time");
    e = error_of([] { parse_nccl_tests_json(R"({"results": [{"size": "8", "count": 2}]})", "x.json"); });
    CHECK(e.field() == "/results/0/size");
    e = error_of([] { parse_nccl_tests_json(R"({"results": [{"size": 8, "count": 2, "type": "float", "redop": "sum"}]})", "x.json"); });
    CHECK(e.field() == "/results/0/out_of_place");
}

TEST_CASE("nccl-tests fit recovers exact latency and bus bandwidth") {
    const auto run = synthetic(collective_op::all_reduce, 8, 20 * us, 400 * GBps);
    const auto fit = fit_collective(run, collective_op::all_reduce, 8);
    CHECK(fit.latency.in(us) == doctest::Approx(20.0).epsilon(1e-9));
    CHECK(fit.bus_bandwidth.in(GBps) == doctest::Approx(400.0).epsilon(1e-9));
    CHECK(fit.r_squared == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(fit.points == 28);  // 8 B .. 1 GiB
    CHECK(fit.min_size.in(B) == 8.0);
    CHECK(fit.max_size.in(GiB) == 1.0);
    CHECK(fit.op == collective_op::all_reduce);
    CHECK(fit.ranks == 8);
    CHECK_FALSE(fit.in_place);

    // A size window, and other operations and rank counts.
    const auto window = fit_collective(run, collective_op::all_reduce, 8, true, 1 * MiB, 64 * MiB);
    CHECK(window.points == 7);
    CHECK(window.min_size.in(MiB) == 1.0);
    CHECK(window.max_size.in(MiB) == 64.0);
    CHECK(window.bus_bandwidth.in(GBps) == doctest::Approx(400.0).epsilon(1e-9));
    CHECK(window.in_place);
    const auto a2a = fit_collective(synthetic(collective_op::all_to_all, 64, 35 * us, 45 * GBps), collective_op::all_to_all, 64);
    CHECK(a2a.latency.in(us) == doctest::Approx(35.0).epsilon(1e-9));
    CHECK(a2a.bus_bandwidth.in(GBps) == doctest::Approx(45.0).epsilon(1e-9));
    // Zero latency comes back as zero, not a tiny negative.
    CHECK(fit_collective(synthetic(collective_op::broadcast, 4, 0 * us, 100 * GBps), collective_op::broadcast, 4).latency.si() >= 0);
}

TEST_CASE("nccl-tests fit on the A3 Mega sample") {
    const auto run = parse_nccl_tests_text(sample(a3mega), a3mega);
    const auto fit = fit_collective(run, collective_op::all_reduce, 16);
    CHECK(fit.points == 31);
    // Largest size, out-of-place busbw 338.82 GB/s (last row of the file): within 5%.
    CHECK(fit.bus_bandwidth.in(GBps) == doctest::Approx(338.82).epsilon(0.05));
    // Smallest size, out-of-place time 135.8 us (first row): within 30%.
    CHECK(fit.latency.in(us) == doctest::Approx(135.8).epsilon(0.30));
    CHECK(fit.r_squared > 0.95);
    // A large-size window fits the plateau more closely (sizes >= 1 GiB: 1.07e9 B .. 8.6e9 B).
    const auto plateau = fit_collective(run, collective_op::all_reduce, 16, false, 1 * GiB);
    CHECK(plateau.points == 4);
    CHECK(plateau.bus_bandwidth.in(GBps) == doctest::Approx(338.82).epsilon(0.03));
}

TEST_CASE("nccl-tests fit rejects what it cannot fit") {
    const auto run = parse_nccl_tests_text(sample(a3mega), a3mega);
    auto e = error_of([&] { fit_collective(run, collective_op::all_reduce, 16, false, 4 * GiB); });
    CHECK(e.field() == "/fitted/points");
    CHECK(e.problem().find("has 2 out-of-place measurements") != std::string::npos);
    e = error_of([&] { fit_collective(run, collective_op::all_gather, 16); });
    CHECK(e.field() == "/op");
    e = error_of([&] { fit_collective(run, collective_op::all_reduce, 8); });
    CHECK(e.field() == "/ranks");
    CHECK(e.problem().find("lists 16 ranks") != std::string::npos);
    e = error_of([&] { fit_collective(run, collective_op::all_reduce, 16, false, 1 * GiB, 1 * MiB); });
    CHECK(e.field() == "/from");

    // Latency-bound sizes only: 8 B .. 512 B on the A3 Mega run are flat to noisy (135.8 then ~123 us).
    e = error_of([&] { fit_collective(run, collective_op::all_reduce, 16, false, {}, 128 * B); });
    CHECK(e.field() == "/bus_bandwidth");
    CHECK(e.problem().find("not positive") != std::string::npos);

    nccl_tests_run unknown = run;
    unknown.ranks = 0;
    unknown.op.reset();
    e = error_of([&] { fit_collective(unknown, collective_op::all_reduce, 1); });
    CHECK(e.field() == "/ranks");
}

TEST_CASE("nccl-tests calibration file") {
    const auto run = parse_nccl_tests_text(sample(a3mega), a3mega);
    const auto fit = fit_collective(run, collective_op::all_reduce, 16);
    const auto j = nlohmann::json::parse(calibration_json(fit, "A3-Mega", run));
    CHECK(j["name"] == "A3-Mega-all-reduce-16ranks");
    CHECK(j["system"] == "A3-Mega");
    CHECK(j["op"] == "all_reduce");
    CHECK(j["ranks"] == 16);
    CHECK(j["latency"].get<std::string>().ends_with(" us"));
    CHECK(j["bus_bandwidth"].get<std::string>().ends_with(" GB/s"));
    CHECK(j["fitted"]["points"] == 31);
    CHECK(j["fitted"]["min_size"] == "8 B");
    CHECK(j["fitted"]["max_size"] == "8589934592 B");
    CHECK(j["fitted"]["in_place"] == false);
    CHECK(j["fitted"]["r_squared"].get<double>() <= 1.0);
    const std::string source = j["source"];
    CHECK(source.rfind(std::string(a3mega) + " (lessizzmore/create-a3mega-ztan-fork", 0) == 0);
    CHECK(j["nccl_version"].is_null());
    CHECK(j["confidence"] == "measured");
    CHECK(j["created_by"] == "capplan calibrate-collectives");
    CHECK(j.size() == 11);

    const auto json_run = parse_nccl_tests_json(json_sample, "ag.json");
    const auto ag = nlohmann::json::parse(
        calibration_json(fit_collective(json_run, collective_op::all_gather, 8), "DGX H100", json_run));
    CHECK(ag["name"] == "DGX-H100-all-gather-8ranks");
    CHECK(ag["nccl_version"] == "NCCL 2.27.3");
    CHECK(ag["source"] == "ag.json");

    CHECK(error_of([&] { calibration_json(fit, "", run); }).field() == "/system");
}

TEST_CASE("nccl-tests rank arithmetic cannot overflow: huge rank numbers and thread x GPU counts are errors") {
    // A rank number past long long (atoll's overflow was undefined behaviour) or past 2^20 names its line.
    std::string text = sample(a3mega);
    const auto at = text.find("Rank  1 ");
    REQUIRE(at != std::string::npos);
    for (const std::string rank : {"99999999999999999999999", "1048576"}) {
        std::string huge = text;
        huge.replace(at, 8, "Rank " + rank + " ");
        const auto e = error_of([&] { parse_nccl_tests_text(huge, a3mega); });
        CHECK(e.field().rfind("line ", 0) == 0);
        CHECK(e.problem().find("rank number") != std::string::npos);
    }
    // JSON: devices x nthreads x ngpus in int64 wrapped into a negative int; each factor and the product are bounded.
    std::string many = json_sample;
    const auto g = many.find(R"("ngpus":8)");
    REQUIRE(g != std::string::npos);
    many.replace(g, 9, R"("ngpus":4611686018427387904)");
    CHECK(error_of([&] { parse_nccl_tests_json(many, "x.json"); }).field() == "/config/ngpus");
    many = json_sample;
    many.replace(many.find(R"("ngpus":8)"), 9, R"("ngpus":1048576)");
    many.replace(many.find(R"("nthreads":1)"), 12, R"("nthreads":2)");
    CHECK(error_of([&] { parse_nccl_tests_json(many, "x.json"); }).field() == "/config/devices");
}
