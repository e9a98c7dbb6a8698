// analysis/checkpoint.hpp: checkpoint sizes against the 14 B/parameter layout of DeepSpeed and Megatron, save and
// restore times by hand with catalog tiers, Young's and Daly's intervals against Daly 2006's published figures,
// the Llama 3 failure rate, goodput by hand, monotonicity and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "capplan/analysis/checkpoint.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {

const catalog& cat() { return test::shipped_catalog(); }
const model_spec& model(const char* name) { return cat().model(name); }

parallelism_spec layout(int tp, int dp, int pp = 1) {
    parallelism_spec p;
    p.tp = tp;
    p.etp = tp;
    p.dp = dp;
    p.pp = pp;
    return p;
}

checkpoint_size size_of(const char* name, const parallelism_spec& p, const training_spec& t = {},
                        const checkpoint_options& o = {}) {
    const model_spec& m = model(name);
    return checkpoint_bytes(m, count_parameters(m), precision_spec{}, t, p, o);
}

const checkpoint_stage* find(const std::vector<checkpoint_stage>& v, const std::string& name) {
    for (const auto& x : v)
        if (x.stage == name) return &x;
    return nullptr;
}

double rng_bytes() { return (16.0 * KiB).in(B); }
double gbps(double g) { return (g * GB / s).in(B / s); }

// Llama-3.1-70B at tp = 8, dp = 4 (four HGX-H200 nodes), Megatron distributed optimizer.
training_spec dist_opt() {
    training_spec t;
    t.distributed_optimizer = true;
    return t;
}
double llama70_device_params() { return shard_weights(model("Llama-3.1-70B"), layout(8, 4)).per_device().total(); }

}  // namespace

