// The source tree's catalog, loaded once per benchmark binary.
#pragma once

#include "capplan/catalog.hpp"

inline const capplan::catalog& bench_catalog() {
    static const capplan::catalog c = capplan::catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    return c;
}
