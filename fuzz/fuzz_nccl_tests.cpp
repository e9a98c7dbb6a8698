// nccl-tests output, as text (the first byte even) or as -J JSON (odd), through the parser and the fit.
#include "capplan/calibration/nccl_tests.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const bool as_json = data[0] % 2 == 1;
    return capplan::fuzz::run(data + 1, size - 1, [as_json](std::string_view text) {
        const capplan::nccl_tests_run run = as_json ? capplan::parse_nccl_tests_json(text, "fuzz.json")
                                                    : capplan::parse_nccl_tests_text(text, "fuzz.txt");
        if (run.ranks > 0 && run.op) (void)capplan::fit_collective(run, *run.op, run.ranks, false);
    });
}