TEST_CASE("checkpoint size: 14 B per parameter in mixed-precision Adam, gradients excluded") {
    // bf16 weights 2 B + fp32 master 4 B + fp32 exp_avg and exp_avg_sq 8 B = 14 B. DeepSpeed writes the 16-bit
    // module (mp_rank_*_model_states.pt) and the fp32 partition with both moments (zero_pp_rank_*_optim_states.pt:
    // single_partition_of_fp32_groups, exp_avg, exp_avg_sq); Megatron's distributed optimizer saves
    // {"param": fp32 main param, exp_avg, exp_avg_sq}. Gradients are not in either.
    const double p7 = 6'738'415'616.0;  // Llama-2-7B
    const auto s7 = size_of("Llama-2-7B", layout(1, 1));
    CHECK(s7.bytes_per_parameter == 14.0);
    CHECK(s7.weights.in(B) == 2 * p7);
    CHECK(s7.master_weights.in(B) == 4 * p7);
    CHECK(s7.optimizer.in(B) == 8 * p7);
    CHECK(s7.rng_and_metadata.in(B) == rng_bytes());
    CHECK(s7.total.in(B) == 14 * p7 + rng_bytes());  // 94.34 GB
    CHECK(s7.total.in(GB) == doctest::Approx(94.34).epsilon(0.001));

    // Llama-3.1-70B: 14 x 70,553,706,496 = 987,751,890,944 B, + 32 ranks' RNG states.
    const auto s70 = size_of("Llama-3.1-70B", layout(8, 4), dist_opt());
    CHECK(s70.bytes_per_parameter == 14.0);  // fp32 main gradients are kept in memory (18 B), not saved
    CHECK(s70.total.in(B) == 987'751'890'944.0 + 32 * rng_bytes());
    CHECK(s70.ranks == 32);

    // BLOOM-176B (176,247,271,424 parameters, bigscience/bloom model card; DeepSpeed BF16Optimizer, fp32 master
    // and Adam states): 14 x P = 2.467 TB = 2.244 TiB against the published "2.3TB checkpoint" (stas00/ml-engineering,
    // BLOOM chronicles; du -h prints binary units). The model spec only places states on ranks; the total is P's.
    parameter_breakdown bloom;
    bloom.embedding = 3'596'615'680;
    bloom.attention = 176'247'271'424 - 3'596'615'680;
    const auto sb = checkpoint_bytes(model("GPT-3-175B"), bloom, precision_spec{}, {}, layout(1, 1));
    CHECK(sb.total.in(TB) == doctest::Approx(2.4675).epsilon(1e-4));
    CHECK(sb.total.in(TiB) == doctest::Approx(2.3).epsilon(0.03));

    // The precision policy decides: bf16 moments 2 + 4 + 4; no master copy 2 + 8; SGD 2 + 4 + 4; Adafactor 2 + 4.
    const model_spec& m = model("Llama-2-7B");
    const auto pb = count_parameters(m);
    auto per_param = [&](training_spec t) { return checkpoint_bytes(m, pb, precision_spec{}, t, layout(1, 1)).bytes_per_parameter; };
    training_spec t;
    t.optimizer_state_format = "bf16";
    CHECK(per_param(t) == 10.0);
    t = {};
    t.master_weights = false;
    CHECK(per_param(t) == 10.0);
    t = {};
    t.optimizer = "sgd";
    CHECK(per_param(t) == 10.0);
    t = {};
    t.optimizer = "adafactor";
    CHECK(per_param(t) == 6.0);
}

TEST_CASE("one copy is written, sharded over the ranks that hold distinct states") {
    const double p7 = 6'738'415'616.0;
    // Llama-2-7B over 8 data-parallel ranks, fully parallel save (Megatron's default): 14P/8 each.
    const auto fp = size_of("Llama-2-7B", layout(1, 8));
    CHECK(fp.writers == 8);
    CHECK(fp.per_rank_max.in(B) == doctest::Approx(14 * p7 / 8 + rng_bytes()));
    CHECK(fp.total.in(B) == 14 * p7 + 8 * rng_bytes());
    // Plain DDP, one replica writes: rank 0 writes all 14P; on restore every rank reads 14P.
    checkpoint_options single;
    single.fully_parallel_save = false;
    const auto ddp = size_of("Llama-2-7B", layout(1, 8), {}, single);
    CHECK(ddp.writers == 1);
    CHECK(ddp.per_rank_max.in(B) == doctest::Approx(14 * p7 + rng_bytes()));
    CHECK(ddp.restore_per_rank_max.in(B) == doctest::Approx(14 * p7 + rng_bytes()));
    CHECK(ddp.restore_total.in(B) == doctest::Approx(8 * (14 * p7 + rng_bytes())));
    // Distributed optimizer, not fully parallel: rank 0 writes its bf16 weights 2P + its 12P/8 optimizer shard.
    const auto dopt = size_of("Llama-2-7B", layout(1, 8), dist_opt(), single);
    CHECK(dopt.writers == 8);
    CHECK(dopt.per_rank_max.in(B) == doctest::Approx(2 * p7 + 12 * p7 / 8 + rng_bytes()));
    // ZeRO-3: every rank holds and writes its own 14P/8 either way.
    training_spec z3;
    z3.zero = 3;
    CHECK(size_of("Llama-2-7B", layout(1, 8), z3, single).per_rank_max.in(B) ==
          doctest::Approx(14 * p7 / 8 + rng_bytes()));
    // A fully parallel load reads each share once.
    checkpoint_options fpl;
    fpl.fully_parallel_load = true;
    const auto loaded = size_of("Llama-2-7B", layout(1, 8), {}, fpl);
    CHECK(loaded.restore_per_rank_max.in(B) == doctest::Approx(14 * p7 / 8 + rng_bytes()));

    // Llama-3.1-70B, tp = 8, dp = 4, distributed optimizer: a rank writes 14/4 B per parameter it holds and reads
    // back 2 + 12/4 B per parameter (its bf16 weights and its optimizer shard).
    const double dev = llama70_device_params();
    const auto s70 = size_of("Llama-3.1-70B", layout(8, 4), dist_opt());
    CHECK(s70.writers == 32);
    CHECK(s70.per_rank_max.in(B) == doctest::Approx(dev * 14 / 4 + rng_bytes()));
    CHECK(s70.restore_per_rank_max.in(B) == doctest::Approx(dev * (2 + 12.0 / 4) + rng_bytes()));
    CHECK(s70.per_rank_max.in(GB) == doctest::Approx(30.87).epsilon(0.001));
}

TEST_CASE("save and restore time by hand: Llama-3.1-70B on four HGX-H200 nodes") {
    const auto sz = size_of("Llama-3.1-70B", layout(8, 4), dist_opt());
    const double rank = sz.per_rank_max.in(B), node = 8 * rank;  // 30.87 GB, 246.97 GB
    const double held = sz.restore_per_rank_max.in(B);           // 44.10 GB
    const system_spec h200 = cat().system("HGX-H200");           // NVMe-Gen4-8x: 34.4 GB/s write, 56 GB/s read

    // Blocking save: host link 30.87 / 55.43 = 0.557 s per GPU, all 8 at once; local NVMe 246.97 / 34.4 = 7.18 s.
    const auto io = checkpoint_time(sz, h200, false, {}, cat());
    REQUIRE(find(io.save_stages, "host_link") != nullptr);
    CHECK(find(io.save_stages, "host_link")->time.in(s) == doctest::Approx(rank / gbps(55.43)));
    CHECK(find(io.save_stages, "network") == nullptr);  // local drives: no NIC in the way
    CHECK(io.save.in(s) == doctest::Approx(node / gbps(34.4)));
    CHECK(io.save.in(s) == doctest::Approx(7.18).epsilon(0.002));
    CHECK(io.stall.in(s) == io.save.in(s));
    CHECK(io.bottleneck == "storage");
    CHECK(io.nodes == 4);
    // Restore: each rank reads its 44.10 GB: 8 x 44.10 / 56 = 6.30 s.
    CHECK(io.restore.in(s) == doctest::Approx(8 * held / gbps(56)));
    CHECK(io.restore_bottleneck == "storage");
    CHECK(io.write_rate.in(B / s) == doctest::Approx(sz.total.in(B) / (node / gbps(34.4))));

    // Async: the training stalls for the PCIe copy only; durable after the copy and the write.
    const auto as = checkpoint_time(sz, h200, true, {}, cat());
    CHECK(as.stall.in(s) == doctest::Approx(rank / gbps(55.43)));
    CHECK(as.stall.in(s) == doctest::Approx(0.557).epsilon(0.002));
    CHECK(as.save.in(s) == doctest::Approx(rank / gbps(55.43) + node / gbps(34.4)));

    // ParallelFS (96 GB/s per client, remote): capped by the node's two 200 GbE storage ports = 50 GB/s (the HGX
    // RA's): 246.97 / 50 = 4.94 s. Over the eight 400 Gb/s compute NICs (400 GB/s, not reached) the client's 96
    // binds: 2.57 s.
    system_spec pfs = h200;
    pfs.storage = cat().storage("ParallelFS");
    const auto p = checkpoint_time(sz, pfs, false, {}, cat());
    CHECK(p.save.in(s) == doctest::Approx(node / gbps(50)));
    REQUIRE(find(p.save_stages, "network") != nullptr);
    CHECK(find(p.save_stages, "network")->time.in(s) == doctest::Approx(node / gbps(50)));
    CHECK(p.bottleneck == "network");
    pfs.storage_network.reset();
    const auto nics = checkpoint_time(sz, pfs, false, {}, cat());
    CHECK(nics.save.in(s) == doctest::Approx(node / gbps(96)));
    CHECK(find(nics.save_stages, "network")->time.in(s) == doctest::Approx(node / gbps(400)));

    // S3: 16 connections x 5 Gb/s = 10 GB/s per node: 24.7 s.
    system_spec s3 = h200;
    s3.storage = cat().storage("ObjectStore-S3");
    CHECK(checkpoint_time(sz, s3, false, {}, cat()).save.in(s) == doctest::Approx(node / gbps(10)));

    // An aggregate tier of 100 GB/s shared by the job: the whole 987.75 GB through it, 9.88 s.
    system_spec agg = pfs;
    agg.storage->scope = "aggregate";
    agg.storage->write_bandwidth = 100.0 * GB / s;
    const auto a = checkpoint_time(sz, agg, false, {}, cat());
    CHECK(a.save.in(s) == doctest::Approx(sz.total.in(B) / gbps(100)));
    CHECK(a.save.in(s) == doctest::Approx(9.88).epsilon(0.002));

    // NFS-RDMA has no write figure: the storage stage is left out and said so; the NICs bound the save.
    system_spec nfs = h200;
    nfs.storage = cat().storage("NFS-RDMA");
    const auto n = checkpoint_time(sz, nfs, false, {}, cat());
    CHECK(find(n.save_stages, "storage") == nullptr);
    CHECK(n.bottleneck == "network");
    bool said = false;
    for (const auto& x : n.notes) said = said || x.find("write bandwidth unknown") != std::string::npos;
    CHECK(said);
}

TEST_CASE("Young and Daly intervals against Daly 2006's figures") {
    // Young 1974: sqrt(2 x 5 min x 24 h) = sqrt(2 x 5 x 1440) min = 120 min.
    CHECK(young_interval(5 * minute, 24 * hour).in(minute) == doctest::Approx(120.0));
    // Daly 2006 Figs. 3-5 (δ = 5 min, R = 10 min): M = 24 h -> τ_opt = 117 min; 6 h -> 57 min; 15 min -> 9.1 min.
    // By hand for 24 h: 120 x (1 + sqrt(5/2880)/3 + (5/2880)/9) - 5 = 116.69 min.
    CHECK(daly_interval(5 * minute, 24 * hour).in(minute) == doctest::Approx(116.69).epsilon(0.0001));
    CHECK(daly_interval(5 * minute, 24 * hour).in(minute) == doctest::Approx(117).epsilon(0.005));
    CHECK(daly_interval(5 * minute, 6 * hour).in(minute) == doctest::Approx(57).epsilon(0.006));
    CHECK(daly_interval(5 * minute, 15 * minute).in(minute) == doctest::Approx(9.1).epsilon(0.005));
    CHECK(young_daly_interval(5 * minute, 6 * hour).in(s) == daly_interval(5 * minute, 6 * hour).in(s));
    // C >= 2M: checkpoint every MTBF.
    CHECK(daly_interval(2 * hour, 1 * hour).in(hour) == 1.0);
    // Small C/M: Daly -> Young - C + C/3.
    const duration c = 10 * s, m = 100 * hour;
    CHECK(daly_interval(c, m).in(s) == doctest::Approx(young_interval(c, m).in(s) - 10 + 10.0 / 3).epsilon(1e-5));
}

TEST_CASE("Llama 3's interruptions give the default failure rate") {
    // 419 unexpected interruptions in 54 days on 16,384 H100s (arXiv:2407.21783 §3.3.4).
    const failure_model f = default_failure_model();
    CHECK(f.per_gpu_hour == doctest::Approx(419.0 / (54 * 24 * 16384.0)));
    CHECK(f.per_gpu_hour == doctest::Approx(1.9733e-5).epsilon(1e-4));
    // The 16,384-GPU cluster fails every 54 x 24 / 419 = 3.093 h ("one failure every three hours").
    CHECK(system_mtbf(f, 16384).in(hour) == doctest::Approx(54 * 24 / 419.0));
    // The same rate charged per node (8 GPUs) gives the same MTBF; both add up.
    failure_model node;
    node.per_node_hour = 8 * f.per_gpu_hour;
    CHECK(system_mtbf(node, 16384, 8).in(hour) == doctest::Approx(54 * 24 / 419.0));
    failure_model both = f;
    both.per_node_hour = node.per_node_hour;
    CHECK(system_mtbf(both, 16384, 8).in(hour) == doctest::Approx(54 * 24 / 419.0 / 2));
    // A partial node counts as a node.
    CHECK(system_mtbf(node, 9, 8).in(hour) == doctest::Approx(1.0 / (2 * node.per_node_hour)));
}

TEST_CASE("goodput by hand") {
    // τ = 60 min, C = 1 min, R = 10 min, M = 10 h: (60/61) x (1 - (10 + 61/2)/600) = 0.917213.
    goodput_inputs in;
    in.interval = 60 * minute;
    in.stall = 1 * minute;
    in.restart = 10 * minute;
    in.mtbf = 10 * hour;
    const goodput g = expected_goodput(in);
    CHECK(g.fraction == doctest::Approx(60.0 / 61 * (1 - 40.5 / 600)));
    CHECK(g.fraction == doctest::Approx(0.917213).epsilon(1e-5));
    CHECK(g.expected_lost_per_failure.in(minute) == doctest::Approx(30.5));
    CHECK(g.time_per_failure.in(minute) == doctest::Approx(40.5));
    CHECK(g.checkpoint_overhead == doctest::Approx(1.0 / 61));
    CHECK(g.failures_per_day == doctest::Approx(2.4));
    // Daly's complete model: 60 / (600 e^{10/600} (e^{61/600} - 1)) = 0.91902, within 0.2% of first order.
    CHECK(g.fraction_exponential == doctest::Approx(0.91902).epsilon(1e-4));

    // Async: 2 more minutes until durable add to the rework: (60/61)(1 - 42.5/600) = 0.913934.
    in.persist_lag = 2 * minute;
    CHECK(expected_goodput(in).fraction == doctest::Approx(60.0 / 61 * (1 - 42.5 / 600)));
    // A write longer than the interval makes the next checkpoint wait: 10-min interval, 15-min write.
    in.interval = 10 * minute;
    in.persist_lag = 15 * minute;
    const goodput w = expected_goodput(in);
    CHECK(w.period.in(minute) == doctest::Approx(10 + 1 + 5));
    // Checkpoints fall on steps: 100 s with 7-s steps -> 14 steps = 98 s.
    goodput_inputs st = in;
    st.persist_lag = {};
    st.interval = 100 * s;
    st.step_time = 7 * s;
    const goodput gs = expected_goodput(st);
    REQUIRE(gs.interval_steps.has_value());
    CHECK(*gs.interval_steps == 14);
    CHECK(gs.interval.in(s) == doctest::Approx(98));
    // Failures faster than recovery: no progress.
    goodput_inputs bad = in;
    bad.persist_lag = {};
    bad.restart = 20 * hour;
    CHECK(expected_goodput(bad).fraction == 0.0);
}

TEST_CASE("the optimal intervals maximise goodput") {
    goodput_inputs in;
    in.stall = 5 * minute;
    in.restart = 10 * minute;
    in.mtbf = 6 * hour;
    auto at = [&](duration tau, bool exponential) {
        goodput_inputs x = in;
        x.interval = tau;
        const goodput g = expected_goodput(x);
        return exponential ? g.fraction_exponential : g.fraction;
    };
    // The first-order goodput f = τ/(τ+C)·(1 - R/M - (τ+C)/(2M)) peaks where (τ+C)² = 2CM(1 - R/M), by hand:
    // τ* = sqrt(2CM(1 - R/M)) - C = sqrt(2 x 5 x 360 x (35/36)) - 5 = 54.16 min. Daly's complete model peaks
    // at Daly's estimate (within its perturbation error), and either interval loses < 0.1% against τ*.
    const duration tstar = std::sqrt(2.0 * 5 * 360 * (1 - 10.0 / 360)) * minute - 5 * minute;
    CHECK(tstar.in(minute) == doctest::Approx(54.16).epsilon(0.001));
    const duration ty = young_interval(in.stall, in.mtbf), td = daly_interval(in.stall, in.mtbf);
    for (double k : {0.8, 0.9, 0.95, 1.05, 1.1, 1.25}) {
        CHECK(at(tstar, false) >= at(k * tstar, false));
        CHECK(at(td, true) >= at(k * td, true));
    }
    CHECK(at(ty, false) == doctest::Approx(at(tstar, false)).epsilon(0.001));
    CHECK(at(td, false) == doctest::Approx(at(tstar, false)).epsilon(0.001));
}

TEST_CASE("goodput of a checkpoint setup") {
    const auto sz = size_of("Llama-3.1-70B", layout(8, 4), dist_opt());
    const system_spec h200 = cat().system("HGX-H200");
    const auto sync = checkpoint_time(sz, h200, false, {}, cat());
    const auto async = checkpoint_time(sz, h200, true, {}, cat());
    const duration mtbf = system_mtbf(default_failure_model(), 32);
    const goodput gs = expected_goodput(sync, 5 * minute, mtbf);
    const goodput ga = expected_goodput(async, 5 * minute, mtbf);
    // The interval is Daly's for the blocking cost: the whole save when sync, the copy when async.
    CHECK(gs.interval.in(s) == doctest::Approx(daly_interval(sync.save, mtbf).in(s)));
    CHECK(ga.interval.in(s) == doctest::Approx(daly_interval(async.stall, mtbf).in(s)));
    // Restart = restore + 5 min; async adds its persistence lag to the rework.
    CHECK(gs.time_per_failure.in(s) ==
          doctest::Approx(sync.restore.in(s) + 300 + 0.5 * (gs.interval + sync.save).in(s)));
    CHECK(ga.expected_lost_per_failure.in(s) ==
          doctest::Approx(0.5 * (ga.interval + async.stall).in(s) + (async.save - async.stall).in(s)));
    CHECK(ga.fraction > gs.fraction);
    CHECK(gs.fraction > 0.99);  // 32 GPUs fail every 1,584 h
}

TEST_CASE("monotonic: faster storage never slower, more GPUs checkpoint more often") {
    const auto sz = size_of("Llama-3.1-70B", layout(8, 4), dist_opt());
    system_spec sys = cat().system("HGX-H200");
    // Gen5 drives are faster than Gen4 for both save and restore.
    system_spec gen5 = sys;
    gen5.storage = cat().storage("NVMe-Gen5-8x");
    const auto g4 = checkpoint_time(sz, sys, false, {}, cat());
    const auto g5 = checkpoint_time(sz, gen5, false, {}, cat());
    CHECK(g5.save <= g4.save);
    CHECK(g5.restore <= g4.restore);
    // Raising the write rate never slows the save, sync or async; async never stalls longer than sync.
    const duration forever = std::numeric_limits<double>::infinity() * s;
    duration last_sync = forever, last_async = forever;
    for (double gb = 1; gb <= 4096; gb *= 2) {
        sys.storage->write_bandwidth = gb * GB / s;
        const auto a = checkpoint_time(sz, sys, false, {}, cat());
        const auto b = checkpoint_time(sz, sys, true, {}, cat());
        CHECK(a.save <= last_sync);
        CHECK(b.save <= last_async);
        CHECK(b.stall <= a.stall);
        CHECK(b.save >= a.save);
        last_sync = a.save;
        last_async = b.save;
    }
    // More GPUs -> shorter system MTBF -> shorter interval (C < 2M).
    const failure_model f = default_failure_model();
    duration last_mtbf = forever, last_tau = forever;
    for (int gpus = 8; gpus <= 131072; gpus *= 2) {
        const duration m = system_mtbf(f, gpus);
        const duration tau = young_daly_interval(1 * minute, m);
        CHECK(m < last_mtbf);
        CHECK(tau < last_tau);
        last_mtbf = m;
        last_tau = tau;
    }
}

TEST_CASE("bad input names the field") {
    auto field_of = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const config_error& e) {
            return e.field();
        }
        return "no error";
    };
    const model_spec& m = model("Llama-2-7B");
    const auto pb = count_parameters(m);
    parallelism_spec p = layout(1, 1);
    p.dp = 0;
    CHECK(field_of([&] { checkpoint_bytes(m, pb, precision_spec{}, {}, p); }) == "/parallelism/dp");
    checkpoint_options o;
    o.rng_per_rank = -1.0 * B;
    CHECK(field_of([&] { checkpoint_bytes(m, pb, precision_spec{}, {}, layout(1, 1), o); }) == "/checkpoint/rng_per_rank");
    training_spec t;
    t.optimizer = "lion";
    CHECK(field_of([&] { checkpoint_bytes(m, pb, precision_spec{}, t, layout(1, 1)); }) == "/training/optimizer");
    CHECK(field_of([&] { checkpoint_bytes(m, parameter_breakdown{}, precision_spec{}, {}, layout(1, 1)); }) == "parameters");

    const auto sz = size_of("Llama-2-7B", layout(1, 8));
    const system_spec h200 = cat().system("HGX-H200");
    checkpoint_io_options io;
    io.connections = 0;
    CHECK(field_of([&] { checkpoint_time(sz, h200, false, io, cat()); }) == "/checkpoint/connections");
    io = {};
    io.host_link_rate = 0.0 * GB / s;
    CHECK(field_of([&] { checkpoint_time(sz, h200, false, io, cat()); }) == "/checkpoint/host_link_rate");
    checkpoint_size broken = sz;
    broken.writers = 0;
    CHECK(field_of([&] { checkpoint_time(broken, h200, false, {}, cat()); }) == "checkpoint_size.writers");

    failure_model f;
    f.per_gpu_hour = -1;
    CHECK(field_of([&] { system_mtbf(f, 8); }) == "/failures/per_gpu_hour");
    CHECK(field_of([&] { system_mtbf(failure_model{}, 8); }) == "/failures/per_gpu_hour");
    CHECK(field_of([&] { system_mtbf(default_failure_model(), 0); }) == "gpus");
    CHECK(field_of([&] { young_interval(-1 * s, 1 * hour); }) == "save_cost");
    CHECK(field_of([&] { daly_interval(1 * s, 0 * s); }) == "mtbf");

    goodput_inputs in;
    in.stall = 1 * minute;
    in.mtbf = 1 * hour;
    CHECK(field_of([&] { expected_goodput(in); }) == "interval");
    in.interval = 10 * minute;
    in.restart = -1 * s;
    CHECK(field_of([&] { expected_goodput(in); }) == "restart");
    in.restart = {};
    in.step_time = 0 * s;
    CHECK(field_of([&] { expected_goodput(in); }) == "step_time");
}

