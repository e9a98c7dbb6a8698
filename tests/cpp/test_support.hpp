// Shared by the doctest files: the shipped catalog, loaded once.
#pragma once

#include "capplan/catalog.hpp"

namespace capplan::test {

inline const catalog& shipped_catalog() {
    static const catalog c = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    return c;
}

}  // namespace capplan::test
