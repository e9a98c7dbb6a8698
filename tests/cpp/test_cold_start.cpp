// analysis/cold_start.hpp: the load chain by hand with catalog entries, its switches, properties,
// bad input, and a published vLLM load measurement.
#include <doctest/doctest.h>

#include <string>

#include "capplan/analysis/cold_start.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/dtype.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {

const catalog& cat() { return test::shipped_catalog(); }

// Llama-3.1-70B in bf16 at tp = 8: one device's shard.
data_size llama70b_tp8() {
    parallelism_spec p;
    p.tp = 8;
    return device_weight_bytes(shard_weights(cat().model("Llama-3.1-70B"), p).per_device(), find_format("bf16"));
}

const chain_stage_time* find(const cold_start_result& r, const std::string& stage) {
    for (const auto& c : r.chain)
        if (c.stage == stage) return &c;
    return nullptr;
}

double seconds(const cold_start_result& r, const std::string& stage) {
    const auto* c = find(r, stage);
    REQUIRE(c != nullptr);
    return c->time.in(s);
}

bool has_note(const cold_start_result& r, const std::string& part) {
    for (const auto& n : r.notes)
        if (n.find(part) != std::string::npos) return true;
    return false;
}

cold_start_options no_engine() {
    cold_start_options o;
    o.engine_init = 0.0 * s;
    return o;
}

// A rate in B/s from GB/s, for the hand arithmetic below.
double rate(double gb_per_s) { return (gb_per_s * GB / s).in(B / s); }

// HGX-H200's host from the catalog: its host link and one socket's DRAM, both known.
cold_start_host hgx_h200_host() {
    const cold_start_host h = cold_start_host_of(cat().system("HGX-H200"), cat());
    REQUIRE(h.host_link);
    REQUIRE(h.memory_per_socket);
    return h;
}

}  // namespace

TEST_CASE("Llama-3.1-70B bf16 over 8x H200 from 8x NVMe Gen4: every link by hand") {
    const system_spec h200 = cat().system("HGX-H200");  // NVMe-Gen4-8x, PCIe-Gen5, 2 x DDR5-4800-8ch
    const data_size w = llama70b_tp8();
    const double node = 8 * w.in(B);
    CHECK((8 * w).in(GB) == doctest::Approx(141.1).epsilon(0.001));

    // Defaults: sequential (vLLM's safetensors loader), pageable, page cache cold.
    const auto r = cold_start_time(w, 8, h200, {}, cat());
    // storage: 141.1 GB / 56 GB/s (8 x 7000 MB/s, per node) = 2.52 s
    CHECK(seconds(r, "storage") == doctest::Approx(node / rate(56)));
    CHECK(seconds(r, "storage") == doctest::Approx(2.52).epsilon(0.002));
    // host memory: one CPU copy, read + write, at 2 sockets x 307.2 GB/s: 2 x 141.1 / 614.4 = 0.459 s
    CHECK(seconds(r, "host_memory") == doctest::Approx(2 * node / rate(614.4)));
    CHECK(find(r, "host_memory")->bytes.in(B) == doctest::Approx(2 * node));
    // host link: pageable, 10 GB/s per device, 8 in parallel: 17.64 GB / 10 GB/s = 1.764 s
    CHECK(seconds(r, "host_link") == doctest::Approx(w.in(B) / rate(10)));
    CHECK(find(r, "host_link")->bandwidth.in(GB / s) == doctest::Approx(80.0));
    // engine init: the measured default, 6.0 + 35.0 s
    CHECK(seconds(r, "engine_init") == doctest::Approx(41.0));
    const double load = node / rate(56) + 2 * node / rate(614.4) + w.in(B) / rate(10);
    CHECK(r.load.in(s) == doctest::Approx(load));
    CHECK(r.total.in(s) == doctest::Approx(load + 41.0));
    CHECK(r.bottleneck == "engine_init");
    // utilization = time / total, and sequential stages add up to the whole.
    double u = 0;
    for (const auto& c : r.chain) {
        CHECK(c.utilization == doctest::Approx(c.time.in(s) / r.total.in(s)));
        u += c.utilization;
    }
    CHECK(u == doctest::Approx(1.0));

    // Pinned buffers: the link's measured 55.43 GB/s H2D (nvbandwidth on 8x H200); 8 x 55.43 = 443 GB/s
    // stays under the 614.4 GB/s of DRAM.
    cold_start_options pinned;
    pinned.pinned = true;
    const auto p = cold_start_time(w, 8, h200, pinned, cat());
    CHECK(seconds(p, "host_link") == doctest::Approx(w.in(B) / rate(55.43)));
    CHECK(p.total < r.total);
}

