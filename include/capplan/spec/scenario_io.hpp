// Reading the public scenario JSON (documented in docs/scenario.md and
// models/schema/scenario.schema.json) into a typed scenario.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "capplan/catalog.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// Parses scenario JSON text. Catalog names resolve through `cat`; a model given as a path to a
// config.json is read relative to `base_dir`. Throws config_error (or a subclass) naming the field.
scenario read_scenario(std::string_view json_text, const catalog& cat, const std::filesystem::path& base_dir = {});

// A system alone, as the scenario's "system" value: a preset name (JSON string) or an object
// {preset, accelerator, count, per_node, scale_out, storage}. Errors name `field`.
system_spec read_system(std::string_view json_text, const catalog& cat, const std::string& field = "/system");

// inference.speculative and inference.prefix_cache alone, as JSON objects (sizing takes them without a
// scenario): the same rules and errors, under `field`.
speculative_spec read_speculative(std::string_view json_text, const model_spec& target, const catalog& cat,
                                  const std::string& field = "/inference/speculative");
prefix_cache_spec read_prefix_cache(std::string_view json_text, std::int64_t input_tokens,
                                    const std::string& field = "/inference/prefix_cache");

// A scenario's "cost" object alone, for `sys` (sizing prices its options with it): the same rules and errors, under
// `field`.
cost_spec read_cost(std::string_view json_text, const catalog& cat, const system_spec& sys,
                    const std::string& field = "/cost");

// The built-in default: an internal AI assistant for ~50 colleagues on one 8-GPU server.
std::string default_scenario_json();

}  // namespace capplan
