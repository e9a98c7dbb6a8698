// A quantity string ("80 GB", "3.35 TB/s", "1e308 kB") through the unit parser, and its value formatted back.
#include "capplan/units_parse.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return capplan::fuzz::run(data, size, [](std::string_view text) {
        const capplan::parsed_quantity q = capplan::parse_quantity(text, "/fuzz");
        (void)capplan::format_quantity(q.si, q.dim);
    });
}
