// A deterministic (seeded) discrete-event simulation of continuous-batching LLM serving: requests
// arrive (open loop: Poisson or a constant rate or a trace; closed loop: N users with think time),
// a least-loaded router sends each to one of several identical replicas, and each replica runs a
// vLLM-V1-like scheduler step after step, every step's time coming from a step_time_fn.
//
//   step      decodes first (1 token per running request), then the unfinished prefill chunks, then
//             new requests from the waiting queue, until max_batched_tokens (Sarathi-Serve, Agrawal
//             et al., OSDI '24, arXiv:2403.02310 §4: decode-first "stall-free" batching with chunked
//             prefills; vLLM V1 vllm/v1/core/sched/scheduler.py schedule(): RUNNING, then WAITING)
//   admission FCFS; the head of the waiting queue is admitted only when blocks for (prompt + 1) tokens
//             are free and fewer than max_num_seqs requests run; it reserves them at once. With
//             reserve_output (TensorRT-LLM's default capacity scheduler policy GUARANTEED_NO_EVICT,
//             GuaranteedNoEvictScheduler in cpp/include/tensorrt_llm/batch_manager/capacityScheduler.h)
//             the blocks of prompt + whole output are reserved at admission, so nothing grows and
//             nothing is ever preempted
//   growth    a decode needing a new block takes a free one, or preempts the most recently admitted
//             running request (recompute: its KV is freed, it goes to the front of the waiting queue
//             and later re-prefills prompt + tokens generated so far; vLLM V1 `self.running.pop()`,
//             `waiting.prepend_request`). No new request is admitted in a step that preempted.
//   metrics   TTFT = first token - arrival, e2e = last token - arrival, TPOT = (e2e - TTFT) / (output - 1)
//             for output > 1, ITL = every gap between two consecutive output tokens of a request,
//             pooled over the requests; percentiles by linear interpolation: exactly vLLM
//             benchmarks/benchmark_serving.py calculate_metrics() (np.percentile over each list).
//   router    fewest outstanding requests (routed and not finished), ties to the lowest index.
//
// Formulas, choices and citations: docs/formulas.md §12. Header-only.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capplan/detail/ceil_div.hpp"
#include "capplan/detail/percentile.hpp"
#include "capplan/analysis/step_model.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/serving_features.hpp"
#include "capplan/units.hpp"

namespace capplan {

// ---- workload -----------------------------------------------------------------------------

// One row of a request trace: "input_tokens,output_tokens[,arrival_s]".
struct trace_row {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::optional<duration> arrival;  // present when the file has an arrival_s column
};

// Token lengths of prompts or outputs. All draws are >= 1.
struct length_dist {
    enum class kind {
        fixed,      // always `tokens`
        uniform,    // an integer uniform on [min_tokens, max_tokens]
        lognormal,  // round(exp(ln(median) + sigma Z)), Z standard normal, clamped to [min_tokens, max_tokens]
        trace       // request i takes row i mod rows of workload_spec::trace (its input or output column)
    };
    kind type = kind::fixed;
    std::int64_t tokens = 128;
    std::int64_t min_tokens = 1;
    std::int64_t max_tokens = std::numeric_limits<std::int64_t>::max();
    double median = 128.0;
    double sigma = 0.0;  // standard deviation of ln(length)

