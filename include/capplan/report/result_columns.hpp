// An estimate's scalar figures by the dotted key the flattened result JSON gives them ("inference.ttft_s"),
// read straight from the typed result: a sweep's columns without a JSON object per point.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/estimate.hpp"
#include "capplan/report/result.hpp"

namespace capplan {

enum class column_kind { number, integer, boolean, text };

struct result_column {
    const char* key;  // section.key as capplan.result.flatten writes it (the JSON's nesting joined by dots)
    column_kind kind;
    std::optional<double> (*number)(const estimate_result&);     // number and integer kinds; boolean as 1 / 0
    std::optional<std::string> (*text)(const estimate_result&);  // text kind
};

// Every scalar figure a result can carry, in the order the result JSON writes them. Lists (the training
// breakdown, the chains, the notes, the ranges) are not columns.
const std::vector<result_column>& result_columns();

// The column named `key`; a config_error naming `field` (and listing the keys) when there is none.
const result_column& result_column_named(std::string_view key, const std::string& field);

// The parts of an estimate (estimate_parts) the figures of `columns` come from: the memory limits, the cold start,
// the checkpoint, the FLOPs and the cost only where a column reads them; never the ranges (no range is a column).
estimate_parts parts_for(const std::vector<const result_column*>& columns);

// Whether an estimate made with `parts` has computed column `c`'s figure.
bool computed_in(const estimate_parts& parts, const result_column& c);

}  // namespace capplan