TEST_CASE("page cache warm removes the storage stage; GDS removes the host stage") {
    const system_spec h200 = cat().system("HGX-H200");
    const data_size w = llama70b_tp8();
    const double node = 8 * w.in(B);

    cold_start_options warm;
    warm.page_cache_warm = true;
    const auto a = cold_start_time(w, 8, h200, warm, cat());
    CHECK(find(a, "storage") == nullptr);
    CHECK(find(a, "host_memory") != nullptr);
    CHECK(a.load.in(s) == doctest::Approx(2 * node / rate(614.4) + w.in(B) / rate(10)));
    CHECK(has_note(a, "page cache warm"));

    cold_start_options gds;
    gds.gpudirect_storage = true;
    const auto g = cold_start_time(w, 8, h200, gds, cat());
    CHECK(find(g, "host_memory") == nullptr);
    CHECK(find(g, "storage") != nullptr);
    // Storage DMAs straight into GPU memory over the pinned-rate link: one transfer, max(2.52, 0.32) s.
    CHECK(seconds(g, "host_link") == doctest::Approx(w.in(B) / rate(55.43)));
    CHECK(g.load.in(s) == doctest::Approx(node / rate(56)));
    // GDS bypasses the page cache: a warm cache changes nothing.
    gds.page_cache_warm = true;
    CHECK(cold_start_time(w, 8, h200, gds, cat()).load.in(s) == doctest::Approx(g.load.in(s)));
}

TEST_CASE("overlapped loaders take the slowest link, with all DRAM traffic counted") {
    const system_spec h200 = cat().system("HGX-H200");
    const data_size w = llama70b_tp8();
    const double node = 8 * w.in(B);
    cold_start_options o = no_engine();
    o.overlapped = true;
    o.pinned = true;
    const auto r = cold_start_time(w, 8, h200, o, cat());
    // DRAM: storage writes 1, the copy reads and writes 2, the DMA reads 1: 4 x 141.1 / 614.4 = 0.919 s
    CHECK(seconds(r, "host_memory") == doctest::Approx(4 * node / rate(614.4)));
    CHECK(r.load.in(s) == doctest::Approx(node / rate(56)));  // storage, 2.52 s, is the slowest
    CHECK(r.bottleneck == "storage");
    o.page_cache_warm = true;  // no storage DMA into DRAM: 3 B per byte
    CHECK(seconds(cold_start_time(w, 8, h200, o, cat()), "host_memory") == doctest::Approx(3 * node / rate(614.4)));
}

