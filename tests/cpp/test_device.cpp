// device.hpp: the device query never throws; no devices always comes with a reason.
#include <doctest/doctest.h>

#include "capplan/device.hpp"

TEST_CASE("query_devices reports devices or why there are none") {
    const auto s = capplan::query_devices();
    if (s.devices.empty()) {
        CHECK_FALSE(s.reason.empty());
    } else {
        for (const auto& d : s.devices) {
            CHECK_FALSE(d.name.empty());
            CHECK(d.memory_bytes > 0);
        }
    }
}
