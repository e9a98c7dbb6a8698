// Private: the JSON-level entry point shared by the catalog and the scenario reader.
#pragma once

#include "capplan/spec/model_spec.hpp"
#include "json_reader.hpp"

namespace capplan::detail {

// strict = true (catalog files): keys outside hf_config_known_keys() are errors.
model_spec model_from_hf_json(const json& config, std::string name, const std::string& field, bool strict);

}  // namespace capplan::detail
