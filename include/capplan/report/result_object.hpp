// An estimate's result as a JSON object (what to_json writes as text), for callers that read it without a text
// round trip (the Python binding's sweeps). Needs nlohmann_json, which the rest of the public API does not.
#pragma once

#include <nlohmann/json.hpp>

#include "capplan/report/result.hpp"

namespace capplan {

nlohmann::ordered_json result_object(const estimate_result& r);

}  // namespace capplan