    static length_dist fixed(std::int64_t n) {
        length_dist d;
        d.type = kind::fixed, d.tokens = n;
        return d;
    }
    static length_dist uniform(std::int64_t lo, std::int64_t hi) {
        length_dist d;
        d.type = kind::uniform, d.min_tokens = lo, d.max_tokens = hi;
        return d;
    }
    static length_dist lognormal(double median, double sigma,
                                 std::int64_t max_tokens = std::numeric_limits<std::int64_t>::max()) {
        length_dist d;
        d.type = kind::lognormal, d.median = median, d.sigma = sigma, d.max_tokens = max_tokens;
        return d;
    }
    // By mean and coefficient of variation: sigma^2 = ln(1 + cv^2), median = mean / sqrt(1 + cv^2)
    // (before rounding and clamping, which move the mean slightly).
    static length_dist lognormal_mean_cv(double mean, double cv,
                                         std::int64_t max_tokens = std::numeric_limits<std::int64_t>::max()) {
        const double v = std::log1p(cv * cv);
        return lognormal(mean / std::sqrt(1.0 + cv * cv), std::sqrt(v), max_tokens);
    }
    static length_dist from_trace() {
        length_dist d;
        d.type = kind::trace;
        return d;
    }
};

struct workload_spec {
    enum class arrival_kind {
        poisson,        // open loop, exponential gaps of mean 1 / rate_per_s; the first request at t = 0
        constant_rate,  // open loop, gaps of exactly 1 / rate_per_s; the first request at t = 0
        closed_loop,    // `users` users; each thinks, sends, waits for the last token, thinks again
        trace           // open loop, arrivals from trace[i].arrival, shifted so the first is at t = 0
    };
    arrival_kind arrival = arrival_kind::poisson;
    double rate_per_s = 1.0;              // poisson, constant_rate: requests per second
    std::int64_t users = 1;               // closed_loop
    duration think_time = duration{};     // closed_loop: mean think time, also before each user's first request
    duration turnaround = duration{};     // closed_loop: fixed time from an answer's last token to the same
                                          // user's next request reaching the engine (before think time)
    bool think_time_exponential = true;   // closed_loop: exponential with that mean, or fixed
    length_dist input = length_dist::fixed(512);
    length_dist output = length_dist::fixed(128);
    std::vector<trace_row> trace;         // rows for length_dist::kind::trace and arrival_kind::trace
    std::int64_t requests = 1000;         // measured requests, simulated after the warm-up ones
    std::int64_t warmup_requests = 0;     // the first requests issued: simulated, left out of the latency statistics
    std::uint64_t seed = 0;
    prefix_cache_spec prefix_cache;       // prompt tokens each request finds cached; a prefix all share
};

// A closed loop's default turnaround: an answer's end reaches the client, which sends the next
// request, which the server parses and queues. Assumed, not measured: about one local HTTP round
// trip. What matters is that it is above zero and under a step: the request then lands inside the
// engine's next step and waits for it, as real ones do, instead of joining it at the very instant it
// starts (1 to 5 ms move the checked rows by under 2 points; docs/formulas.md section 12).
inline constexpr double default_turnaround_s = 1e-3;

// One replica's engine: vLLM's --max-num-seqs, --max-num-batched-tokens, --enable-chunked-prefill,
// the KV cache size in tokens (blocks x block size) and --block-size.
struct scheduler_spec {
    std::int64_t max_num_seqs = 256;
    std::int64_t max_batched_tokens = 8192;
    bool chunked_prefill = true;
    bool reserve_output = false;  // admission reserves prompt + whole output (no growth, no preemption)
    std::int64_t kv_capacity_tokens = std::int64_t{1} << 20;  // per replica; rounded down to whole blocks
    std::int64_t kv_block_tokens = 16;
    int replicas = 1;
    // Speculative decoding: each decode verifies draft_tokens + 1 positions and keeps 1 + the run of
    // drafted tokens accepted, each with probability `acceptance` (drawn per request and step).
    std::int64_t draft_tokens = 0;
    double acceptance = 0.0;
};

// ---- results ------------------------------------------------------------------------------

struct latency_summary {
    std::int64_t count = 0;  // requests summarised (TPOT: those with output > 1)
    duration mean, p50, p90, p99, max;
};

struct request_record {
    duration arrival, first_token, finish;
    std::int64_t input_tokens = 0, output_tokens = 0;
    int replica = -1;
    int preemptions = 0;
    bool finished = false;
};

struct sim_result {
    latency_summary ttft, tpot, e2e;   // over the measured requests (warm-up left out)
    latency_summary itl;               // over every token gap of the measured requests (count = gaps)
    std::int64_t completed = 0;        // requests finished, warm-up included (== warmup + requests)
    std::int64_t measured = 0;         // requests in the latency statistics
    std::int64_t input_tokens = 0, output_tokens = 0;  // totals over completed requests
    duration makespan;                 // t = 0 to the last token of the last request
    double requests_per_s = 0.0;       // completed / makespan
    double output_tokens_per_s = 0.0;  // output_tokens / makespan
    double busy_fraction = 0.0;        // time replicas spent in steps / (replicas x makespan)
    double kv_occupancy_mean = 0.0;    // time-weighted used blocks / blocks, mean over replicas and makespan
    double kv_occupancy_max = 0.0;     // the largest step's used blocks / blocks
    std::int64_t preemptions = 0;
    std::int64_t steps = 0;            // engine steps, all replicas
    std::int64_t max_in_flight = 0;    // most requests arrived and unfinished at once
    double prefill_busy_fraction = 0.0, decode_busy_fraction = 0.0;  // disaggregated: each pool's busy share
    std::vector<request_record> requests;  // by request id = issue order
};

// ---- trace CSV ----------------------------------------------------------------------------

// A header "input_tokens,output_tokens" or "input_tokens,output_tokens,arrival_s", then one row
// per request. Blank lines and lines starting with '#' are skipped; spaces around fields and CRLF
// line ends are allowed. Token counts are integers >= 1; arrival_s is seconds >= 0, non-decreasing.
// A bad row throws config_error with field "line N" (1-based, counting every line) and `source`
// (a file name or label) in the message.
inline std::vector<trace_row> read_trace_csv(std::string_view text, const std::string& source);
// The same, from a file (source = the path).
inline std::vector<trace_row> read_trace_csv_file(const std::string& path);

// ---- simulation ---------------------------------------------------------------------------

// A simulation's work in request-steps: each request is stepped about once per output token, plus
// its prefill. The budget keeps any scenario to seconds and well under a GiB (the measurements that
// set it, 200 k and 1 M closed-loop users, are in docs/reliability.md); 10 M users took minutes.
inline constexpr std::int64_t max_simulation_work = 1'000'000'000;
// With several replicas the router also looks at each of the others for every request it places.
inline double simulation_work(const workload_spec& w, std::int64_t mean_output_tokens, std::int64_t replicas = 1) {
    return static_cast<double>(w.requests + w.warmup_requests) *
           (static_cast<double>(mean_output_tokens) + 1.0 + static_cast<double>(std::max<std::int64_t>(0, replicas - 1)));
}
// config_error at `field` (the user's key that sets the request count) when `w` is beyond the budget.
inline void check_simulation_budget(const workload_spec& w, std::int64_t mean_output_tokens, const std::string& field,
                                    const std::string& value, std::int64_t replicas = 1) {
    const double work = simulation_work(w, mean_output_tokens, replicas);
    if (work <= static_cast<double>(max_simulation_work)) return;
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", work);
    throw config_error(field, value,
                       std::string("the serving simulation would take ") + text +
                           " request-steps (requests x output tokens), beyond its budget of " +
                           std::to_string(max_simulation_work) + " (seconds of work)",
                       "fewer users or simulated requests, or a static batch (inference.batch) for the roofline estimate");
}

// Disaggregated serving (DistServe, Zhong et al. OSDI '24, arXiv:2401.09670; Splitwise, arXiv:2311.18677):
// `prefill` replicas run the prompts and give each request its first token; its KV cache then takes
// kv_transfer(prompt tokens) to reach the least-loaded `decode` replica, which admits it (blocks for
// its context) and decodes it to the end. A decode replica that must preempt recomputes there.
struct disaggregated_scheduler {
    scheduler_spec prefill, decode;
    std::function<duration(std::int64_t tokens)> kv_transfer;
};

// Runs warmup_requests + requests requests to completion. Throws config_error for a bad spec, and
// for a request that could never run: one needing more KV blocks than a replica has
// (ceil((input + output) / block) > capacity blocks), or, without chunked prefill, a prompt longer
// than max_batched_tokens. Same inputs and seed, same result, bit for bit.
inline sim_result simulate(const workload_spec& workload, const scheduler_spec& scheduler,
                           const step_time_fn& step_time);
// The same over two pools; sim_result's prefill_busy_fraction and decode_busy_fraction are each pool's.
inline sim_result simulate_disaggregated(const workload_spec& workload, const disaggregated_scheduler& scheduler,
                                         const step_time_fn& prefill_step, const step_time_fn& decode_step);

// ============================================================================================
// Implementation
// ============================================================================================

namespace detail::sim {

inline std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// mt19937_64 streams, one per purpose, seeded through splitmix64 (Steele et al., OOPSLA 2014) so
// nearby seeds give unrelated streams. The transforms below are written out (no std::*_distribution,
// whose algorithms differ between standard libraries) so a seed gives the same draws everywhere.
class rng {
public:
    rng(std::uint64_t seed, std::uint64_t stream) {
        std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (stream + 1));
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        g_.seed(x ^ (x >> 31));
    }
    double uniform01() { return (static_cast<double>(g_() >> 11) + 0.5) * 0x1.0p-53; }  // in (0, 1)
    double exponential(double mean) { return -mean * std::log(uniform01()); }
    double normal() {  // Box-Muller
        const double u1 = uniform01(), u2 = uniform01();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    // Exact for spans below 2^53 tokens.
    std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
        const double span = static_cast<double>(hi - lo) + 1.0;
        return std::min(hi, lo + static_cast<std::int64_t>(uniform01() * span));
    }

private:
    std::mt19937_64 g_;
};

inline void check_length_dist(const length_dist& d, const std::string& field, const std::vector<trace_row>& trace) {
    using K = length_dist::kind;
    switch (d.type) {
        case K::fixed:
            if (d.tokens < 1) throw config_error(field + "/tokens", std::to_string(d.tokens), "must be >= 1");
            break;
        case K::uniform:
            if (d.min_tokens < 1 || d.max_tokens < d.min_tokens)
                throw config_error(field, std::to_string(d.min_tokens) + ".." + std::to_string(d.max_tokens),
                                   "uniform bounds are not an interval", "1 <= min_tokens <= max_tokens");
            break;
        case K::lognormal:
            if (!(d.median >= 1.0) || !std::isfinite(d.median))
                throw config_error(field + "/median", num(d.median), "must be a finite number >= 1");
            if (!(d.sigma >= 0.0) || !std::isfinite(d.sigma))
                throw config_error(field + "/sigma", num(d.sigma), "must be a finite number >= 0");
            if (d.min_tokens < 1 || d.max_tokens < d.min_tokens)
                throw config_error(field, std::to_string(d.min_tokens) + ".." + std::to_string(d.max_tokens),
                                   "clamp bounds are not an interval", "1 <= min_tokens <= max_tokens");
            break;
        case K::trace:
            if (trace.empty()) throw config_error("/workload/trace", "", "is empty but " + field + " reads it");
            break;
    }
}

inline std::int64_t draw_length(const length_dist& d, rng& r, const std::vector<trace_row>& trace, std::int64_t i,
                                bool input) {
    using K = length_dist::kind;
    switch (d.type) {
        case K::fixed: return d.tokens;
        case K::uniform: return r.uniform_int(d.min_tokens, d.max_tokens);
        case K::lognormal: {
            const double x = std::round(d.median * std::exp(d.sigma * r.normal()));
            const double lo = static_cast<double>(d.min_tokens), hi = static_cast<double>(d.max_tokens);
            return static_cast<std::int64_t>(std::clamp(x, lo, hi));
        }
        case K::trace: {
            const trace_row& row = trace[static_cast<std::size_t>(i % static_cast<std::int64_t>(trace.size()))];
            return input ? row.input_tokens : row.output_tokens;
        }
    }
    return 1;
}

// Mean, percentiles and largest of `seconds` (reordered). The percentiles by selection, not a sort:
// the three lists of a 100,000-request run took a tenth of its time sorted.
inline latency_summary summarise(std::vector<double>& seconds) {
    latency_summary s;
    s.count = static_cast<std::int64_t>(seconds.size());
    if (seconds.empty()) return s;
    double sum = 0.0, largest = seconds.front();
    for (double v : seconds) sum += v, largest = std::max(largest, v);
    s.mean = (sum / static_cast<double>(seconds.size())) * units::s;
    const std::vector<double> p = percentiles_of(seconds, {50, 90, 99});
    s.p50 = p[0] * units::s, s.p90 = p[1] * units::s, s.p99 = p[2] * units::s;
    s.max = largest * units::s;
    return s;
}

// The same over (value, count) pairs (reordered, not sorted: the step gaps number about the steps).
inline latency_summary summarise_counts(value_counts& pairs) {
    latency_summary s;
    if (pairs.empty()) return s;
    double sum = 0.0, largest = pairs.front().first;
    for (const auto& [v, c] : pairs) s.count += c, sum += v * static_cast<double>(c), largest = std::max(largest, v);
    s.mean = (sum / static_cast<double>(s.count)) * units::s;
    const std::vector<double> p = percentiles_of_counts(pairs, {50, 90, 99});
    s.p50 = p[0] * units::s, s.p90 = p[1] * units::s, s.p99 = p[2] * units::s;
    s.max = largest * units::s;
    return s;
}

using capplan::detail::ceil_div;

class simulator {
public:
    simulator(const workload_spec& w, const scheduler_spec& s, const step_time_fn& f) : w_(w), s_(s), f_(f) { take_scratch(); }
    // Disaggregated: `s` and `f` are the decode pool's; the prefill pool's come here.
    simulator(const workload_spec& w, const disaggregated_scheduler& d, const step_time_fn& prefill,
              const step_time_fn& decode)
        : w_(w), s_(d.decode), f_(decode), prefill_(&d.prefill), prefill_f_(&prefill), transfer_(d.kv_transfer) {
        take_scratch();
    }
    simulator(const simulator&) = delete;
    simulator& operator=(const simulator&) = delete;
    ~simulator() {
        scratch_buffers* kept = scratch();
        if (!kept) return;  // the thread's buffers are gone (a simulation run from a thread-exit destructor)
        keep(kept->reqs, reqs_);
        keep(kept->itl, itl_);
    }

