// A scenario's JSON through the reader and, when it reads, the whole estimate (memory, speed, simulation, cold start).
#include "capplan/catalog.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return capplan::fuzz::run(data, size, [](std::string_view text) {
        const capplan::scenario s = capplan::read_scenario(text, capplan::default_catalog());
        (void)capplan::estimate(s);
    });
}
