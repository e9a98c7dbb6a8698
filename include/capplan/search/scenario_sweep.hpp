// A sweep over any scenario keys inside the core (issue #23 item 1): the base scenario parsed once; per point,
// the grid's values patched into a parsed copy, read into a typed scenario and estimated, and the result's
// figures written to columns (report/result_columns.hpp). No JSON text is written or parsed per point.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/catalog.hpp"
#include "capplan/progress.hpp"
#include "capplan/report/result_columns.hpp"

namespace capplan {

// One key of the grid ("system.count", "inference.batch", "model") and its values, each a JSON text
// ("16", "\"H200\"", "{\"preset\": \"HGX-H200\"}"); a null value leaves the base scenario's value.
struct sweep_axis {
    std::string key;
    std::vector<std::string> values;
};

struct sweep_column {
    std::string key;  // the result's dotted key
    column_kind kind;
    std::vector<double> numbers;                   // number, integer and boolean (1 / 0) kinds; NaN: absent
    std::vector<std::optional<std::string>> texts;  // text kind
};

struct sweep_table {
    std::vector<sweep_column> columns;           // asked for, or every column some point has, in result order
    std::map<std::size_t, std::string> errors;                 // point -> why it cannot be estimated
    std::map<std::size_t, std::vector<std::string>> reasons;   // point -> why its plan is infeasible
    std::size_t points = 0;                      // computed: every point, or the first ones when stopped
    bool stopped = false;
};

// Points: the axes' combinations, the last axis varying fastest (as itertools.product); at most 2^32. `watch`
// counts them as they finish; a stop request ends the sweep after the pieces of points under way (64 points each),
// keeping the points before the first piece not started. `columns` empty: every column some point has; given, the
// parts of the estimate none of them reads are not computed (estimate_parts: the memory limits, the cold start, the
// checkpoint, the FLOPs, the cost, the data reading), which leaves the figures read the same.
// Throws config_error for a base that is not a JSON object, an empty axis, an unknown or repeated column, or a table
// larger than half the machine's memory (8 bytes per point and column).
sweep_table sweep_scenario(std::string_view base_json, const std::filesystem::path& base_dir,
                           const std::vector<sweep_axis>& axes, const std::vector<std::string>& columns,
                           int threads = 0, progress* watch = nullptr, const catalog& cat = default_catalog());

}  // namespace capplan