    // Every step scheduled one by one (no decode runs): the reference run_decodes must match, for tests.
    void step_by_step() { decode_runs_ = false; }
    // Steps advanced inside decode runs (after run()).
    std::int64_t run_steps() const { return run_steps_; }

    sim_result run() {
        validate();
        generate();
        loop();
        return finish();
    }

private:
    struct request {
        double arrival = 0, first = -1, finish = -1;
        double last = -1;            // when its latest output token came
        std::int64_t input = 0, output = 0;
        std::int64_t generated = 0;  // output tokens produced so far
        std::int64_t computed = 0;   // tokens whose KV is computed (prompt, then generated ones)
        std::int64_t cached = 0;     // prompt tokens found in the prefix cache (never computed)
        std::int64_t reloaded = 0;   // of those, brought back from the KV-offload tier at admission
        std::int64_t blocks = 0;     // KV blocks held
        std::int64_t shared_blocks = 0;  // blocks of the shared prefix it reads (held once per replica)
        std::int64_t user = -1;      // closed loop: who sent it
        int replica = -1, preemptions = 0;
        bool prefilling = false, done = false;
        bool kv_ready = false;       // disaggregated: its cache arrived from a prefill replica, ready to decode
    };
    struct work { std::int32_t id; std::int64_t tokens; };

    // The two largest buffers, kept between the simulations a thread runs: a 100,000-request simulation fills ~28 MB
    // of them, and fresh memory costs a page fault per 4 KiB (~15% of that simulation's time, docs/performance.md),
    // which a sweep of simulations then pays once. A simulation takes them (a step function that simulates in turn
    // finds none and allocates its own) and gives them back emptied, up to kept_bytes each.
    struct scratch_buffers {
        std::vector<request> reqs;
        value_counts itl;
        bool* alive;
        ~scratch_buffers() { *alive = false; }
    };
    static constexpr std::size_t kept_bytes = std::size_t{64} << 20;
    // This thread's buffers; nullptr once the thread is destroying them.
    static scratch_buffers* scratch() {
        thread_local bool alive = true;
        thread_local scratch_buffers buffers{{}, {}, &alive};
        return alive ? &buffers : nullptr;
    }
    void take_scratch() {
        if (scratch_buffers* kept = scratch()) {
            reqs_ = std::exchange(kept->reqs, {});
            itl_ = std::exchange(kept->itl, {});
            reqs_.clear(), itl_.clear();
        }
    }
    template <class T>
    static void keep(std::vector<T>& slot, std::vector<T>& v) {
        if (v.capacity() * sizeof(T) > kept_bytes || v.capacity() <= slot.capacity()) return;
        v.clear();
        slot = std::move(v);
    }
    struct replica {
        const scheduler_spec* spec = nullptr;  // its pool's engine
        const step_time_fn* step_time = nullptr;
        bool prefill_only = false;             // disaggregated prefill pool: requests leave at their first token
        std::int64_t blocks = 0;               // KV blocks it holds in all
        std::deque<std::int32_t> waiting;  // front is next
        std::vector<std::int32_t> running;  // admission order; the back is the most recent
        std::vector<work> step;             // the step in flight
        std::int64_t free_blocks = 0;
        std::int64_t outstanding = 0;        // routed and unfinished
        std::int64_t prefilling = 0;         // running requests still prefilling
        std::int64_t ready = 0;              // waiting requests whose cache has arrived (disaggregated decode)
        bool busy = false, dirty = false;
        struct {
            std::int64_t steps = 0, measured = 0;  // a decode run's steps (its last in flight when busy), measured requests
        } run;
        double step_start = 0;              // when the step in flight began
        double busy_time = 0, occupancy_time = 0;  // integrals over time
    };
    struct event {
        double t;
        int kind;  // 0 step end (completions first), 1 arrival, 2 a KV cache arriving at the decode pool
        std::int64_t seq;
        std::int64_t who;  // replica, closed-loop user, or request (kind 2)
        bool operator>(const event& o) const {
            if (t != o.t) return t > o.t;
            if (kind != o.kind) return kind > o.kind;
            return seq > o.seq;
        }
    };

