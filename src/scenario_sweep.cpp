#include "capplan/search/scenario_sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "capplan/detail/machine_memory.hpp"
#include "capplan/detail/threads.hpp"
#include "capplan/error.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_value.hpp"
#include "capplan/units_parse.hpp"
#include "json_reader.hpp"

namespace capplan {

namespace {

using json = nlohmann::json;

constexpr std::size_t piece = 64;  // points a thread takes at a time: the unit of progress and of a stop
constexpr double absent = std::numeric_limits<double>::quiet_NaN();

struct parsed_axis {
    std::string key;
    std::vector<json> values;
};

// A point's figures before they join the table: every column's value, per point of a piece.
struct piece_values {
    std::vector<double> numbers;                    // [column * piece + k]
    std::vector<std::optional<std::string>> texts;  // [column * piece + k]
    std::vector<bool> seen;                         // per column: some point of the piece has it
    std::vector<std::pair<std::size_t, std::string>> errors;                 // (point, why it cannot be estimated)
    std::vector<std::pair<std::size_t, std::vector<std::string>>> reasons;   // (point, why it is infeasible)
};

}  // namespace

sweep_table sweep_scenario(std::string_view base_json, const std::filesystem::path& base_dir,
                           const std::vector<sweep_axis>& axes, const std::vector<std::string>& columns, int threads,
                           progress* watch, const catalog& cat) {
    const json base = parse_scenario_json(base_json);
    if (!base.is_object())
        throw config_error("/", detail::short_value(base), "expected a JSON object, got " + detail::type_name(base));
    std::vector<parsed_axis> grid;
    std::size_t points = 1;
    bool nulls = false;  // a null value restores the base's: then each point starts from a fresh copy
    for (std::size_t a = 0; a < axes.size(); ++a) {
        const std::string where = "/grid/" + axes[a].key;
        if (axes[a].values.empty()) throw config_error(where, "[]", "no values", "a list of values");
        parsed_axis p{axes[a].key, {}};
        for (const std::string& v : axes[a].values) {
            p.values.push_back(parse_scenario_json(v, where));
            nulls = nulls || p.values.back().is_null();
        }
        if (points > (std::size_t{1} << 32) / p.values.size())
            throw config_error("/grid", std::to_string(points) + " x " + std::to_string(p.values.size()),
                               "more than 2^32 points", "a smaller grid");
        points *= p.values.size();
        grid.push_back(std::move(p));
    }

    // The columns to fill: those asked for, or all (only those some point has are kept).
    const std::vector<result_column>& all = result_columns();
    std::vector<const result_column*> wanted;
    if (columns.empty()) {
        for (const result_column& c : all) wanted.push_back(&c);
    } else {
        for (std::size_t i = 0; i < columns.size(); ++i) {
            const std::string field = "/columns/" + std::to_string(i);
            const result_column* c = &result_column_named(columns[i], field);
            if (std::find(wanted.begin(), wanted.end(), c) != wanted.end())
                throw config_error(field, "'" + columns[i] + "'", "asked for twice", "each column once");
            wanted.push_back(c);
        }
    }
    const std::size_t ncol = wanted.size();
    const data_size table = static_cast<double>(points) * static_cast<double>(ncol) * sizeof(double) * units::B;
    if (const double memory = detail::physical_memory_bytes(); memory > 0 && table.si() > memory / 2)
        throw config_error("/grid", std::to_string(points) + " points x " + std::to_string(ncol) + " columns",
                           "a table of " + format(table) + ", more than half this machine's memory",
                           "a smaller grid, or fewer columns");
    const estimate_parts parts = parts_for(wanted);  // every part but the ranges when every column is wanted

    sweep_table out;
    std::vector<std::vector<double>> numbers(ncol);                    // allocated when a column is first seen
    std::vector<std::vector<std::optional<std::string>>> texts(ncol);
    std::vector<bool> seen(ncol, !columns.empty());
    std::mutex merge;
    const std::size_t pieces = (points + piece - 1) / piece;
    if (watch) watch->add_total(static_cast<std::int64_t>(points));
    std::atomic<std::size_t> next{0};

    auto run_piece = [&](std::size_t p, json& doc, scenario_sections& reuse, piece_values& v) {
        const std::size_t first = p * piece, count = std::min(piece, points - first);
        std::fill(v.numbers.begin(), v.numbers.end(), absent);
        std::fill(v.texts.begin(), v.texts.end(), std::nullopt);
        std::fill(v.seen.begin(), v.seen.end(), false);
        v.errors.clear();
        v.reasons.clear();
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t i = first + k;
            if (nulls) doc = base;
            std::size_t rest = i;  // the last axis varies fastest
            std::vector<std::size_t> at(grid.size());
            for (std::size_t a = grid.size(); a-- > 0;) {
                at[a] = rest % grid[a].values.size();
                rest /= grid[a].values.size();
            }
            try {
                for (std::size_t a = 0; a < grid.size(); ++a)  // in the grid's order, as the Python sweep applies them
                    if (!grid[a].values[at[a]].is_null()) set_scenario_key(doc, grid[a].key, grid[a].values[at[a]]);
                scenario sc = read_scenario_value(doc, cat, base_dir, &reuse);
                const estimate_result r = estimate(sc, cat, parts);
                reuse.keep(std::move(sc), doc);
                for (std::size_t c = 0; c < ncol; ++c) {
                    const result_column& col = *wanted[c];
                    if (col.kind == column_kind::text) {
                        if (auto t = col.text(r)) {
                            v.texts[c * piece + k] = std::move(t);
                            v.seen[c] = true;
                        }
                    } else if (auto x = col.number(r)) {
                        v.numbers[c * piece + k] = *x;
                        v.seen[c] = true;
                    }
                }
                if (!r.reasons.empty()) v.reasons.emplace_back(i, r.reasons);
            } catch (const std::exception& e) {
                v.errors.emplace_back(i, *e.what() ? e.what() : "error");
                if (!nulls) doc = base;  // a failed patch may have left the document half changed
            }
        }
        const std::lock_guard<std::mutex> lock(merge);
        for (auto& [i, text] : v.errors) out.errors.emplace(i, std::move(text));
        for (auto& [i, why] : v.reasons) out.reasons.emplace(i, std::move(why));
        for (std::size_t c = 0; c < ncol; ++c) {
            if (!v.seen[c] && !seen[c]) continue;
            seen[c] = true;
            if (wanted[c]->kind == column_kind::text) {
                if (texts[c].empty()) texts[c].resize(points);
                std::move(v.texts.begin() + c * piece, v.texts.begin() + c * piece + count, texts[c].begin() + first);
            } else {
                if (numbers[c].empty()) numbers[c].assign(points, absent);
                std::copy_n(v.numbers.begin() + c * piece, count, numbers[c].begin() + first);
            }
        }
    };

