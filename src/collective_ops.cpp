#include "capplan/analysis/collective_ops.hpp"

#include "capplan/detail/closest.hpp"
#include "capplan/error.hpp"

namespace capplan {

collective_op parse_collective_op(std::string_view name, const std::string& field) {
    std::string key = detail::lower(name);
    if (key.size() > 5 && key.compare(key.size() - 5, 5, "_perf") == 0) key.resize(key.size() - 5);
    std::string plain;
    for (char c : key)
        if (c != '_' && c != '-') plain += c;
    std::vector<std::string> names;
    std::string allowed;
    for (const auto& [op, n] : collective_op_names()) {
        std::string p;
        for (char c : n)
            if (c != '_') p += c;
        if (p == plain) return op;
        names.push_back(n);
        allowed += (allowed.empty() ? "" : ", ") + n;
    }
    const auto near = detail::closest(name, names, 1);
    throw config_error(field, "'" + std::string(name) + "'",
                       "unknown collective operation" + (near.empty() ? std::string() : "; did you mean " + near.front() + "?"),
                       allowed);
}

}  // namespace capplan
