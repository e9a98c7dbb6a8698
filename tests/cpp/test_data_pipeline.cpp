// analysis/data_pipeline.hpp: read demand against storage supply, by hand.
#include <doctest/doctest.h>

#include "capplan/analysis/data_pipeline.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

TEST_CASE("token data: 4 B per token for a 128K vocabulary; NFS per client x nodes") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    auto sys = test::shipped_catalog().system("DGX-H100");
    sys.count = 16;  // 2 nodes
    sys.storage = test::shipped_catalog().storage("NFS");  // 2 GB/s per client (one mount per node)
    const auto r = data_pipeline(m, sys, 1.0e6, 8192);
    CHECK(r.needed.in(MB / s) == doctest::Approx(4.0));  // 1e6 tokens/s x 4 B
    CHECK(r.supplied.in(GB / s) == doctest::Approx(4.0));  // 2 nodes x 2 GB/s
    CHECK(r.wait_fraction == 0.0);
    CHECK(r.bottleneck == "none");
}

TEST_CASE("image-like samples starve on NFS: wait = 1 - supply / demand") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    auto sys = test::shipped_catalog().system("DGX-H100");
    sys.storage = test::shipped_catalog().storage("NFS");
    data_pipeline_options o;
    o.sample_size = 1.0 * MB;
    // 8192 tokens/s at seq 1 -> 8192 samples/s x 1 MB = 8.192 GB/s against 2 GB/s: wait 1 - 2/8.192
    const auto r = data_pipeline(m, sys, 8192.0, 1, o);
    CHECK(r.wait_fraction == doctest::Approx(1.0 - 2.0 / 8.192));
    CHECK(r.bottleneck == "storage bandwidth");
    o.decode_samples_per_s_per_node = 1000.0;  // the host decodes 1000 samples/s: 1 - 1000/8192
    CHECK(data_pipeline(m, sys, 8192.0, 1, o).wait_fraction == doctest::Approx(1.0 - 1000.0 / 8192));
}

TEST_CASE("a fast remote tier is capped by the nodes' own storage links") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    auto sys = test::shipped_catalog().system("DGX-H100");
    sys.count = 16;  // 2 nodes, each with two 200 Gb/s storage links: 50 GB/s
    storage_spec fast = test::shipped_catalog().storage("NFS");
    fast.read_bandwidth = 80.0 * GB / s;  // per client, above the links
    sys.storage = fast;
    data_pipeline_options o;
    o.sample_size = 10.0 * MB;
    // 20,000 samples/s x 10 MB = 200 GB/s wanted; 2 x 80 GB/s offered, capped at 2 x 50 GB/s: wait 1 - 100/200.
    const auto r = data_pipeline(m, sys, 20000.0, 1, o);
    CHECK(r.supplied.in(GB / s) == doctest::Approx(100.0));
    CHECK(r.wait_fraction == doctest::Approx(0.5));
    CHECK(r.bottleneck == "storage network");
    sys.storage_network.reset();  // over the eight 400 Gb/s compute NICs (400 GB/s a node) the tier binds again
    const auto nics = data_pipeline(m, sys, 20000.0, 1, o);
    CHECK(nics.supplied.in(GB / s) == doctest::Approx(160.0));
    CHECK(nics.bottleneck == "storage bandwidth");
}