TEST_CASE("object store scales with connections until the NIC, then the host, bounds it") {
    system_spec sys = cat().system("HGX-H200");
    sys.storage = cat().storage("ObjectStore-S3");  // 5 Gb/s = 0.625 GB/s per connection
    const data_size w = llama70b_tp8();
    const double node = 8 * w.in(B);
    cold_start_options o = no_engine();
    o.pinned = true;
    o.storage_network = 100 * Gbit / s;  // a 100 Gb/s front-end NIC: 12.5 GB/s
    double last = 1e300;
    for (int n : {1, 2, 8, 16, 20, 32, 64}) {
        o.connections = n;
        const auto r = cold_start_time(w, 8, sys, o, cat());
        const double expect = node / rate(std::min(n * 0.625, 12.5));
        CHECK(seconds(r, "storage") == doctest::Approx(expect));
        CHECK(seconds(r, "storage") <= last);
        last = seconds(r, "storage");
        CHECK(has_note(r, "first-byte latency unknown"));
        if (n > 20) CHECK(has_note(r, "capped by the node's network"));
    }
    // 16 connections: 141.1 GB / 10 GB/s = 14.1 s.
    o.connections = 16;
    CHECK(seconds(cold_start_time(w, 8, sys, o, cat()), "storage") == doctest::Approx(14.11).epsilon(0.002));

    // The node's two 200 GbE storage ports (the HGX RA's) cap it at 50 GB/s; without them the scale-out NICs do:
    // 8 x 400 Gb/s = 400 GB/s. With enough connections an overlapped loader is then bound by host DRAM
    // (4 x 141.1 GB / 614.4 GB/s).
    cold_start_options big = no_engine();
    big.pinned = true;
    big.overlapped = true;
    big.connections = 1000;  // 625 GB/s asked
    CHECK(find(cold_start_time(w, 8, sys, big, cat()), "storage")->bandwidth.in(GB / s) == doctest::Approx(50.0));
    sys.storage_network.reset();
    const auto r = cold_start_time(w, 8, sys, big, cat());
    CHECK(find(r, "storage")->bandwidth.in(GB / s) == doctest::Approx(400.0));
    CHECK(has_note(r, "scale-out NICs"));
    CHECK(r.bottleneck == "host_memory");
    CHECK(r.load.in(s) == doctest::Approx(4 * node / rate(614.4)));
    // GDS does not apply to HTTP object stores.
    big.gpudirect_storage = true;
    const auto g = cold_start_time(w, 8, sys, big, cat());
    CHECK(find(g, "host_memory") != nullptr);
    CHECK(has_note(g, "gpudirect_storage ignored"));
}

TEST_CASE("the bottleneck is the longest stage") {
    const system_spec h200 = cat().system("HGX-H200");
    const data_size w = llama70b_tp8();
    CHECK(cold_start_time(w, 8, h200, {}, cat()).bottleneck == "engine_init");       // 41 s
    CHECK(cold_start_time(w, 8, h200, no_engine(), cat()).bottleneck == "storage");  // 2.52 > 1.76 s
    cold_start_options warm = no_engine();
    warm.page_cache_warm = true;
    CHECK(cold_start_time(w, 8, h200, warm, cat()).bottleneck == "host_link");  // 1.76 > 0.46 s
    system_spec nfs = h200;
    nfs.storage = cat().storage("NFS");  // 2 GB/s per mount
    const auto r = cold_start_time(w, 8, nfs, {}, cat());
    CHECK(r.bottleneck == "storage");  // 141.1 GB / 2 GB/s = 70.6 s > 41 s
    CHECK(seconds(r, "storage") == doctest::Approx(8 * w.in(B) / rate(2)));
}

