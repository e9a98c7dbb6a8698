// Parsing and formatting of quantity strings. The unit table below is the only place where
// unit symbols meet their SI factors (taken from units.hpp's named constants).
#include "capplan/units_parse.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <span>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "capplan/detail/closest.hpp"
#include "capplan/error.hpp"

namespace capplan {
namespace {

using namespace units;

constexpr dimension size_dim{1, 0, 0, 0};
constexpr dimension flop_dim{0, 1, 0, 0};
constexpr dimension time_dim{0, 0, 1, 0};
constexpr dimension power_dim{0, 0, 0, 1};

struct unit_def {
    std::string_view symbol;
    double si;
    dimension dim;
};

// Units that may stand alone or as the numerator of "X/s".
const std::array<unit_def, 51> base_units{{
    {"B", B.si(), size_dim},       {"kB", kB.si(), size_dim},     {"MB", MB.si(), size_dim},
    {"GB", GB.si(), size_dim},     {"TB", TB.si(), size_dim},     {"PB", PB.si(), size_dim},
    {"KiB", KiB.si(), size_dim},   {"MiB", MiB.si(), size_dim},   {"GiB", GiB.si(), size_dim},
    {"TiB", TiB.si(), size_dim},   {"PiB", PiB.si(), size_dim},
    {"bit", bit.si(), size_dim},   {"b", bit.si(), size_dim},
    {"kbit", kbit.si(), size_dim}, {"kb", kbit.si(), size_dim},
    {"Mbit", Mbit.si(), size_dim}, {"Mb", Mbit.si(), size_dim},
    {"Gbit", Gbit.si(), size_dim}, {"Gb", Gbit.si(), size_dim},
    {"Tbit", Tbit.si(), size_dim}, {"Tb", Tbit.si(), size_dim},
    {"FLOP", FLOP.si(), flop_dim},   {"kFLOP", kFLOP.si(), flop_dim}, {"MFLOP", MFLOP.si(), flop_dim},
    {"GFLOP", GFLOP.si(), flop_dim}, {"TFLOP", TFLOP.si(), flop_dim}, {"PFLOP", PFLOP.si(), flop_dim},
    {"EFLOP", EFLOP.si(), flop_dim},
    // Integer operations (INT8/INT4 "TOPS") share the FLOP dimension: one op per element op.
    {"OP", FLOP.si(), flop_dim},   {"GOP", GFLOP.si(), flop_dim}, {"TOP", TFLOP.si(), flop_dim},
    {"POP", PFLOP.si(), flop_dim},
    {"ns", ns.si(), time_dim},     {"us", us.si(), time_dim},     {"\xC2\xB5s", us.si(), time_dim},
    {"ms", ms.si(), time_dim},     {"s", s.si(), time_dim},       {"min", minute.si(), time_dim},
    {"h", hour.si(), time_dim},    {"d", day.si(), time_dim},
    {"W", W.si(), power_dim},      {"kW", kW.si(), power_dim},    {"MW", MW.si(), power_dim},
    {"J", J.si(), {0, 0, 1, 1}},   {"kJ", 1e3 * J.si(), {0, 0, 1, 1}}, {"kWh", kWh.si(), {0, 0, 1, 1}},
    {"Wh", (W * hour).si(), {0, 0, 1, 1}},
    {"Hz", Hz.si(), {0, 0, -1, 0}}, {"kHz", kHz.si(), {0, 0, -1, 0}}, {"MHz", MHz.si(), {0, 0, -1, 0}},
    {"GHz", GHz.si(), {0, 0, -1, 0}},
}};

// One-word rate spellings common in vendor sheets: "Gbps", "TFLOPS", "TOPS".
const std::array<std::pair<std::string_view, std::string_view>, 14> rate_aliases{{
    {"bps", "b"}, {"kbps", "kb"}, {"Mbps", "Mb"}, {"Gbps", "Gb"}, {"Tbps", "Tb"},
    {"MBps", "MB"}, {"GBps", "GB"}, {"TBps", "TB"},
    {"FLOPS", "FLOP"}, {"GFLOPS", "GFLOP"}, {"TFLOPS", "TFLOP"}, {"PFLOPS", "PFLOP"},
    {"TOPS", "TOP"}, {"POPS", "POP"},
}};

const unit_def* find_base(std::string_view sym) {
    for (const auto& u : base_units)
        if (u.symbol == sym) return &u;
    return nullptr;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::vector<std::string> all_symbols() {
    std::vector<std::string> v;
    for (const auto& u : base_units) {
        v.emplace_back(u.symbol);
        if (u.dim == size_dim || u.dim == flop_dim) v.push_back(std::string(u.symbol) + "/s");
    }
    for (const auto& [alias, target] : rate_aliases) v.emplace_back(alias);
    return v;
}

[[noreturn]] void unknown_unit(std::string_view text, std::string_view unit, std::string_view field) {
    const std::string u(unit);
    if (u == "KB" || u == "Kb" || u == "KB/s" || u == "Kb/s")
        throw unit_error(std::string(field), quoted(text), "ambiguous unit '" + u + "'",
                         "kB (1000 B) or KiB (1024 B); kb/kbit for kilobits");
    std::string allowed;
    const auto near = detail::closest(u, all_symbols());
    for (const auto& n : near) allowed += (allowed.empty() ? "" : ", ") + n;
    throw unit_error(std::string(field), quoted(text),
                     "unknown unit '" + u + "'" + (near.empty() ? "" : "; did you mean " + allowed + "?"),
                     "B kB MB GB TB KiB MiB GiB TiB, bit kb Mb Gb Tb, FLOP TFLOP PFLOP, TOP, ns us ms s min h, "
                     "W kW, and rates X/s (GB/s, Gb/s, TFLOP/s) or Gbps/TFLOPS/TOPS");
}

// Resolves a unit expression: "GiB", "TB/s", "Gbps", "TFLOP/s".
std::optional<parsed_quantity> resolve_unit(std::string_view unit) {
    for (const auto& [alias, target] : rate_aliases)
        if (unit == alias) {
            const unit_def* u = find_base(target);
            return parsed_quantity{u->si, {u->dim.bytes, u->dim.flops, u->dim.seconds - 1, u->dim.watts}};
        }
    const auto slash = unit.find('/');
    if (slash == std::string_view::npos) {
        if (const unit_def* u = find_base(unit)) return parsed_quantity{u->si, u->dim};
        return std::nullopt;
    }
    const unit_def* num = find_base(unit.substr(0, slash));
    const unit_def* den = find_base(unit.substr(slash + 1));
    // Only rates of data and of FLOP are quantities capplan reads ("TB/s", "TFLOP/s").
    if (!num || !den || den->dim != time_dim || (num->dim != size_dim && num->dim != flop_dim)) return std::nullopt;
    const dimension d{num->dim.bytes - den->dim.bytes, num->dim.flops - den->dim.flops,
                      num->dim.seconds - den->dim.seconds, num->dim.watts - den->dim.watts};
    return parsed_quantity{num->si / den->si, d};
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// "1,979.5" -> "1979.5"; commas must separate groups of three digits.
std::optional<std::string> strip_thousands(std::string_view num) {
    if (num.find(',') == std::string_view::npos) return std::string(num);
    std::string out;
    const auto dot = num.find_first_of(".eE");
    const std::string_view int_part = num.substr(0, dot);
    std::size_t group = 0;
    bool seen_comma = false;
    for (std::size_t i = 0; i < int_part.size(); ++i) {
        const char c = int_part[i];
        if (c == ',') {
            if (i == 0 || (seen_comma && group != 3) || (!seen_comma && group > 3)) return std::nullopt;
            seen_comma = true;
            group = 0;
            continue;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) ++group;
        out += c;
    }
    if (group != 3) return std::nullopt;
    if (dot != std::string_view::npos) out += num.substr(dot);
    return out;
}

struct scale {
    std::string_view symbol;
    double si;
};

}  // namespace

std::string dimension_name(dimension d) {
    if (d == size_dim) return "size";
    if (d == flop_dim) return "FLOP count";
    if (d == time_dim) return "time";
    if (d == power_dim) return "power";
    if (d == dimension{1, 0, -1, 0}) return "data rate";
    if (d == dimension{0, 1, -1, 0}) return "FLOP rate";
    if (d == dimension{0, 0, 1, 1}) return "energy";
    if (d == dimension{0, 0, -1, 0}) return "frequency";
    if (d == dimension{}) return "number";
    return "quantity";
}

std::string allowed_units(dimension d) {
    std::string out;
    auto add = [&](std::string_view s) { out += (out.empty() ? "" : ", ") + std::string(s); };
    for (const auto& u : base_units) {
        if (u.dim == d) add(u.symbol);
        const dimension per_s{u.dim.bytes, u.dim.flops, u.dim.seconds - 1, u.dim.watts};
        if (per_s == d && (u.dim == size_dim || u.dim == flop_dim)) add(std::string(u.symbol) + "/s");
    }
    for (const auto& [alias, target] : rate_aliases) {
        const auto r = resolve_unit(alias);
        if (r && r->dim == d) add(alias);
    }
    return out;
}

parsed_quantity parse_quantity(std::string_view text_in, std::string_view field) {
    const std::string_view text = trim(text_in);
    const std::string f(field);
    if (text.empty())
        throw unit_error(f, "''", "empty quantity", "a number and a unit, e.g. '80 GB' or '3.35 TB/s'");
    std::size_t i = 0;
    if (text[i] == '+' || text[i] == '-') ++i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                               text[i] == ',' ||
                               ((text[i] == 'e' || text[i] == 'E') && i + 1 < text.size() &&
                                (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' ||
                                 text[i + 1] == '+')) ||
                               ((text[i] == '-' || text[i] == '+') && i > 0 && (text[i - 1] == 'e' || text[i - 1] == 'E'))))
        ++i;
    const std::string_view number = text.substr(0, i);
    const std::string_view unit = trim(text.substr(i));
    const auto digits = strip_thousands(number);
    double value = 0.0;
    bool ok = digits && !digits->empty();
    if (ok) {
        const char* begin = digits->data() + ((*digits)[0] == '+' ? 1 : 0);
        const char* end = digits->data() + digits->size();
        const auto [ptr, ec] = std::from_chars(begin, end, value);
        ok = ec == std::errc() && ptr == end && std::isfinite(value);
    }
    if (!ok)
        throw unit_error(f, quoted(text_in), "not a number followed by a unit",
                         "e.g. '80 GB', '141 GiB', '3.35 TB/s', '400 Gb/s', '989 TFLOP/s', '25 us'");
    if (unit.empty())
        throw unit_error(f, quoted(text_in), "missing unit",
                         "a unit after the number, e.g. '80 GB' (GB = 1e9 B, GiB = 2^30 B)");
    const auto resolved = resolve_unit(unit);
    if (!resolved) unknown_unit(text_in, unit, field);
    // "1e308 kB" is a finite number, but not once the unit scales it.
    if (!std::isfinite(value * resolved->si))
        throw unit_error(f, quoted(text_in), "beyond the range of a number once the unit is applied",
                         "a value below about 1.8e308 in SI units (bytes, FLOP, seconds, watts)");
    return {value * resolved->si, resolved->dim};
}

double parse_si(std::string_view text, dimension expected, std::string_view field) {
    const parsed_quantity q = parse_quantity(text, field);
    if (q.dim != expected)
        throw unit_error(std::string(field), quoted(text),
                         "a " + dimension_name(q.dim) + " where a " + dimension_name(expected) + " is expected",
                         allowed_units(expected));
    return q.si;
}

double unit_si(std::string_view unit, dimension expected, std::string_view field) {
    const auto r = resolve_unit(trim(unit));
    if (!r) unknown_unit(unit, trim(unit), field);
    if (r->dim != expected)
        throw unit_error(std::string(field), quoted(unit),
                         "unit of a " + dimension_name(r->dim) + " where a " + dimension_name(expected) +
                             " is expected",
                         allowed_units(expected));
    return r->si;
}

// The format string compiled: notes format many numbers, and parsing "{:.4g}" each time cost more than the number.
std::string format_number(double v) {
    // Whole numbers below 10^4 (most a note prints) are written as they are, as {:.4g} writes them, without its
    // floating-point formatting; -0 keeps its sign through fmt.
    if (std::fabs(v) < 1e4 && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
        char digits[8];
        const auto end = std::to_chars(digits, digits + sizeof digits, static_cast<int>(v)).ptr;
        return std::string(digits, end);
    }
    return fmt::format(FMT_COMPILE("{:.4g}"), v);
}

namespace {

// Each dimension's display units, smallest first (static: a result formats dozens of quantities).
std::span<const scale> scales_for(dimension d, bool binary) {
    using namespace units;
    if (d == size_dim && binary) {
        static const scale s[] = {{"B", 1}, {"KiB", KiB.si()}, {"MiB", MiB.si()}, {"GiB", GiB.si()}, {"TiB", TiB.si()}, {"PiB", PiB.si()}};
        return s;
    }
    if (d == size_dim) {
        static const scale s[] = {{"B", 1}, {"kB", 1e3}, {"MB", MB.si()}, {"GB", GB.si()}, {"TB", TB.si()}, {"PB", PB.si()}};
        return s;
    }
    if (d == dimension{1, 0, -1, 0}) {
        static const scale s[] = {{"B/s", 1}, {"kB/s", kB.si()}, {"MB/s", MB.si()}, {"GB/s", GB.si()}, {"TB/s", TB.si()}, {"PB/s", PB.si()}};
        return s;
    }
    if (d == flop_dim) {
        static const scale s[] = {{"FLOP", 1}, {"kFLOP", kFLOP.si()}, {"MFLOP", MFLOP.si()}, {"GFLOP", GFLOP.si()},
                                  {"TFLOP", TFLOP.si()}, {"PFLOP", PFLOP.si()}, {"EFLOP", EFLOP.si()}};
        return s;
    }
    if (d == dimension{0, 1, -1, 0}) {
        static const scale s[] = {{"FLOP/s", 1}, {"kFLOP/s", kFLOP.si()}, {"MFLOP/s", MFLOP.si()}, {"GFLOP/s", GFLOP.si()},
                                  {"TFLOP/s", TFLOP.si()}, {"PFLOP/s", PFLOP.si()}, {"EFLOP/s", EFLOP.si()}};
        return s;
    }
    if (d == time_dim) {
        static const scale s[] = {{"ns", ns.si()}, {"us", us.si()}, {"ms", ms.si()}, {"s", 1}, {"min", minute.si()}, {"h", hour.si()},
                                  {"d", day.si()}};
        return s;
    }
    if (d == power_dim) {
        static const scale s[] = {{"W", 1}, {"kW", kW.si()}, {"MW", MW.si()}};
        return s;
    }
    if (d == dimension{0, 0, 1, 1}) {
        static const scale s[] = {{"J", 1}, {"kJ", 1e3}, {"kWh", kWh.si()}};
        return s;
    }
    if (d == dimension{0, 0, -1, 0}) {
        static const scale s[] = {{"Hz", 1}, {"kHz", kHz.si()}, {"MHz", MHz.si()}, {"GHz", GHz.si()}};
        return s;
    }
    return {};
}
}  // namespace

std::string format_quantity(double si, dimension d, bool binary) {
    const auto sc = scales_for(d, binary);
    if (sc.empty()) return format_number(si) + (d == dimension{} ? "" : " (SI " + dimension_name(d) + ")");
    const double mag = std::fabs(si);
    const scale* pick = &sc.front();
    for (const auto& s : sc) {
        // Minutes only from 2 min, hours from 2 h and days from 2 d, so "90 s" stays in seconds and "36 h" in hours.
        const double from = (d == time_dim && s.si >= units::minute.si()) ? 2.0 * s.si : s.si;
        if (mag >= from) pick = &s;
    }
    return format_number(si / pick->si) + " " + std::string(pick->symbol);
}

std::string format_in(double si, dimension d, std::string_view unit) {
    const double u = unit_si(unit, d);
    return format_number(si / u) + " " + std::string(trim(unit));
}

}  // namespace capplan