    void validate() {
        using A = workload_spec::arrival_kind;
        if (w_.requests < 1) throw config_error("/workload/requests", std::to_string(w_.requests), "must be >= 1");
        if (w_.warmup_requests < 0)
            throw config_error("/workload/warmup_requests", std::to_string(w_.warmup_requests), "must be >= 0");
        // Checked before the sum, which two int64 counts near their limit would overflow.
        constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
        if (w_.requests > most || w_.warmup_requests > most - w_.requests)
            throw config_error(w_.requests > most ? "/workload/requests" : "/workload/warmup_requests",
                               std::to_string(w_.requests) + " + " + std::to_string(w_.warmup_requests), "too many requests",
                               "at most 2^31 - 1 with the warm-up");
        total_ = w_.requests + w_.warmup_requests;
        if ((w_.arrival == A::poisson || w_.arrival == A::constant_rate) &&
            !(w_.rate_per_s > 0.0 && std::isfinite(w_.rate_per_s)))
            throw config_error("/workload/rate_per_s", num(w_.rate_per_s), "must be a finite rate > 0");
        if (w_.arrival == A::closed_loop) {
            if (w_.users < 1) throw config_error("/workload/users", std::to_string(w_.users), "must be >= 1");
            if (!(w_.think_time.in(units::s) >= 0.0) || !std::isfinite(w_.think_time.in(units::s)))
                throw config_error("/workload/think_time", num(w_.think_time.in(units::s)) + " s", "must be >= 0");
            if (!(w_.turnaround.in(units::s) >= 0.0) || !std::isfinite(w_.turnaround.in(units::s)))
                throw config_error("/workload/turnaround", num(w_.turnaround.in(units::s)) + " s", "must be >= 0");
        }
        if (w_.arrival == A::trace) {
            if (static_cast<std::int64_t>(w_.trace.size()) < total_)
                throw config_error("/workload/trace", std::to_string(w_.trace.size()) + " rows",
                                   "trace arrivals need a row per request (" + std::to_string(total_) + ")");
            for (std::int64_t i = 0; i < total_; ++i) {
                const auto& a = w_.trace[static_cast<std::size_t>(i)].arrival;
                const std::string f = "/workload/trace/" + std::to_string(i) + "/arrival_s";
                if (!a) throw config_error(f, "", "is missing; trace arrivals need an arrival_s column");
                if (i > 0 && *a < *w_.trace[static_cast<std::size_t>(i - 1)].arrival)
                    throw config_error(f, num(a->in(units::s)), "arrivals must be non-decreasing");
            }
        }
        check_length_dist(w_.input, "/workload/input", w_.trace);
        check_length_dist(w_.output, "/workload/output", w_.trace);
        decode_blocks_ = check_pool(s_);
        if (prefill_) {
            prefill_blocks_ = check_pool(*prefill_);
            if (prefill_->kv_block_tokens != s_.kv_block_tokens)
                throw config_error("/scheduler/kv_block_tokens", std::to_string(prefill_->kv_block_tokens),
                                   "the prefill and decode pools page the cache in different blocks",
                                   "the same block size (" + std::to_string(s_.kv_block_tokens) + ")");
        }
        const prefix_cache_spec& pc = w_.prefix_cache;
        if (!(pc.hit_rate >= 0.0 && pc.hit_rate <= 1.0))
            throw config_error("/inference/prefix_cache/hit_rate", num(pc.hit_rate), "not a share", "a number in [0, 1]");
        if (pc.shared_prefix_tokens < 0)
            throw config_error("/inference/prefix_cache/shared_prefix_tokens", std::to_string(pc.shared_prefix_tokens),
                               "must be >= 0");
        shared_blocks_ = pc.shared_prefix_tokens / s_.kv_block_tokens;
        if (shared_blocks_ >= std::min(decode_blocks_, prefill_ ? prefill_blocks_ : decode_blocks_))
            throw config_error("/inference/prefix_cache/shared_prefix_tokens", std::to_string(pc.shared_prefix_tokens),
                               "the shared prefix fills the whole KV cache (" + std::to_string(s_.kv_capacity_tokens) +
                                   " tokens)", "a shorter shared prefix, or more KV-cache memory");
        if (s_.draft_tokens < 0)
            throw config_error("/inference/speculative/tokens", std::to_string(s_.draft_tokens), "must be >= 0");
        if (!(s_.acceptance >= 0.0 && s_.acceptance <= 1.0))
            throw config_error("/inference/speculative/acceptance", num(s_.acceptance), "not a probability",
                               "a number in [0, 1]");
    }

    // One pool's engine limits; its KV blocks per replica.
    static std::int64_t check_pool(const scheduler_spec& p) {
        if (p.replicas < 1) throw config_error("/scheduler/replicas", std::to_string(p.replicas), "must be >= 1");
        if (p.max_num_seqs < 1) throw config_error("/scheduler/max_num_seqs", std::to_string(p.max_num_seqs), "must be >= 1");
        if (p.max_batched_tokens < p.max_num_seqs)
            throw config_error("/scheduler/max_batched_tokens", std::to_string(p.max_batched_tokens),
                               "must leave every running request its decode token",
                               ">= max_num_seqs (" + std::to_string(p.max_num_seqs) + ")");
        if (p.kv_block_tokens < 1)
            throw config_error("/scheduler/kv_block_tokens", std::to_string(p.kv_block_tokens), "must be >= 1");
        const std::int64_t blocks = p.kv_capacity_tokens / p.kv_block_tokens;
        if (blocks < 1)
            throw config_error("/scheduler/kv_capacity_tokens", std::to_string(p.kv_capacity_tokens),
                               "holds no whole block", ">= kv_block_tokens (" + std::to_string(p.kv_block_tokens) + ")");
        return blocks;
    }