TEST_CASE("storage scopes: per drive, per client, aggregate shared by nodes") {
    const data_size w = llama70b_tp8();
    const double node = 8 * w.in(B);
    system_spec sys = cat().system("HGX-H200");
    sys.storage_network.reset();  // remote tiers over the compute NICs (400 GB/s): the case is the tiers' own scopes
    sys.storage = cat().storage("NVMe-Gen4");  // one drive, 7000 MB/s
    CHECK(seconds(cold_start_time(w, 8, sys, no_engine(), cat()), "storage") == doctest::Approx(node / rate(56)));
    cold_start_options four = no_engine();
    four.drives = 4;
    CHECK(seconds(cold_start_time(w, 8, sys, four, cat()), "storage") == doctest::Approx(node / rate(28)));

    sys.storage = cat().storage("NFS-RDMA");  // 92.6 GB/s per client, under the 400 GB/s of NICs
    CHECK(seconds(cold_start_time(w, 8, sys, no_engine(), cat()), "storage") == doctest::Approx(node / rate(92.6)));

    storage_spec shared;
    shared.name = "shared-fs";
    shared.kind = "parallel_fs";
    shared.scope = "aggregate";
    shared.read_bandwidth = 100 * GB / s;
    sys.storage = shared;
    sys.count = 32;  // 4 nodes of 8
    const auto r = cold_start_time(w, 8, sys, no_engine(), cat());
    CHECK(seconds(r, "storage") == doctest::Approx(node / rate(25)));
    CHECK(has_note(r, "shared by the 4 nodes"));

    // A per-client tier with the deployment's aggregate limit (issue #20): NFS-RDMA's 92.6 GB/s per client, the
    // file system's 100 GB/s shared by 4 nodes = 25 GB/s each binds; on one node the client's 92.6 binds.
    sys.storage = cat().storage("NFS-RDMA");
    sys.storage->aggregate_read_bandwidth = 100 * GB / s;
    const auto limited = cold_start_time(w, 8, sys, no_engine(), cat());
    CHECK(seconds(limited, "storage") == doctest::Approx(node / rate(25)));
    CHECK(has_note(limited, "the aggregate limit binds"));
    sys.count = 8;
    CHECK(seconds(cold_start_time(w, 8, sys, no_engine(), cat()), "storage") == doctest::Approx(node / rate(92.6)));
    // Without a known aggregate, many nodes on a shared service are flagged as optimistic.
    sys.storage->aggregate_read_bandwidth.reset();
    sys.count = 32;
    CHECK(has_note(cold_start_time(w, 8, sys, no_engine(), cat()), "no aggregate limit known: 4 nodes"));
}

TEST_CASE("never faster with less bandwidth") {
    const data_size w = llama70b_tp8();
    const system_spec base = cat().system("HGX-H200");
    const cold_start_host host = hgx_h200_host();
    CHECK(host.sockets == 2);
    for (int mode = 0; mode < 16; ++mode) {
        cold_start_options o;
        o.pinned = mode & 1;
        o.overlapped = mode & 2;
        o.page_cache_warm = mode & 4;
        o.gpudirect_storage = mode & 8;
        for (int which = 0; which < 3; ++which) {
            double last = 0;
            for (double f : {1.0, 0.5, 0.2, 0.05}) {
                system_spec sys = base;
                cold_start_host h = host;
                if (which == 0) sys.storage->read_bandwidth = f * *base.storage->read_bandwidth;
                if (which == 1) h.memory_per_socket->read_bandwidth = f * *host.memory_per_socket->read_bandwidth;
                if (which == 2) {
                    h.host_link->measured_bandwidth_per_direction =
                        f * *host.host_link->measured_bandwidth_per_direction;
                    h.host_link->bandwidth_per_direction = f * *host.host_link->bandwidth_per_direction;
                }
                o.host = h;
                const double t = cold_start_time(w, 8, sys, o, cat()).total.in(s);
                CHECK(t >= last);
                last = t;
            }
        }
        // More devices per node on the same storage: never faster either.
        double last = 0;
        for (int d = 1; d <= 8; ++d) {
            o.host.reset();
            const double t = cold_start_time(w, d, base, o, cat()).total.in(s);
            CHECK(t >= last);
            last = t;
        }
    }
}

