// Exits 77 (ctest: skipped) without a GPU; with one, checks the device query reports sane values.
#include <cstdio>

#include "capplan/device.hpp"

int main() {
    const auto s = capplan::query_devices();
    if (s.devices.empty()) {
        std::printf("no GPU: %s\n", s.reason.c_str());
        return 77;
    }
    for (const auto& d : s.devices) {
        std::printf("%s sm_%d%d %.1f GB\n", d.name.c_str(), d.compute_major, d.compute_minor, d.memory_bytes / 1e9);
        if (d.memory_bytes <= 0 || d.compute_major < 3) return 1;
    }
    return 0;
}