    void generate() {
        using A = workload_spec::arrival_kind;
        rng lengths(w_.seed, 0);
        reqs_.resize(static_cast<std::size_t>(total_));
        for (std::int64_t i = 0; i < total_; ++i) {
            request& q = reqs_[static_cast<std::size_t>(i)];
            q.input = draw_length(w_.input, lengths, w_.trace, i, true);
            q.output = draw_length(w_.output, lengths, w_.trace, i, false);
            q.cached = w_.prefix_cache.cached_tokens(q.input);
            q.reloaded = w_.prefix_cache.reloaded_tokens(q.input);
            q.shared_blocks = std::min(shared_blocks_, q.cached / s_.kv_block_tokens);
            auto where = [&] {  // for an error only: built per request it took a tenth of a simulation's time
                return "request " + std::to_string(i) + " (" + std::to_string(q.input) + " in, " + std::to_string(q.output) +
                       " out)";
            };
            if (q.input < 1 || q.output < 1)  // only a trace row can do this; the distributions draw >= 1
                throw config_error("/workload/trace/" + std::to_string(i % static_cast<std::int64_t>(w_.trace.size())),
                                   where(), "token counts must be >= 1");
            const std::int64_t prompt_blocks = ceil_div(q.input + 1, s_.kv_block_tokens) - q.shared_blocks;
            if (prefill_ && prompt_blocks > prefill_blocks_ - shared_blocks_)
                throw config_error("/scheduler/kv_capacity_tokens", std::to_string(prefill_->kv_capacity_tokens),
                                   where() + ": its prompt needs more KV blocks than a prefill replica holds",
                                   ">= the longest input, block-rounded");
            if (ceil_div(q.input + q.output, s_.kv_block_tokens) - q.shared_blocks > decode_blocks_ - shared_blocks_)
                throw config_error("/scheduler/kv_capacity_tokens", std::to_string(s_.kv_capacity_tokens),
                                   where() + " needs " +
                                       std::to_string(ceil_div(q.input + q.output, s_.kv_block_tokens) * s_.kv_block_tokens) +
                                       " KV tokens, more than a replica holds",
                                   ">= the largest input + output, block-rounded");
            const scheduler_spec& first = prefill_ ? *prefill_ : s_;
            if (!first.chunked_prefill && q.input - q.cached > first.max_batched_tokens)
                throw config_error("/scheduler/max_batched_tokens", std::to_string(first.max_batched_tokens),
                                   where() + ": without chunked prefill a prompt must fit one step",
                                   ">= the longest input, or chunked_prefill = true");
        }
        if (w_.arrival == A::closed_loop) return;
        arrivals_.resize(static_cast<std::size_t>(total_));
        rng gaps(w_.seed, 1);
        double t = 0.0;
        const double base = w_.arrival == A::trace ? w_.trace[0].arrival->in(units::s) : 0.0;
        for (std::int64_t i = 0; i < total_; ++i) {
            switch (w_.arrival) {
                case A::poisson: if (i > 0) t += gaps.exponential(1.0 / w_.rate_per_s); break;
                case A::constant_rate: t = static_cast<double>(i) / w_.rate_per_s; break;
                case A::trace: t = w_.trace[static_cast<std::size_t>(i)].arrival->in(units::s) - base; break;
                case A::closed_loop: break;
            }
            arrivals_[static_cast<std::size_t>(i)] = t;
        }
    }

    void push(double t, int kind, std::int64_t who) { events_.push(event{t, kind, seq_++, who}); }

    double think() {
        const double z = w_.think_time.in(units::s);
        return w_.think_time_exponential ? think_rng_.exponential(z) : z;
    }

    void loop() {
        prefill_replicas_ = prefill_ ? prefill_->replicas : 0;
        reps_.resize(static_cast<std::size_t>(prefill_replicas_ + s_.replicas));
        for (std::size_t i = 0; i < reps_.size(); ++i) {
            replica& r = reps_[i];
            r.prefill_only = static_cast<int>(i) < prefill_replicas_;
            r.spec = r.prefill_only ? prefill_ : &s_;
            r.step_time = r.prefill_only ? prefill_f_ : &f_;
            r.blocks = r.prefill_only ? prefill_blocks_ : decode_blocks_;
            r.free_blocks = r.blocks - shared_blocks_;  // the shared prefix stays resident
        }
        if (w_.arrival == workload_spec::arrival_kind::closed_loop) {
            for (std::int64_t u = 0; u < w_.users && u < total_; ++u) push(think(), 1, u);
        } else {
            push(arrivals_[0], 1, -1);
        }
        while (!events_.empty()) {
            const event e = events_.top();
            events_.pop();
            now_ = e.t;
            if (e.kind == 0) end_step(static_cast<std::size_t>(e.who));
            else if (e.kind == 2) hand_over(static_cast<std::int32_t>(e.who));
            else arrive(e.who);
            if (events_.empty() || events_.top().t > now_) {
                if (dirty_.size() == 1) run_decodes(dirty_[0]);  // may advance now_ to where that replica's run ends
                for (std::size_t r : dirty_) start_step(r);
                dirty_.clear();
            }
        }
        if (completed_ != total_)
            throw internal_error("serving simulation finished " + std::to_string(completed_) + " of " +
                                 std::to_string(total_) + " requests");
    }

    void mark(std::size_t r) {
        if (!reps_[r].dirty) reps_[r].dirty = true, dirty_.push_back(r);
    }

    void arrive(std::int64_t user) {
        if (next_id_ >= total_) return;  // a closed-loop user with nothing left to send
        const auto id = static_cast<std::int32_t>(next_id_++);
        request& q = reqs_[static_cast<std::size_t>(id)];
        q.arrival = now_;
        q.user = user;
        // New requests go to the prefill pool when there is one (replicas [0, prefill_replicas_)).
        const std::size_t best = least_loaded(0, prefill_ ? static_cast<std::size_t>(prefill_replicas_) : reps_.size());
        q.replica = static_cast<int>(best);
        reps_[best].waiting.push_back(id);
        ++reps_[best].outstanding;
        max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
        mark(best);
        if (user < 0 && next_id_ < total_) push(arrivals_[static_cast<std::size_t>(next_id_)], 1, -1);
    }

    std::size_t least_loaded(std::size_t first, std::size_t end) const {
        std::size_t best = first;
        for (std::size_t r = first + 1; r < end; ++r)
            if (reps_[r].outstanding < reps_[best].outstanding) best = r;
        return best;
    }

    // Disaggregated: a request's cache has crossed to the decode pool; it queues at the least-loaded
    // decode replica, whose next steps admit and decode it.
    void hand_over(std::int32_t id) {
        request& q = reqs_[static_cast<std::size_t>(id)];
        const std::size_t d = least_loaded(static_cast<std::size_t>(prefill_replicas_), reps_.size());
        q.replica = static_cast<int>(d);
        q.kv_ready = true;
        ++reps_[d].ready;
        reps_[d].waiting.push_back(id);
        ++reps_[d].outstanding;
        mark(d);
    }

    // Disaggregated: a request's first token came from a prefill replica: it frees its blocks there and
    // its cache starts across to the decode pool.
    void send_to_decode(replica& R, request& q, std::int32_t id) {
        R.free_blocks += q.blocks;
        q.blocks = 0;
        --R.outstanding;
        push(now_ + transfer_(q.input).in(units::s), 2, id);
    }

    void preempt(replica& R, std::int32_t id) {
        request& q = reqs_[static_cast<std::size_t>(id)];
        R.free_blocks += q.blocks;
        if (q.prefilling) --R.prefilling;
        q.blocks = 0, q.computed = 0, q.prefilling = false, q.kv_ready = false;
        ++q.preemptions, ++preemptions_;
        R.waiting.push_front(id);
    }

