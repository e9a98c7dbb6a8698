// Shared by the doctest files: the shipped catalog, loaded once.
#pragma once

#include <doctest/doctest.h>

#include "capplan/catalog.hpp"
#include "capplan/error.hpp"

namespace capplan::test {

inline const catalog& shipped_catalog() {
    static const catalog c = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    return c;
}

// The config_error `f` throws (a test failure if it throws none).
template <class F>
config_error error_of(F&& f) {
    try {
        f();
    } catch (const config_error& e) {
        return e;
    }
    FAIL("no config_error thrown");
    return config_error("", "", "");
}

}  // namespace capplan::test