TEST_CASE("facts the catalog lacks are left out and said so") {
    // L40S server: PCIe-Gen4 with no measured rate, no host DRAM entry, no storage tier.
    const system_spec sys = cat().system("L40S-PCIe-Server");
    const data_size w = 10 * GB;
    cold_start_options o = no_engine();
    o.pinned = true;
    const auto r = cold_start_time(w, 8, sys, o, cat());
    CHECK(find(r, "storage") == nullptr);
    CHECK(find(r, "host_memory") == nullptr);
    CHECK(has_note(r, "no storage tier"));
    CHECK(has_note(r, "host memory bandwidth unknown"));
    // Gen4 raw 31.5 GB/s x the Gen5 measured efficiency 55.43 / 63.
    CHECK(find(r, "host_link")->bandwidth.in(GB / s) == doctest::Approx(8 * 31.5 * 55.43 / 63));
    CHECK(has_note(r, "PCIe-Gen5 measured / raw"));
    // NVLink-C2C (GB200) has no bandwidth in the catalog: no host_link stage, only the engine.
    const auto gb = cold_start_time(w, 4, cat().system("GB200-NVL72"), {}, cat());
    CHECK(gb.chain.size() == 1);
    CHECK(has_note(gb, "NVLink-C2C: bandwidth unknown"));
    // host.sockets, plain or sourced, or null.
    CHECK(cold_start_host_of(cat().system("MI300X-Platform"), cat()).sockets == 2);
    CHECK(cold_start_host_of(cat().system("TPU-v5p-Slice"), cat()).sockets == 0);
    CHECK(cold_start_host_of(cat().system("DGX-A100"), cat()).host_link->name == "PCIe-Gen4");
}

TEST_CASE("bad input errors name the field") {
    const system_spec h200 = cat().system("HGX-H200");
    auto field_of = [&](auto&& call) -> std::string {
        try {
            call();
        } catch (const config_error& e) {
            return e.field();
        }
        return "(no error)";
    };
    CHECK(field_of([&] { cold_start_time(10 * GB, 0, h200, {}, cat()); }) == "devices_per_node");
    CHECK(field_of([&] { cold_start_time(10 * GB, 9, h200, {}, cat()); }) == "devices_per_node");
    CHECK(field_of([&] { cold_start_time(-1 * GB, 8, h200, {}, cat()); }) == "weights_per_device");
    cold_start_options o;
    o.connections = 0;
    CHECK(field_of([&] { cold_start_time(10 * GB, 8, h200, o, cat()); }) == "/cold_start/connections");
    o = {};
    o.engine_init = -1 * s;
    CHECK(field_of([&] { cold_start_time(10 * GB, 8, h200, o, cat()); }) == "/cold_start/engine_init");
    o = {};
    o.pageable_rate = 0 * GB / s;
    CHECK(field_of([&] { cold_start_time(10 * GB, 8, h200, o, cat()); }) == "/cold_start/pageable_rate");
    o = {};
    o.drives = 0;
    CHECK(field_of([&] { cold_start_time(10 * GB, 8, h200, o, cat()); }) == "/cold_start/drives");
    // Zero bytes is allowed: only the engine's own start remains.
    const auto r = cold_start_time(data_size{}, 8, h200, {}, cat());
    CHECK(r.load.in(s) == 0.0);
    CHECK(r.total.in(s) == doctest::Approx(41.0));
}

TEST_CASE("published: vLLM loading from a warm page cache on an H100 NVL") {
    // upb-cn/vllm-startup-profiler @9ef96f4 (Kabakibo et al., "Breaking the Ice", MLSys 2026),
    // figures/figure-13/case0/avg_comparison_results.json: vLLM 0.10.1.1, weights in host RAM, mean of
    // 5 runs of "load_weights": 1.632 s for Llama-2-7B and 3.16 s for Llama-2-13B. Weights: 12.55 GiB
    // ("weights memory", figure-13/case1/iterations/1/output_model_llama2-7b-hf.txt) and 24.28 GiB
    // ("Model loading took 24.2841 GiB", experiments/node5/.../output_model_llama2-13b-hf.txt). The GPU
    // has 93 GiB (the 7B log), an H100 NVL: node n1 of figures/README.md, one AMD EPYC 9354 (Genoa:
    // 12 channels of DDR5-4800). The model, a pageable copy at 10 GB/s plus the host copy, runs ~14 %
    // fast (vLLM's per-tensor Python loop is not modelled). Tolerance 20 %.
    system_spec sys;
    sys.accelerator = cat().accelerator("H100-PCIe");
    cold_start_options o = no_engine();
    o.page_cache_warm = true;
    o.host = cold_start_host{cat().link("PCIe-Gen5"), cat().storage("DDR5-4800-12ch"), 1};
    const auto a = cold_start_time(12.55 * GiB, 1, sys, o, cat());
    CHECK(a.load.in(s) == doctest::Approx(1.632).epsilon(0.20));
    CHECK(a.bottleneck == "host_link");
    const auto b = cold_start_time(24.28 * GiB, 1, sys, o, cat());
    CHECK(b.load.in(s) == doctest::Approx(3.16).epsilon(0.20));
}