    // Packs one step; false when there is nothing to run.
    bool schedule(replica& R, batch_step& b) {
        R.step.clear();
        b = batch_step{};
        const scheduler_spec& S = *R.spec;
        const std::int64_t B = S.kv_block_tokens;
        std::int64_t budget = S.max_batched_tokens;
        const std::int64_t positions = 1 + S.draft_tokens;
        // 0. Disaggregated decode pool: requests whose cache arrived join the running batch (no prefill
        // step; their first decode is this step), in arrival order while blocks for their context are
        // free, past any preempted request waiting to recompute. Their first token streams from here:
        // it reaches the user now (vLLM's and SGLang's PD serving stream from the decode instance).
        for (auto it = R.waiting.begin();
             R.ready > 0 && it != R.waiting.end() && static_cast<std::int64_t>(R.running.size()) < S.max_num_seqs;) {
            request& q = reqs_[static_cast<std::size_t>(*it)];
            if (!q.kv_ready) {
                ++it;
                continue;
            }
            const std::int64_t need = ceil_div(q.computed + 1, B) - q.shared_blocks;
            if (need > R.free_blocks) break;
            R.running.push_back(*it);
            it = R.waiting.erase(it);
            R.free_blocks -= need;
            q.blocks = need, q.kv_ready = false;
            --R.ready;
            q.first = q.last = now_;
        }
        b.decode_positions = positions;
        bool preempted = false;
        // 1. Decodes, oldest first; a decode crossing a block boundary takes a block or preempts.
        for (std::size_t i = 0; i < R.running.size(); ++i) {
            const std::int32_t id = R.running[i];
            request& q = reqs_[static_cast<std::size_t>(id)];
            if (q.prefilling) continue;
            // Slots for every position it verifies (a speculative step writes k + 1), within its answer.
            const std::int64_t ctx = std::min(q.computed + positions, q.input + q.output);
            bool self = false;
            while (ctx > (q.blocks + q.shared_blocks) * B) {
                if (R.free_blocks > 0) {
                    --R.free_blocks, ++q.blocks;
                    continue;
                }
                const std::int32_t victim = R.running.back();
                R.running.pop_back();
                preempt(R, victim);
                preempted = true;
                if (victim == id) { self = true; break; }
            }
            if (self) break;  // it was the newest: nothing after it
            R.step.push_back({id, tokens_gained(q)});
            budget -= positions;
            ++b.decode_requests;
            b.context_tokens += q.computed + 1;  // its cached tokens and the one it writes
        }
        // 2. Unfinished prefills (chunked prefill only), oldest first.
        for (std::size_t i = 0; R.prefilling > 0 && i < R.running.size() && budget > 0; ++i) {
            const std::int32_t id = R.running[i];
            request& q = reqs_[static_cast<std::size_t>(id)];
            if (!q.prefilling) continue;
            const std::int64_t chunk = std::min(q.input + q.generated - q.computed, budget);
            R.step.push_back({id, chunk});
            budget -= chunk;
            ++b.prefill_requests;
            b.prefill_tokens += chunk;
            b.prefill_context_tokens += q.computed;  // cached by its earlier chunks
        }
        // 3. Admissions, FCFS, while blocks for prompt + 1 are free; none after a preemption.
        while (!preempted && !R.waiting.empty() && budget > 0 &&
               static_cast<std::int64_t>(R.running.size()) < S.max_num_seqs) {
            const std::int32_t id = R.waiting.front();
            request& q = reqs_[static_cast<std::size_t>(id)];
            if (q.kv_ready) break;  // a transferred cache waits for blocks in step 0; it is never recomputed
            const std::int64_t tokens = q.input + q.generated;  // a preempted request recomputes its output too
            const std::int64_t need =
                (S.reserve_output && !R.prefill_only ? ceil_div(q.input + q.output, B) : ceil_div(tokens + 1, B)) -
                q.shared_blocks;
            if (need > R.free_blocks) break;
            const std::int64_t todo = tokens - q.cached;  // prefix-cache hits are not computed
            std::int64_t chunk = std::min(todo, budget);
            if (!S.chunked_prefill && chunk < todo) {
                // Whole prompts only. A recompute longer than the whole budget runs alone (oversized step).
                if (todo > S.max_batched_tokens && b.prefill_requests == 0) chunk = todo;
                else break;
            }
            R.waiting.pop_front();
            R.running.push_back(id);
            R.free_blocks -= need;
            q.blocks = need, q.prefilling = true, q.computed = q.cached;
            ++R.prefilling;
            R.step.push_back({id, chunk});
            budget -= chunk;
            ++b.prefill_requests;
            b.prefill_tokens += chunk;
            b.prefill_context_tokens += q.cached;  // first chunk: only the prefix-cache hits before it
            b.reload_tokens += q.reloaded;
        }
        return !R.step.empty();
    }

    // Output tokens a decode step gives a request: 1, or with speculative decoding 1 + the run of
    // drafted tokens accepted (each with probability `acceptance`), within what its answer has left.
    std::int64_t tokens_gained(const request& q) {
        std::int64_t accepted = 0;
        while (accepted < s_.draft_tokens && accept_rng_.uniform01() < s_.acceptance) ++accepted;
        return std::min(1 + accepted, q.output - q.generated);
    }

    // A replica whose every running request decodes, with nothing waiting or prefilling, runs the same step
    // again and again while nothing else happens: each request gains one token and its context one more. Those
    // steps are advanced here as a run, without scheduling each request, for as long as stepping them one by one
    // could not differ: every block a request crosses into is free (else the usual step preempts), and each step
    // ends before the next event. The run's last step, the one that meets an event or finishes a request, is
    // started here and ends as an event (end_run); the requests' state is brought up to date there, once. The same
    // results as one step at a time, bit for bit: the same step times, summed in the same order, and the step
    // function called once a step. Called only when this replica is the one to start a step now.
    void run_decodes(std::size_t r) {
        replica& R = reps_[r];
        if (R.busy || R.running.empty() || R.prefilling > 0 || !may_run(R)) return;
        const std::int64_t B = R.spec->kv_block_tokens, n = static_cast<std::int64_t>(R.running.size());
        // Gathered by the step that just ended (always, today: arrivals and hand-overs stop runs, and a second replica
        // ending at the same time makes two dirty); gathered here otherwise, so a run never reads a stale plan.
        if (!(plan_.replica == r && plan_.at == now_ && plan_.requests == n)) {
            plan_begin(r, B);
            for (const std::int32_t id : R.running) plan_add(reqs_[static_cast<std::size_t>(id)], id, B);
        }
        if (!plan_.ok) return;
        const std::int64_t steps = plan_.steps, context = plan_.context, measured = plan_.measured;
        std::sort(plan_.later.begin(), plan_.later.end());
        batch_step b;
        b.decode_requests = n;
        std::size_t joined = 0;
        const double next_event = events_.empty() ? std::numeric_limits<double>::infinity() : events_.top().t;
        std::int64_t k = 0;
        std::size_t slot = 0;  // k mod B, kept without a division a step
        for (;; ++k, slot = slot + 1 == plan_.due.size() ? 0 : slot + 1) {
            for (; joined < plan_.later.size() && plan_.later[joined] == k; ++joined) ++plan_.due[slot];
            const std::int64_t blocks = plan_.due[slot];
            if (blocks > R.free_blocks) break;  // a preemption: steps k on run the usual way
            b.context_tokens = context + k * n;
            const double dt = step_seconds(R, b);
            const double end = now_ + dt;
            R.free_blocks -= blocks;
            account_step(R, dt, R.free_blocks);
            if (k == steps || !(end < next_event)) {  // the run's last step: it ends as an event
                R.busy = true;
                R.run = {k + 1, measured};
                push(end, 0, static_cast<std::int64_t>(r));
                return;
            }
            if (measured > 0) itl_.push_back({end - now_, measured});
            now_ = end;
        }
        // Stopped before a preemption: the steps run so far end now, without an event (none finishes a request).
        if (k == 0) return;
        R.run = {k, measured};
        end_run(r);
    }

