// Shared by the libFuzzer harnesses (fuzz/README.md): every input either parses or throws capplan::error; anything
// else (another exception, a crash, a sanitizer report, a hang) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <string_view>

#include "capplan/error.hpp"

namespace capplan::fuzz {

template <class F>
int run(const std::uint8_t* data, std::size_t size, F&& f) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        f(text);
    } catch (const capplan::error&) {
        // The answer to bad input: a typed error naming the field.
    } catch (const std::exception& e) {
        std::fprintf(stderr, "non-capplan exception: %s\n", e.what());
        std::abort();
    }
    return 0;
}

}  // namespace capplan::fuzz
