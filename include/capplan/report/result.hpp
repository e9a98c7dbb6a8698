// The result of an estimate, nested as the public result JSON (docs/scenario.md): sizes in
// bytes, times in seconds. A field that is not computed stays empty and is absent from the
// JSON, never zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/parameters.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units.hpp"

namespace capplan {

struct model_result {
    std::string name;
    std::string model_type;
    std::string source;
    std::int64_t parameters = 0;
    std::int64_t active_parameters = 0;
    parameter_breakdown breakdown;
};

struct memory_result {
    std::optional<data_size> per_device;
    std::optional<data_size> capacity;  // per device, from the accelerator catalog
    std::optional<bool> fits;
    std::optional<data_size> weights;   // per device
    std::optional<data_size> weights_total;  // whole model, all devices' shards together
    std::optional<data_size> kv_cache;
    std::optional<data_size> kv_cache_per_token;
    std::optional<data_size> activations;
    std::optional<data_size> gradients;
    std::optional<data_size> optimizer;
    std::optional<data_size> overhead;
};

struct chain_stage {
    std::string stage;
    duration time;
    double utilization = 0.0;
};

struct system_summary {
    std::string preset;
    std::string accelerator;
    int count = 0;
    int per_node = 0;
    int nodes = 0;
    std::string weights_format;
    std::string kv_cache_format;
    int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
};

struct estimate_result {
    model_result model;
    system_summary system;
    memory_result memory;
    std::vector<chain_stage> chain;
    std::optional<std::string> bottleneck;
    std::optional<bool> feasible;
    std::vector<std::string> reasons;
    std::vector<std::string> notes;  // assumptions the numbers rest on
    std::string catalog_version;
};

// The result as JSON text (see docs/scenario.md for the layout).
std::string to_json(const estimate_result& r, int indent = 2);
// Typed specs as JSON (SI numbers, null for unknown), for bindings and printers.
std::string to_json(const model_spec& m, int indent = -1);
std::string to_json(const system_spec& s, int indent = -1);
std::string to_json(const accelerator_spec& a, int indent = -1);

}  // namespace capplan