    // The requests of a decode run gain its steps' tokens, blocks and last token time, and the last step's token
    // gaps count; those that reach their answer's end finish (in running order, as end_step would finish them)
    // and leave the running list; the others are gathered for the next run.
    void end_run(std::size_t r) {
        replica& R = reps_[r];
        const std::int64_t k = R.run.steps, B = R.spec->kv_block_tokens;
        if (R.busy && R.run.measured > 0) itl_.push_back({now_ - R.step_start, R.run.measured});
        run_steps_ += k;
        plan_begin(r, B);
        std::size_t kept = 0;
        for (const std::int32_t id : R.running) {
            request& q = reqs_[static_cast<std::size_t>(id)];
            // It crossed into a new block at steps d, d + B, ... before k (a loop, not a division: k is mostly
            // under B, and each turn is a block gained).
            for (std::int64_t at = tokens_to_next_block(q, B); at < k; at += B) ++q.blocks;
            q.computed += k, q.generated += k;
            q.last = now_;
            if (q.generated >= q.output) {
                complete(R, q);
                continue;
            }
            plan_add(q, id, B);
            R.running[kept++] = id;
        }
        R.running.resize(kept);
        R.run = {};
        R.busy = false;
    }

    // What a decode run starting now needs of the running requests, gathered by the pass that brought them up to
    // date (end_step, end_run) so that the run does not walk them once more: the steps before the first one that
    // finishes a request, the step's context tokens, the measured requests, and when each crosses into a new
    // block (at step d, then every B steps; due[j]: requests crossing at steps = j mod B; later: d >= B).
    // Valid for that replica at that time only; not ok when a request cannot join a run.
    struct run_plan {
        std::size_t replica = 0;
        double at = -1;
        bool ok = false;
        std::int64_t requests = 0, steps = 0, context = 0, measured = 0;
        std::vector<std::int64_t> due, later;  // requests crossing into a block at steps j mod B; at d >= B
    };

    // Whether a decode run could start on this replica when its step ends (nothing waiting to be admitted).
    bool may_run(const replica& R) const {
        return decode_runs_ && !R.prefill_only && R.waiting.empty() && R.ready == 0 && s_.draft_tokens == 0;
    }

    // Starts gathering; not ok (nothing gathered) when no run could start.
    void plan_begin(std::size_t r, std::int64_t B) {
        plan_.replica = r, plan_.at = now_, plan_.ok = may_run(reps_[r]), plan_.requests = 0;
        plan_.steps = std::numeric_limits<std::int64_t>::max(), plan_.context = 0, plan_.measured = 0;
        plan_.due.clear(), plan_.later.clear();  // (kept allocated: a run is gathered hundreds of thousands of times)
        if (!plan_.ok) return;
        plan_.due.assign(static_cast<std::size_t>(B), 0);
    }

    void plan_add(const request& q, std::int32_t id, std::int64_t B) {
        ++plan_.requests;
        if (!plan_.ok) return;
        const std::int64_t d = tokens_to_next_block(q, B);
        if (q.last != now_ || d < 0) {  // it produced no token at the step that just ended, or lacks a block
            plan_.ok = false;
            return;
        }
        plan_.steps = std::min(plan_.steps, q.output - q.generated - 1);
        plan_.context += q.computed + 1;
        if (id >= w_.warmup_requests) ++plan_.measured;
        if (d < B) ++plan_.due[static_cast<std::size_t>(d)];
        else plan_.later.push_back(d);
    }

    // Tokens a request can still compute in the blocks it holds (its decode at step d of a run takes a new block).
    static std::int64_t tokens_to_next_block(const request& q, std::int64_t B) {
        return (q.blocks + q.shared_blocks) * B - q.computed;
    }

    // One step's time from the pool's step function, checked.
    static double step_seconds(const replica& R, const batch_step& b) {
        const double dt = (*R.step_time)(b).in(units::s);
        if (!(dt > 0.0) || !std::isfinite(dt))
            throw config_error("step_time", num(dt) + " s", "must be positive and finite for every step",
                               "a step_time_fn returning > 0 s");
        return dt;
    }

    // A step of `dt` from now with `free` blocks left: the replica's busy and occupancy integrals.
    void account_step(replica& R, double dt, std::int64_t free) {
        const double occupancy = static_cast<double>(R.blocks - free) / static_cast<double>(R.blocks);
        R.step_start = now_;
        R.busy_time += dt;
        R.occupancy_time += occupancy * dt;
        occupancy_max_ = std::max(occupancy_max_, occupancy);
        ++steps_;
    }

    void start_step(std::size_t r) {
        replica& R = reps_[r];
        R.dirty = false;
        if (R.busy) return;
        batch_step b;
        if (!schedule(R, b)) {
            if (!R.running.empty() || !R.waiting.empty())
                throw internal_error("serving simulation: replica " + std::to_string(r) + " stalled with work");
            return;
        }
        const double dt = step_seconds(R, b);
        R.busy = true;
        account_step(R, dt, R.free_blocks);
        push(now_ + dt, 0, static_cast<std::int64_t>(r));
    }

    void end_step(std::size_t r) {
        replica& R = reps_[r];
        if (R.run.steps > 0) {  // the last step of a decode run
            end_run(r);
            mark(r);
            return;
        }
        R.busy = false;
        bool any_done = false;
        const std::int64_t B = R.spec->kv_block_tokens;
        plan_begin(r, B);
        // Token gaps: a request that also produced the step before waited exactly this step; one
        // that was preempted and recomputed waited longer (its own entry).
        const double step_gap = now_ - R.step_start;
        std::int64_t step_gaps = 0;
        for (const work& x : R.step) {
            request& q = reqs_[static_cast<std::size_t>(x.id)];
            if (q.done) throw internal_error("serving simulation: request " + std::to_string(x.id) + " ran after finishing");
            q.computed += x.tokens;
            const std::int64_t before = q.input + q.generated;  // tokens the next output token follows
            if (q.computed < before) {  // a prefill chunk short of the end
                plan_.ok = false;
                continue;
            }
            if (q.prefilling) q.prefilling = false, --R.prefilling;
            const bool first = q.generated == 0;
            q.generated += q.computed - before + 1;  // a decode's accepted run, or a prefill's first token
            if (first) {
                q.first = now_;
            } else if (x.id >= w_.warmup_requests) {
                const double gap = now_ - q.last;
                if (gap == step_gap) ++step_gaps;
                else itl_.push_back({gap, 1});
            }
            q.last = now_;
            if (q.generated >= q.output) {
                complete(R, q);
                any_done = true;
            } else if (R.prefill_only) {
                send_to_decode(R, q, x.id);
                any_done = true;  // it leaves this replica's running list
            } else {
                plan_add(q, x.id, B);
            }
        }
        if (step_gaps > 0) itl_.push_back({step_gap, step_gaps});
        if (any_done) erase_finished(R);
        mark(r);
    }

    void erase_finished(replica& R) {
        std::erase_if(R.running, [&](std::int32_t id) {
            const request& q = reqs_[static_cast<std::size_t>(id)];
            return q.done || (R.prefill_only && q.generated > 0);  // finished, or handed to the decode pool
        });
    }

    void complete(replica& R, request& q) {
        q.done = true;
        q.finish = now_;
        R.free_blocks += q.blocks;
        q.blocks = 0;
        --R.outstanding, --in_flight_, ++completed_;
        if (q.user >= 0) push(now_ + w_.turnaround.in(units::s) + think(), 1, q.user);
    }

