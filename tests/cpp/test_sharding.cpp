// analysis/sharding.hpp: parameters per device under tp / pp / ep, by hand.
#include <doctest/doctest.h>

#include "capplan/analysis/sharding.hpp"
#include "capplan/spec/hf_config.hpp"
#include "test_support.hpp"

using namespace capplan;

namespace {
parallelism_spec layout(int tp, int pp = 1, int ep = 1, int etp = 0) {
    parallelism_spec p;
    p.tp = tp;
    p.pp = pp;
    p.ep = ep;
    p.etp = etp ? etp : (ep > 1 ? 1 : tp);
    return p;
}
}  // namespace

TEST_CASE("one device holds exactly the whole model, for every catalog model") {
    const auto& cat = test::shipped_catalog();
    for (const auto& name : cat.names(entry_kind::model)) {
        const auto& m = cat.model(name);
        const auto w = shard_weights(m, layout(1));
        CAPTURE(name);
        CHECK(w.problems.empty());
        CHECK(w.per_device().total() == static_cast<double>(count_parameters(m).total()));
    }
}

TEST_CASE("pipeline stages: contiguous, extra layers to the middle stages first") {
    // 126 layers over 8 stages: 15 each, 6 extra to stages 1..6.
    CHECK(detail::stage_layers(126, 8) == std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15});
    CHECK(detail::stage_layers(80, 4) == std::vector<int>{20, 20, 20, 20});
    CHECK(detail::stage_layers(5, 2) == std::vector<int>{2, 3});  // no middle stage: the last takes it
}

TEST_CASE("Llama-3.1-405B pp=8 tp=8: the largest stage is a 16-layer middle stage") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-405B");
    const auto w = shard_weights(m, layout(8, 8));
    // Per layer per rank: q,o 2 x 16384 x 16384 / 8 = 67,108,864; k,v 2 x 16384 x 1024 / 8 = 4,194,304;
    // MLP 3 x 16384 x 53248 / 8 = 327,155,712; norms 2 x 16384 = 32,768 -> 398,491,648.
    // Last stage: 15 layers + final norm 16,384 + LM head 128256 x 16384 / 8 = 262,668,288.
    // Middle: 16 x 398,491,648 = 6,375,866,368 > last: 5,977,374,720 + 262,684,672 = 6,240,059,392.
    CHECK(w.largest_stage == 1);
    CHECK(w.per_device().total() == 6'375'866'368.0);
    CHECK(w.stages[7].params.total() == 6'240'059'392.0);
}

TEST_CASE("KV heads are replicated when tp exceeds them") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-70B");  // 8 KV heads of 128
    const auto w8 = detail::layer_on_device(m, 0, layout(8));
    const auto w16 = detail::layer_on_device(m, 0, layout(16));
    // tp 8: one KV head per rank (k,v: 2 x 8192 x 128); tp 16: still one, not half.
    const double q_o_mlp = 2.0 * 8192 * 8192 + 3.0 * 8192 * 28672;
    CHECK(w8.block_linear == q_o_mlp / 8 + 2.0 * 8192 * 128);
    CHECK(w16.block_linear == q_o_mlp / 16 + 2.0 * 8192 * 128);
}

TEST_CASE("MLA down-projections are replicated over tp") {
    const auto& m = test::shipped_catalog().model("DeepSeek-V3");
    const auto d = detail::layer_on_device(m, 0, layout(8));
    // q_a 7168 x 1536 and kv_a 7168 x 576 whole; q_b 1536 x 128 x 192, kv_b 512 x 128 x 256, o 128 x 128 x 7168 / 8;
    // dense MLP 3 x 7168 x 18432 / 8.
    const double expected = 7168.0 * 1536 + 7168.0 * 576 +
                            (1536.0 * 128 * 192 + 512.0 * 128 * 256 + 128.0 * 128 * 7168 + 3.0 * 7168 * 18432) / 8;
    CHECK(d.block_linear == expected);
}

TEST_CASE("a tied LM head is a second copy on a separate last stage") {
    const auto& m = test::shipped_catalog().model("Llama-3.2-1B");  // tied, vocab 128256 x 2048
    const double head = 128256.0 * 2048;
    const auto one = shard_weights(m, layout(1, 1));
    const auto two = shard_weights(m, layout(1, 2));
    CHECK(two.stages[0].params.total() + two.stages[1].params.total() == one.per_device().total() + head);
}

TEST_CASE("layouts that cannot split the model are reported, not thrown") {
    const auto& cat = test::shipped_catalog();
    CHECK(shard_weights(cat.model("Llama-3.1-8B"), layout(3)).problems.size() == 2);  // heads 32, kv 8
    CHECK(shard_weights(cat.model("Mixtral-8x7B"), layout(1, 1, 3)).problems.size() == 1);
    CHECK(shard_weights(cat.model("Llama-3.2-1B"), layout(1, 17)).problems.size() == 1);
}