TEST_CASE("a partial host override keeps the catalog's facts for the fields it leaves out") {
    const data_size w = llama70b_tp8();
    const system_spec base = cat().system("HGX-H200");
    const cold_start_host full = hgx_h200_host();
    cold_start_options catalog_only, only_sockets, only_link, everything;
    only_sockets.host = cold_start_host{std::nullopt, std::nullopt, 1};
    cold_start_host link = full;
    link.memory_per_socket.reset(), link.sockets = 0;
    link.host_link->measured_bandwidth_per_direction = 0.5 * *full.host_link->measured_bandwidth_per_direction;
    only_link.host = link;
    cold_start_host all = full;
    all.sockets = 1;
    all.host_link = link.host_link;
    everything.host = all;
    for (auto* o : {&catalog_only, &only_sockets, &only_link, &everything}) o->pinned = true;
    auto total = [&](const cold_start_options& o) { return cold_start_time(w, 8, base, o, cat()).total.si(); };
    // One socket given, the rest from the catalog = the catalog's host with one socket; likewise a slower link.
    cold_start_host one_socket = full;
    one_socket.sockets = 1;
    cold_start_options spelled = catalog_only;
    spelled.host = one_socket;
    CHECK(total(only_sockets) == total(spelled));
    cold_start_host slower = full;
    slower.host_link = link.host_link;
    spelled.host = slower;
    CHECK(total(only_link) == total(spelled));
    CHECK(total(only_link) > total(catalog_only));
    CHECK(total(everything) >= total(only_link));
}

TEST_CASE("the node's network to remote storage: given, the node's own storage links, else its compute NICs") {
    std::vector<std::string> notes;
    const detail::note_sink note(notes);
    // DGX H100: two 200 Gb/s storage-fabric links (the SuperPOD RA's Table 8) = 50 GB/s, not its 8 x 400 Gb/s NICs.
    system_spec dgx = cat().system("DGX-H100");
    REQUIRE(dgx.storage_network);
    CHECK(dgx.storage_network->si() == doctest::Approx(2 * 200e9 / 8));
    CHECK(detail::node_storage_network(dgx, std::nullopt, note)->si() == doctest::Approx(50e9));
    CHECK(notes.back().find("own storage links") != std::string::npos);
    CHECK(detail::node_storage_network(dgx, 12.5 * GB / s, note)->si() == doctest::Approx(12.5e9));  // the caller's
    dgx.storage_network.reset();  // storage over the compute NICs: 8 x 400 Gb/s
    CHECK(detail::node_storage_network(dgx, std::nullopt, note)->si() == doctest::Approx(8 * 400e9 / 8));
    dgx.scale_out.reset();
    CHECK_FALSE(detail::node_storage_network(dgx, std::nullopt, note));
    CHECK(notes.back().find("unknown") != std::string::npos);
    // HGX H200 and B200 nodes: the HGX AI Factory RA's two 200 GbE ports; presets without storage links in the catalog
    // (GB200-NVL72) keep the compute NICs.
    CHECK(cat().system("HGX-B200").storage_network->si() == doctest::Approx(50e9));
    CHECK_FALSE(cat().system("GB200-NVL72").storage_network);
}