    sim_result finish() {
        sim_result res;
        res.completed = completed_;
        res.preemptions = preemptions_;
        res.steps = steps_;
        res.max_in_flight = max_in_flight_;
        res.requests.resize(reqs_.size());
        double makespan = 0.0;
        std::vector<double> ttft, tpot, e2e;
        ttft.reserve(reqs_.size()), e2e.reserve(reqs_.size()), tpot.reserve(reqs_.size());
        for (std::size_t i = 0; i < reqs_.size(); ++i) {
            const request& q = reqs_[i];
            request_record& rec = res.requests[i];
            rec.arrival = q.arrival * units::s;
            rec.first_token = q.first * units::s;
            rec.finish = q.finish * units::s;
            rec.input_tokens = q.input, rec.output_tokens = q.output;
            rec.replica = q.replica, rec.preemptions = q.preemptions;
            rec.finished = q.done;
            res.input_tokens += q.input;
            res.output_tokens += q.output;
            makespan = std::max(makespan, q.finish);
            if (static_cast<std::int64_t>(i) < w_.warmup_requests) continue;
            ttft.push_back(q.first - q.arrival);
            e2e.push_back(q.finish - q.arrival);
            if (q.output > 1) tpot.push_back((q.finish - q.first) / static_cast<double>(q.output - 1));
        }
        res.measured = static_cast<std::int64_t>(e2e.size());
        res.ttft = summarise(ttft);
        res.tpot = summarise(tpot);
        res.e2e = summarise(e2e);
        res.itl = summarise_counts(itl_);
        res.makespan = makespan * units::s;
        if (makespan > 0.0) {
            res.requests_per_s = static_cast<double>(completed_) / makespan;
            res.output_tokens_per_s = static_cast<double>(res.output_tokens) / makespan;
            double busy = 0.0, occ = 0.0;
            for (const auto& r : reps_) busy += r.busy_time, occ += r.occupancy_time;
            const double capacity_time = makespan * static_cast<double>(reps_.size());
            res.busy_fraction = busy / capacity_time;
            if (prefill_) {
                double pre = 0.0;
                for (int i = 0; i < prefill_replicas_; ++i) pre += reps_[static_cast<std::size_t>(i)].busy_time;
                res.prefill_busy_fraction = pre / (makespan * prefill_replicas_);
                res.decode_busy_fraction = (busy - pre) / (makespan * s_.replicas);
            }
            res.kv_occupancy_mean = occ / capacity_time;
        }
        res.kv_occupancy_max = occupancy_max_;
        return res;
    }

    const workload_spec& w_;
    const scheduler_spec& s_;
    const step_time_fn& f_;
    const scheduler_spec* prefill_ = nullptr;      // disaggregated: the prefill pool's engine
    const step_time_fn* prefill_f_ = nullptr;
    std::function<duration(std::int64_t)> transfer_;
    int prefill_replicas_ = 0;                      // replicas [0, prefill_replicas_) are the prefill pool
    std::int64_t total_ = 0, decode_blocks_ = 0, prefill_blocks_ = 0, shared_blocks_ = 0;
    std::vector<request> reqs_;
    std::vector<double> arrivals_;
    std::vector<replica> reps_;
    std::vector<std::size_t> dirty_;
    run_plan plan_;                          // run_decodes: the running requests, gathered
    bool decode_runs_ = true;
    std::int64_t run_steps_ = 0;
    value_counts itl_;  // (token gap, how many), measured requests only
    std::priority_queue<event, std::vector<event>, std::greater<event>> events_;
    rng think_rng_{w_.seed, 2};
    rng accept_rng_{w_.seed, 3};
    double now_ = 0.0, occupancy_max_ = 0.0;
    std::int64_t seq_ = 0, next_id_ = 0, in_flight_ = 0, max_in_flight_ = 0, completed_ = 0, preemptions_ = 0,
                 steps_ = 0;
};

// ---- CSV helpers --------------------------------------------------------------------------

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

inline std::vector<std::string_view> split_commas(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        const auto comma = line.find(',', start);
        out.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
        if (comma == std::string_view::npos) return out;
        start = comma + 1;
    }
}

}  // namespace detail::sim

inline std::vector<trace_row> read_trace_csv(std::string_view text, const std::string& source) {
    using detail::sim::trim;
    const std::string allowed_header = "'input_tokens,output_tokens' or 'input_tokens,output_tokens,arrival_s'";
    std::vector<trace_row> rows;
    std::size_t columns = 0;  // 0 until the header is read
    int line_no = 0;
    double last_arrival = 0.0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const auto nl = text.find('\n', pos);
        const std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++line_no;
        const std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;
        const std::string where = "line " + std::to_string(line_no);
        const auto f = detail::sim::split_commas(line);
        if (columns == 0) {
            const bool ok = f.size() >= 2 && f.size() <= 3 && f[0] == "input_tokens" && f[1] == "output_tokens" &&
                            (f.size() == 2 || f[2] == "arrival_s");
            if (!ok)
                throw config_error(where, "'" + std::string(line) + "'", "trace header in " + source + " not recognised",
                                   allowed_header);
            columns = f.size();
            continue;
        }
        if (f.size() != columns)
            throw config_error(where, "'" + std::string(line) + "'",
                               "expected " + std::to_string(columns) + " columns in " + source + ", got " +
                                   std::to_string(f.size()));
        trace_row row;
        const char* names[] = {"input_tokens", "output_tokens"};
        for (std::size_t c = 0; c < 2; ++c) {
            std::int64_t v = 0;
            const auto [end, ec] = std::from_chars(f[c].data(), f[c].data() + f[c].size(), v);
            if (ec != std::errc{} || end != f[c].data() + f[c].size() || v < 1)
                throw config_error(where, "'" + std::string(f[c]) + "'",
                                   "column " + std::to_string(c + 1) + " '" + names[c] + "' in " + source +
                                       " is not a token count",
                                   "an integer >= 1");
            (c == 0 ? row.input_tokens : row.output_tokens) = v;
        }
        if (columns == 3) {
            double a = 0.0;
            const auto [end, ec] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), a);
            if (ec != std::errc{} || end != f[2].data() + f[2].size() || !(a >= 0.0) || !std::isfinite(a))
                throw config_error(where, "'" + std::string(f[2]) + "'",
                                   "column 3 'arrival_s' in " + source + " is not a time", "seconds >= 0");
            if (!rows.empty() && a < last_arrival)
                throw config_error(where, "'" + std::string(f[2]) + "'",
                                   "column 3 'arrival_s' in " + source + " goes back in time (previous row " +
                                       detail::sim::num(last_arrival) + " s)",
                                   "non-decreasing arrival times");
            last_arrival = a;
            row.arrival = a * units::s;
        }
        rows.push_back(row);
    }
    if (columns == 0) throw config_error(source, "", "trace has no header", allowed_header);
    if (rows.empty()) throw config_error(source, "", "trace has no rows");
    return rows;
}

inline std::vector<trace_row> read_trace_csv_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw config_error(path, "", "cannot read file");
    std::ostringstream ss;
    ss << in.rdbuf();
    return read_trace_csv(ss.str(), path);
}

inline sim_result simulate(const workload_spec& workload, const scheduler_spec& scheduler,
                           const step_time_fn& step_time) {
    return detail::sim::simulator(workload, scheduler, step_time).run();
}

inline sim_result simulate_disaggregated(const workload_spec& workload, const disaggregated_scheduler& scheduler,
                                         const step_time_fn& prefill_step, const step_time_fn& decode_step) {
    if (!scheduler.kv_transfer) throw internal_error("simulate_disaggregated: no kv_transfer function");
    return detail::sim::simulator(workload, scheduler, prefill_step, decode_step).run();
}

}  // namespace capplan