    // Pieces are taken in order; one taken but not run (a stop) ends the kept points: every piece before it ran whole.
    std::atomic<std::size_t> first_skipped{pieces};
    detail::run_threads(threads, [&](int, int) {
        json doc = base;
        scenario_sections reuse;  // the previous point's model and system, for points that change neither
        piece_values v{std::vector<double>(ncol * piece), std::vector<std::optional<std::string>>(ncol * piece),
                       std::vector<bool>(ncol), {}, {}};
        for (std::size_t p = next++; p < pieces; p = next++) {
            if (stop_requested(watch)) {
                for (std::size_t was = first_skipped; p < was && !first_skipped.compare_exchange_weak(was, p);) {
                }
                break;
            }
            run_piece(p, doc, reuse, v);
            if (watch) watch->advance(static_cast<std::int64_t>(std::min(piece, points - p * piece)));
        }
    });

    out.points = std::min(points, first_skipped * piece);
    out.stopped = first_skipped < pieces;
    out.errors.erase(out.errors.lower_bound(out.points), out.errors.end());  // points of pieces after a stop
    out.reasons.erase(out.reasons.lower_bound(out.points), out.reasons.end());
    for (std::size_t c = 0; c < ncol; ++c) {
        if (!seen[c]) continue;
        sweep_column col{wanted[c]->key, wanted[c]->kind, {}, {}};
        if (col.kind == column_kind::text) {
            col.texts = std::move(texts[c]);
            col.texts.resize(out.points);
        } else {
            col.numbers = std::move(numbers[c]);
            col.numbers.resize(out.points, absent);
        }
        out.columns.push_back(std::move(col));
    }
    return out;
}

}  // namespace capplan
