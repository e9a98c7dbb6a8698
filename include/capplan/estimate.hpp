// The main entry point: a scenario in, a result out.
#pragma once

#include "capplan/catalog.hpp"
#include "capplan/report/result.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// Everything the current models compute for `s`. Infeasibility is reported in the result.
estimate_result estimate(const scenario& s, const catalog& cat = default_catalog());

}  // namespace capplan
