// Private: strict reading of JSON objects with JSON-pointer error paths. Every key a reader
// asks for is remembered, so finish() can reject unknown keys and list the allowed ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "capplan/detail/closest.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

namespace capplan::detail {

using json = nlohmann::json;

// RFC 6901 escaping of one reference token.
inline std::string pointer_join(const std::string& base, std::string_view key) {
    std::string token;
    for (char c : key) {
        if (c == '~') token += "~0";
        else if (c == '/') token += "~1";
        else token += c;
    }
    return base + "/" + token;
}

inline std::string short_value(const json& j) {
    std::string s = j.dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

inline std::string type_name(const json& j) {
    if (j.is_number_integer()) return "integer";
    if (j.is_number()) return "number";
    return j.type_name();
}

// Parses JSON text; malformed JSON is a json_error with line and column.
json parse_json_text(std::string_view text, const std::string& what);
json read_json_file(const std::filesystem::path& file);

class object_reader {
public:
    object_reader(const json& j, std::string path, bool strict = true) : j_(j), path_(std::move(path)), strict_(strict) {
        if (!j_.is_object())
            throw config_error(path_.empty() ? "/" : path_, short_value(j_), "expected a JSON object, got " + type_name(j_));
        known_.reserve(256);  // one allocation for the keys a reader asks for (a scenario is read per sweep point)
    }

    const std::string& path() const { return path_; }
    std::string path(std::string_view key) const { return pointer_join(path_, key); }

    // The value at `key` (nullptr if absent); the key is recorded as known.
    const json* get(std::string_view key) {
        remember(key);
        const auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }
    bool present(std::string_view key) const {
        const auto it = j_.find(key);
        return it != j_.end() && !it->is_null();
    }
    // Marks keys as allowed without reading them (documentation-only fields).
    void allow(std::initializer_list<std::string_view> keys) {
        for (auto k : keys) remember(k);
    }

    std::optional<std::string> string(std::string_view key) {
        const json* v = get(key);
        if (!v || v->is_null()) return std::nullopt;
        if (!v->is_string()) wrong_type(key, *v, "a string");
        return v->get<std::string>();
    }
    std::string required_string(std::string_view key) {
        auto s = string(key);
        if (!s) missing(key, "a string");
        return *s;
    }

    // An integer in [min, max]: whole numbers written as floats (2.0, 1e3) count; anything beyond
    // the range, int64's included, is an error naming the field, never a wrapped value.
    std::optional<std::int64_t> integer(std::string_view key, std::int64_t min = 0,
                                        std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
        const json* v = get(key);
        if (!v || v->is_null()) return std::nullopt;
        if (v->is_boolean() || !v->is_number()) wrong_type(key, *v, "an integer");
        auto out_of_range = [&](const char* side, std::int64_t bound) {  // the allowed text only for the error
            const std::string allowed = max == std::numeric_limits<std::int64_t>::max()
                                            ? "an integer >= " + std::to_string(min)
                                            : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
            throw config_error(path(key), short_value(*v), std::string("must be at ") + side + " " + std::to_string(bound),
                               allowed);
        };
        std::int64_t n = 0;
        if (v->is_number_float()) {
            const double x = v->get<double>();
            if (!std::isfinite(x) || x != std::floor(x)) wrong_type(key, *v, "an integer");
            if (x < -0x1p63) out_of_range("least", min);
            if (x >= 0x1p63) out_of_range("most", max);  // checked before the conversion, which would be undefined
            n = static_cast<std::int64_t>(x);
        } else if (v->is_number_unsigned() &&
                   v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            out_of_range("most", max);
        } else {
            n = v->get<std::int64_t>();
        }
        if (n < min) out_of_range("least", min);
        if (n > max) out_of_range("most", max);
        return n;
    }
    std::int64_t required_integer(std::string_view key, std::int64_t min = 0,
                                  std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
        auto n = integer(key, min, max);
        if (!n) missing(key, "an integer >= " + std::to_string(min));
        return *n;
    }

    std::optional<double> number(std::string_view key, double min) {
        const json* v = get(key);
        if (!v || v->is_null()) return std::nullopt;
        if (v->is_boolean() || !v->is_number()) wrong_type(key, *v, "a number");
        const double x = v->get<double>();
        if (x < min)
            throw config_error(path(key), short_value(*v), "must be at least " + format_min(min), "a number >= " + format_min(min));
        return x;
    }

    std::optional<bool> boolean(std::string_view key) {
        const json* v = get(key);
        if (!v || v->is_null()) return std::nullopt;
        if (!v->is_boolean()) wrong_type(key, *v, "true or false");
        return v->get<bool>();
    }

    // One of `choices` (a braced list of names, or a vector of them); the error lists them.
    template <class Names = std::initializer_list<std::string_view>>
    std::optional<std::string> choice(std::string_view key, const Names& choices) {
        auto s = string(key);
        if (!s) return s;
        if (std::find(std::begin(choices), std::end(choices), *s) == std::end(choices))
            throw config_error(path(key), "'" + *s + "'", "not an allowed value", join(choices));
        return s;
    }

    template <class Names = std::initializer_list<std::string_view>>
    std::string required_choice(std::string_view key, const Names& choices) {
        auto s = choice(key, choices);
        if (!s) missing(key, join(choices));
        return *s;
    }

    // A quantity: a unit string, null (unknown), or {"value": <string|null>, "source": ..., ...}.
    template <class Q>
    std::optional<Q> quantity(std::string_view key, bool allow_negative = false) {
        const json* v = get(key);
        if (!v || v->is_null()) return std::nullopt;
        std::string where = path(key);
        const json* text = v;
        if (v->is_object()) {
            object_reader sourced(*v, where, strict_);
            text = sourced.get("value");
            if (sourced.required_string("source").empty())
                throw config_error(sourced.path("source"), "''", "must name where the value comes from");
            sourced.choice("confidence", {"datasheet", "config", "paper", "measured", "secondary", "derived"});
            sourced.allow({"note"});
            sourced.finish();
            where = pointer_join(where, "value");
            if (!text || text->is_null()) return std::nullopt;
        }
        if (!text->is_string())
            throw unit_error(where, short_value(*text), "expected a string with a unit, got " + type_name(*text),
                             allowed_units(dimension_of<Q>::value));
        const Q q = parse<Q>(text->get<std::string>(), where);
        if (!allow_negative && q.si() < 0)
            throw config_error(where, short_value(*text), "must not be negative", "a " + dimension_name(dimension_of<Q>::value) + " >= 0");
        return q;
    }
    template <class Q>
    Q required_quantity(std::string_view key) {
        auto q = quantity<Q>(key);
        if (!q) missing(key, "a " + dimension_name(dimension_of<Q>::value) + " such as " + example<Q>());
        return *q;
    }

    // A nested object reader (throws if the value is not an object).
    object_reader child(std::string_view key) {
        const json* v = get(key);
        if (!v) missing(key, "an object");
        return object_reader(*v, path(key), strict_);
    }

    // Rejects keys nobody asked for (in strict mode).
    void finish() const {
        if (!strict_) return;
        for (const auto& [k, v] : j_.items()) {
            if (asked(k)) continue;
            if (k == "$schema" || k == "$comment") continue;
            auto near = closest(k, known(), 1);
            throw config_error(path(k), "'" + k + "'",
                               "unknown key" + (near.empty() ? std::string() : "; did you mean '" + near.front() + "'?"),
                               join(known()));
        }
    }

    // A required key is missing. When the object has a key that looks like a misspelling of it
    // ("modle" for "model"), that key is the error: the user wrote it, just not right.
    [[noreturn]] void missing(std::string_view key, const std::string& what) const {
        std::vector<std::string> given;
        for (const auto& [k, v] : j_.items())
            if (!asked(k)) given.push_back(k);
        if (const auto near = closest(key, given, 1); !near.empty())
            throw config_error(path(near.front()), "'" + near.front() + "'",
                               "unknown key; did you mean '" + std::string(key) + "'?", what + " under '" + std::string(key) + "'");
        throw config_error(path(key), "", "required field is missing", what);
    }
    [[noreturn]] void wrong_type(std::string_view key, const json& v, const std::string& what) const {
        throw config_error(path(key), short_value(v), "expected " + what + ", got " + type_name(v), what);
    }

private:
    // The keys asked for, each followed by a NUL, in one string: no allocation per key.
    void remember(std::string_view key) {
        known_ += key;
        known_ += '\0';
    }
    // f(key) for each key asked for, in order, until f returns true; whether one did.
    template <class F>
    bool any_known(F&& f) const {
        for (std::size_t at = 0; at < known_.size();) {
            const std::size_t end = known_.find('\0', at);
            if (f(std::string_view(known_).substr(at, end - at))) return true;
            at = end + 1;
        }
        return false;
    }
    bool asked(std::string_view key) const {
        return any_known([&](std::string_view k) { return k == key; });
    }
    std::vector<std::string> known() const {
        std::vector<std::string> out;
        any_known([&](std::string_view k) {
            out.emplace_back(k);
            return false;
        });
        return out;
    }
    template <class Names>
    static std::string join(const Names& names) {
        std::string out;
        std::vector<std::string_view> seen;
        for (const auto& name : names) {
            const std::string_view s(name);
            if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
            seen.push_back(s);
            out += (out.empty() ? "" : ", ");
            out += s;
        }
        return out;
    }
    static std::string format_min(double m) {
        std::string s = std::to_string(m);
        while (s.size() > 1 && s.back() == '0') s.pop_back();
        if (!s.empty() && s.back() == '.') s.pop_back();
        return s;
    }
    template <class Q>
    static std::string example() {
        const dimension d = dimension_of<Q>::value;
        if (d == dimension{1, 0, 0, 0}) return "\"80 GB\"";
        if (d == dimension{1, 0, -1, 0}) return "\"3.35 TB/s\"";
        if (d == dimension{0, 1, -1, 0}) return "\"989 TFLOP/s\"";
        if (d == dimension{0, 0, 1, 0}) return "\"25 us\"";
        return "\"700 W\"";
    }

    const json& j_;
    std::string path_;
    bool strict_;
    std::string known_;
};

// A list element at `at` that must be one of `names` (a fixed vocabulary: LoRA's projections, recompute modules):
// its index, or an error naming `at` that suggests the closest name. `what` says what the names are.
inline std::size_t name_index(const json& v, const std::string& at, const std::vector<std::string>& names,
                              const std::string& what) {
    std::string allowed;
    for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
    if (!v.is_string()) throw config_error(at, short_value(v), "expected " + what, allowed);
    const std::string name = v.get<std::string>();
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
        const auto near = closest(name, names, 1);
        throw config_error(at, "'" + name + "'", "not " + what +
                           (near.empty() ? std::string() : "; did you mean '" + near.front() + "'?"), allowed);
    }
    return static_cast<std::size_t>(it - names.begin());
}

}  // namespace capplan::detail
