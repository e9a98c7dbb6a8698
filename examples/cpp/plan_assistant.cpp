// Sizes the README's assistant (Llama-3.1-70B in fp8 for 50 users on 8 H200s) with the C++ API:
// read a scenario, estimate it, print what fits and how fast. The catalog is the installed one
// (CAPPLAN_CATALOG_DIR comes from the capplan::capplan target).
#include <cstdio>
#include <exception>

#include "capplan/error.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

int main() {
    constexpr const char* scenario_json = R"({
        "model": "Llama-3.1-70B",
        "system": {"preset": "HGX-H200", "count": 8},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "parallelism": {"tp": 8},
        "inference": {"input_tokens": 8000, "output_tokens": 1000, "concurrency": 50}})";
    try {
        capplan::set_catalog_dir(CAPPLAN_CATALOG_DIR);
        const capplan::scenario s = capplan::read_scenario(scenario_json, capplan::default_catalog());
        const capplan::estimate_result r = capplan::estimate(s);
        std::printf("parameters: %lld\n", static_cast<long long>(r.model.parameters));
        std::printf("fits: %s\n", r.memory.fits.value_or(false) ? "yes" : "no");
        if (r.inference && r.inference->max_batch)
            std::printf("most concurrent requests that fit: %lld\n", static_cast<long long>(*r.inference->max_batch));
        if (r.inference && r.inference->tpot_s) std::printf("time per output token: %.1f ms\n", 1e3 * *r.inference->tpot_s);
        return r.feasible.value_or(true) ? 0 : 1;
    } catch (const capplan::error& e) {
        std::fprintf(stderr, "capplan: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
}