TEST_CASE("a shared file system's aggregate limit binds beside its per-client rate (issue #20)") {
    // Llama-3.1-70B, tp 8 x dp 64 on 64 HGX-H200 nodes, distributed optimizer, fully parallel save: every node
    // writes 1/64 of the checkpoint. ParallelFS: 96 GB/s per client. A deployment whose servers take 250 GB/s
    // of writes in all (NVIDIA DGX SuperPOD RA-11333-001, Table 6, "best" storage for 4 scalable units) gives
    // each node 250 / 64 = 3.906 GB/s, far below its own 96: the save takes total / 250 GB/s, not / (64 x 96).
    const auto sz = size_of("Llama-3.1-70B", layout(8, 64), dist_opt());
    const double node = 8 * sz.per_rank_max.in(B);
    system_spec pfs = cat().system("HGX-H200");
    pfs.count = 512;
    pfs.storage = cat().storage("ParallelFS");
    pfs.storage_network.reset();  // over the compute NICs (400 GB/s a node): the case is the file system's own limits
    const auto per_client = checkpoint_time(sz, pfs, false, {}, cat());
    CHECK(per_client.writing_nodes == 64);
    CHECK(per_client.save.in(s) == doctest::Approx(node / gbps(96)));

    pfs.storage->aggregate_write_bandwidth = 250.0 * GB / s;
    pfs.storage->aggregate_read_bandwidth = 500.0 * GB / s;
    const auto shared = checkpoint_time(sz, pfs, false, {}, cat());
    CHECK(shared.save.in(s) == doctest::Approx(node / gbps(250.0 / 64)));
    // Balanced writers: the same as the whole checkpoint through the aggregate (up to the per-rank RNG rounding).
    CHECK(shared.save.in(s) == doctest::Approx(sz.total.in(B) / gbps(250)).epsilon(0.001));
    CHECK(shared.save.in(s) / per_client.save.in(s) == doctest::Approx(96.0 / (250.0 / 64)));  // 24.6x slower
    CHECK(shared.bottleneck == "storage");
    // Restore: each of the 64 nodes reads what its ranks hold at 500 / 64 GB/s.
    CHECK(shared.restore.in(s) == doctest::Approx(8 * sz.restore_per_rank_max.in(B) / gbps(500.0 / 64)));
    bool said = false;
    for (const auto& n : shared.notes) said = said || n.find("the aggregate limit binds") != std::string::npos;
    CHECK(said);

    // Four nodes: 250 / 4 = 62.5 GB/s each, still below 96: binds. At 500 GB/s (125 each) the client's 96 binds.
    pfs.count = 32;
    const auto four = size_of("Llama-3.1-70B", layout(8, 4), dist_opt());
    const double node4 = 8 * four.per_rank_max.in(B);
    CHECK(checkpoint_time(four, pfs, false, {}, cat()).save.in(s) == doctest::Approx(node4 / gbps(62.5)));
    pfs.storage->aggregate_write_bandwidth = 500.0 * GB / s;
    CHECK(checkpoint_time(four, pfs, false, {}, cat()).save.in(s) == doctest::Approx(node4 / gbps(96)));
}

TEST_CASE("checkpoint size notes are made only when kept, the figures the same either way") {
    checkpoint_options quiet;
    quiet.explain = false;
    for (const bool parallel : {true, false}) {
        CAPTURE(parallel);
        checkpoint_options loud;
        loud.fully_parallel_save = quiet.fully_parallel_save = parallel;
        const checkpoint_size with = size_of("Llama-3.1-70B", layout(8, 4, 2), {}, loud);
        const checkpoint_size without = size_of("Llama-3.1-70B", layout(8, 4, 2), {}, quiet);
        CHECK_FALSE(with.notes.empty());
        CHECK(without.notes.empty());
        CHECK(without.total.si() == with.total.si());
        CHECK(without.per_rank_max.si() == with.per_rank_max.si());
        CHECK(without.restore_total.si() == with.restore_total.si());
        CHECK(without.writers == with.writers);
    }
    // "saved per parameter": 2 B weights + 8 B Adam moments + 4 B fp32 master = 14 B, the first note.
    CHECK(size_of("Llama-3.1-8B", layout(1, 8)).notes.front().rfind("saved per parameter: weights 2 B + optimizer 8 B + "
                                                                     "master 4 B = 14 B", 0) == 0);
}
