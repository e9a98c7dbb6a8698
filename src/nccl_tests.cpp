// Reading nccl-tests output (text table and -J JSON) and fitting the alpha-beta collective model.
#include "capplan/calibration/nccl_tests.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <Eigen/Dense>

#include "capplan/error.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units_parse.hpp"
#include "json_reader.hpp"

namespace capplan {

namespace {

using detail::json;
using detail::object_reader;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// nccl-tests units: sizes in bytes, times in microseconds, bandwidths in GB/s (baseBw = bytes / 1.0E9 / sec).
data_size bytes(double v) { return v * units::B; }
duration micros(double v) { return v * units::us; }
byte_rate gb_per_s(double v) { return v * (units::GB / units::s); }

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split_ws(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
        const std::size_t j = i;
        while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\r') ++i;
        if (i > j) out.push_back(s.substr(j, i - j));
    }
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string shorten(std::string_view s) {
    s = trim(s);
    return "'" + (s.size() > 80 ? std::string(s.substr(0, 77)) + "..." : std::string(s)) + "'";
}

// Launchers prefix every line: mpirun --tag-output "[1,0]<stdout>:", srun --label "0: ".
std::string_view strip_launcher_prefix(std::string_view line) {
    if (!line.empty() && line.front() == '[') {
        const auto tag = line.find("]<std");
        const auto colon = tag == std::string_view::npos ? tag : line.find(">:", tag);
        if (colon != std::string_view::npos && colon < 24) line.remove_prefix(colon + 2);
    }
    std::size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] >= '0' && line[j] <= '9') ++j;
    if (j > i && j < line.size() && line[j] == ':' && (j + 1 == line.size() || line[j + 1] == ' ')) line.remove_prefix(j + 1);
    return line;
}

// "2.27.3" from NCCL_VERSION_CODE / ncclGetVersion: major*10000 + minor*100 + patch since 2.9,
// major*1000 + minor*100 + patch before.
std::string decode_nccl_code(long long code) {
    if (code <= 0) return {};
    const long long major = code >= 10000 ? code / 10000 : code / 1000;
    const long long minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
    return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// The token after `key` (skipping blanks and one ':'), if it starts with a digit (or any token when !digit).
std::string token_after(std::string_view line, std::string_view key, bool digit = true) {
    const auto at = line.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = line.substr(at + key.size());
    rest = trim(rest);
    if (!rest.empty() && rest.front() == ':') rest = trim(rest.substr(1));
    const auto toks = split_ws(rest);
    if (toks.empty()) return {};
    const char c = toks[0].front();
    if (digit ? !(c >= '0' && c <= '9') : !std::isalnum(static_cast<unsigned char>(c))) return {};
    return std::string(toks[0]);
}

// Every known "<op>_perf" binary named on the line (command lines, "./build/all_reduce_perf").
void collect_perf_ops(std::string_view line, std::set<collective_op>& ops) {
    std::size_t pos = 0;
    while ((pos = line.find("_perf", pos)) != std::string_view::npos) {
        const std::size_t end = pos + 5;
        std::size_t begin = pos;
        while (begin > 0 && (std::isalnum(static_cast<unsigned char>(line[begin - 1])) || line[begin - 1] == '_')) --begin;
        const bool word_end = end == line.size() || !(std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_');
        if (word_end && begin < pos) {
            try {
                ops.insert(parse_collective_op(line.substr(begin, end - begin)));
            } catch (const config_error&) {
                // gather_perf, hypercube_perf, ...: not a collective capplan models.
            }
        }
        pos = end;
    }
}

// Column positions, from the "#  size  count  type  redop  [root]  time  algbw  busbw  #wrong ..." header.
struct table_layout {
    std::size_t columns = 0;  // tokens per row
    int line = 0;
    std::vector<std::string> names;
    int size = -1, count = -1, type = -1, redop = -1;
    int time_out = -1, algbw_out = -1, busbw_out = -1, time_in = -1, algbw_in = -1, busbw_in = -1;
};

std::optional<table_layout> read_header(const std::vector<std::string_view>& toks, int line_no, const std::string& source) {
    // toks exclude the leading '#'.
    if (toks.size() < 4 || toks[0] != "size" || toks[1] != "count" || toks[2] != "type" || toks[3] != "redop") return std::nullopt;
    table_layout l;
    l.line = line_no;
    std::vector<int> times, algbws, busbws;
    bool timestamp = false;
    for (std::size_t i = 0; i < toks.size(); ++i) {
        const std::string t(toks[i]);
        l.names.push_back(t);
        const int k = static_cast<int>(i);
        if (t == "size") l.size = k;
        else if (t == "count") l.count = k;
        else if (t == "type") l.type = k;
        else if (t == "redop") l.redop = k;
        else if (t == "time" || t == "cputime") times.push_back(k);
        else if (t == "algbw") algbws.push_back(k);
        else if (t == "busbw") busbws.push_back(k);
        else if (t == "timestamp") timestamp = true;
    }
    if (times.size() != 2 || algbws.size() != 2 || busbws.size() != 2)
        throw config_error("line " + std::to_string(line_no), shorten("# " + [&] {
                               std::string s;
                               for (auto t : toks) s += std::string(t) + " ";
                               return s;
                           }()),
                           "nccl-tests column header in " + source +
                               " without the out-of-place and in-place time, algbw and busbw columns",
                           "'# size count type redop root time algbw busbw #wrong time algbw busbw #wrong'");
    l.time_out = times[0], l.time_in = times[1];
    l.algbw_out = algbws[0], l.algbw_in = algbws[1];
    l.busbw_out = busbws[0], l.busbw_in = busbws[1];
    // The timestamp value is "%Y-%m-%d %H:%M:%S": two tokens under one header word.
    l.columns = toks.size() + (timestamp ? 1 : 0);
    return l;
}

std::string layout_text(const table_layout& l) {
    std::string s;
    for (const auto& n : l.names) s += (s.empty() ? "" : " ") + n;
    return s;
}

nccl_tests_point read_row(const std::vector<std::string_view>& toks, const table_layout& l, int line_no,
                          std::string_view raw, const std::string& source) {
    const std::string where = "line " + std::to_string(line_no);
    if (toks.size() != l.columns)
        throw config_error(where, shorten(raw),
                           "expected " + std::to_string(l.columns) + " columns (" + layout_text(l) + ", from the header at line " +
                               std::to_string(l.line) + ") in " + source + ", got " + std::to_string(toks.size()),
                           "a complete nccl-tests result row");
    // Column `col` as a non-negative T (an integer count or a decimal number), or an error naming it.
    auto column = [&]<class T>(int col, T, const char* what, const char* allowed) {
        const auto t = toks[static_cast<std::size_t>(col)];
        T v{};
        const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec != std::errc() || p != t.data() + t.size() || v < 0)
            throw config_error(where, "'" + std::string(t) + "'",
                               "column " + std::to_string(col + 1) + " '" + l.names[static_cast<std::size_t>(col)] + "' in " +
                                   source + " is not a non-negative " + what,
                               allowed);
        return v;
    };
    auto integer = [&](int col) { return column(col, std::int64_t{}, "integer", "an integer"); };
    auto number = [&](int col) { return column(col, double{}, "number", "a number such as 123.4 or 47535"); };
    nccl_tests_point p;
    p.size = bytes(static_cast<double>(integer(l.size)));
    p.count = integer(l.count);
    p.type = std::string(toks[static_cast<std::size_t>(l.type)]);
    p.redop = std::string(toks[static_cast<std::size_t>(l.redop)]);
    p.time_out = micros(number(l.time_out));
    p.algbw_out = gb_per_s(number(l.algbw_out));
    p.busbw_out = gb_per_s(number(l.busbw_out));
    p.time_in = micros(number(l.time_in));
    p.algbw_in = gb_per_s(number(l.algbw_in));
    p.busbw_in = gb_per_s(number(l.busbw_in));
    return p;
}

}  // namespace

nccl_tests_run parse_nccl_tests_text(std::string_view text, const std::string& source) {
    nccl_tests_run run;
    run.source = source;
    std::optional<table_layout> layout;
    std::optional<collective_op> started;  // "# Collective test starting: X"
    std::set<collective_op> named;         // "X_perf" anywhere
    std::set<long long> ranks;
    bool ranks_elided = false;
    long long library_code = 0;
    int first_row_line = 0;

    int line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view raw = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        const std::string_view line = trim(strip_launcher_prefix(raw));
        if (line.empty()) {
            if (nl == text.size()) break;
            continue;
        }

        // A "# source: ..." line is a citation added to a saved output, not nccl-tests output: only a
        // command line quoted in it ("... all_reduce_perf -b 8 ...") is used.
        if (line.starts_with('#') && trim(line.substr(1)).starts_with("source:")) {
            if (run.citation.empty()) run.citation = std::string(trim(trim(line.substr(1)).substr(7)));
            collect_perf_ops(line, named);
            continue;
        }
        // Versions, wherever they are printed (NCCL_DEBUG=INFO lines are not comments).
        if (run.nccl_version.empty()) {
            if (auto v = token_after(line, "NCCL version"); !v.empty()) run.nccl_version = "NCCL " + v;
            else if (auto r = token_after(line, "RCCL version"); !r.empty()) run.nccl_version = "RCCL " + r;
        }
        if (run.tests_version.empty()) {
            if (auto v = token_after(line, "nccl-tests version"); !v.empty()) run.tests_version = "nccl-tests " + v;
            else if (auto r = token_after(line, "rccl-tests: Version", false); !r.empty()) run.tests_version = "rccl-tests " + r;
        }
        if (library_code == 0) {
            if (auto c = token_after(line, "nccl-library="); !c.empty()) library_code = std::atoll(c.c_str());
        }
        collect_perf_ops(line, named);

        if (line.front() == '#') {
            const std::string_view body = trim(line.substr(1));
            if (body.starts_with("Collective test starting:")) {
                const auto name = token_after(body, "Collective test starting:", false);
                std::optional<collective_op> op;
                try {
                    op = parse_collective_op(name);
                } catch (const config_error&) {
                    // gather_perf, hypercube_perf, ...: not a collective capplan models.
                }
                if (op && started && *started != *op)
                    throw config_error("line " + std::to_string(line_no), "'" + name + "'",
                                       "a second test (" + op_name(*op) + " after " + op_name(*started) + ") in " + source +
                                           "; split the output per test",
                                       "one nccl-tests run per file");
                if (op) started = op;
                continue;
            }
            const auto toks = split_ws(body);
            if (toks.size() >= 2 && toks[0] == "Rank" && all_digits(toks[1]) &&
                std::find(toks.begin(), toks.end(), "device") != toks.end()) {
                // A rank beyond any run capplan models (2^20; atoll's overflow was undefined behaviour).
                long long rank = 0;
                const auto digits = toks[1];
                const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
                if (ec != std::errc() || end != digits.data() + digits.size() || rank >= max_system_accelerators)
                    throw config_error("line " + std::to_string(line_no), "'" + std::string(digits) + "'",
                                       "a rank number beyond any run (" + source + ")",
                                       "ranks below " + std::to_string(max_system_accelerators));
                ranks.insert(rank);
                if (line.ends_with("...")) ranks_elided = true;
                continue;
            }
            if (auto header = read_header(toks, line_no, source)) {
                if (!run.points.empty())
                    throw config_error("line " + std::to_string(line_no), "",
                                       "a second nccl-tests table in " + source + " (the first has " +
                                           std::to_string(run.points.size()) + " rows from line " +
                                           std::to_string(first_row_line) + "); split the output per test",
                                       "one nccl-tests run per file");
                layout = header;
            }
            continue;
        }
        if (line == "...") {
            // An elided device list (truncated output or a shortened copy): the rank count is unknown.
            if (!layout && !ranks.empty()) ranks_elided = true;
            continue;
        }
        const auto toks = split_ws(line);
        if (!layout || !all_digits(toks.front())) continue;  // a log line (NCCL INFO, SHARP, launcher)
        run.points.push_back(read_row(toks, *layout, line_no, raw, source));
        if (first_row_line == 0) first_row_line = line_no;
    }

    if (run.points.empty()) {
        const std::string problem = layout ? "the nccl-tests table (header at line " + std::to_string(layout->line) + ") has no rows"
                                           : "no nccl-tests result table (no '#  size  count  type  redop ...' header)";
        throw config_error(source, "", problem + " in " + source,
                           "the stdout of an nccl-tests or rccl-tests binary such as all_reduce_perf");
    }
    if (started) run.op = started;
    else if (named.size() == 1) run.op = *named.begin();
    if (!ranks_elided && !ranks.empty() && *ranks.begin() == 0 && *ranks.rbegin() + 1 == static_cast<long long>(ranks.size()))
        run.ranks = static_cast<int>(ranks.size());
    if (run.nccl_version.empty() && library_code > 0) run.nccl_version = decode_nccl_code(library_code);
    return run;
}

namespace {

// A JSON number, or nccl-tests' "nan" string (jsonDouble writes NaN as "nan"); null -> NaN too.
double json_number(object_reader& r, std::string_view key, bool required) {
    const json* v = r.get(key);
    if (!v || v->is_null()) {
        if (required && !v) r.missing(key, "a number");
        return nan;
    }
    if (v->is_string() && detail::lower(v->get<std::string>()) == "nan") return nan;
    if (v->is_boolean() || !v->is_number()) r.wrong_type(key, *v, "a number");
    const double x = v->get<double>();
    if (x < 0) throw config_error(r.path(key), detail::short_value(*v), "must not be negative", "a number >= 0");
    return x;
}

struct half {
    duration time = duration::from_si(nan);
    byte_rate algbw = byte_rate::from_si(nan), busbw = byte_rate::from_si(nan);
};

half read_half(object_reader& entry, std::string_view key) {
    const json* v = entry.get(key);
    if (!v) entry.missing(key, "an object {time, alg_bw, bus_bw, nwrong} or null");
    half h;
    if (v->is_null()) return h;  // not measured (trace replay)
    object_reader r(*v, entry.path(key), false);
    const double t = r.present("cpu_time") && !r.present("time") ? json_number(r, "cpu_time", true) : json_number(r, "time", true);
    h.time = micros(t);
    h.algbw = gb_per_s(json_number(r, "alg_bw", true));
    h.busbw = gb_per_s(json_number(r, "bus_bw", true));
    return h;
}

}  // namespace

nccl_tests_run parse_nccl_tests_json(std::string_view text, const std::string& source) {
    const json j = detail::parse_json_text(text, source);
    // Not strict about unknown keys: nccl-tests adds keys between versions (per-iteration timing, ...).
    object_reader top(j, "", false);
    nccl_tests_run run;
    run.source = source;
    top.integer("version", 1);
    if (const auto code = top.integer("nccl_version", 0)) run.nccl_version = decode_nccl_code(*code);

    if (const json* args = top.get("args"); args && !args->is_null()) {
        if (!args->is_array()) top.wrong_type("args", *args, "a list of strings");
        std::set<collective_op> named;
        for (const auto& a : *args)
            if (a.is_string()) collect_perf_ops(a.get<std::string>(), named);
        if (named.size() == 1) run.op = *named.begin();
    }

    if (top.present("config")) {
        auto config = top.child("config");
        constexpr std::int64_t most = max_system_accelerators;  // ranks capplan models; bounds the product below too
        const auto threads = config.integer("nthreads", 1, most).value_or(1);
        const auto gpus = config.integer("ngpus", 1, most).value_or(1);
        // One entry per process (util.cu parses the first "#  Rank" line each process sends).
        if (const json* devices = config.get("devices"); devices && !devices->is_null()) {
            if (!devices->is_array()) config.wrong_type("devices", *devices, "a list of device objects");
            if (!devices->empty()) {
                const double ranks = static_cast<double>(devices->size()) * static_cast<double>(threads) * static_cast<double>(gpus);
                if (ranks > static_cast<double>(most))
                    throw config_error(config.path("devices"), std::to_string(devices->size()) + " x " + std::to_string(threads) +
                                                                   " x " + std::to_string(gpus),
                                       "more ranks than any run capplan models",
                                       "at most " + std::to_string(max_system_accelerators) + " ranks");
                run.ranks = static_cast<int>(ranks);
            }
        }
    }

    const json* results = top.get("results");
    if (!results) top.missing("results", "a list of result rows");
    if (!results->is_array()) top.wrong_type("results", *results, "a list of result rows");
    if (results->empty())
        throw config_error("/results", "[]", "no result rows in " + source, "the rows nccl-tests -J writes, one per size");
    for (std::size_t i = 0; i < results->size(); ++i) {
        object_reader e((*results)[i], "/results/" + std::to_string(i), false);
        nccl_tests_point p;
        p.size = bytes(static_cast<double>(e.required_integer("size")));
        p.count = e.required_integer("count");
        p.type = e.required_string("type");
        p.redop = e.required_string("redop");
        const half out = read_half(e, "out_of_place");
        const half in = read_half(e, "in_place");
        p.time_out = out.time, p.algbw_out = out.algbw, p.busbw_out = out.busbw;
        p.time_in = in.time, p.algbw_in = in.algbw, p.busbw_in = in.busbw;
        run.points.push_back(p);
    }
    return run;
}

nccl_tests_run read_nccl_tests_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw config_error(file.string(), "", "cannot open the nccl-tests output file", "a readable file");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const auto first = text.find_first_not_of(" \t\r\n");
    const std::string name = file.filename().string();
    if (first != std::string::npos && text[first] == '{') return parse_nccl_tests_json(text, name);
    return parse_nccl_tests_text(text, name);
}

collective_fit fit_collective(const nccl_tests_run& run, collective_op op, int ranks, bool in_place,
                              std::optional<data_size> from, std::optional<data_size> to) {
    if (run.op && *run.op != op)
        throw config_error("/op", "'" + op_name(op) + "'", run.source + " measured " + op_name(*run.op), op_name(*run.op));
    if (ranks < 1) throw config_error("/ranks", std::to_string(ranks), "must be at least 1", "the number of ranks in the run");
    if (run.ranks > 0 && run.ranks != ranks)
        throw config_error("/ranks", std::to_string(ranks), run.source + " lists " + std::to_string(run.ranks) + " ranks",
                           std::to_string(run.ranks));
    const double factor = bus_factor(op, ranks);
    if (!(factor > 0))
        throw config_error("/ranks", std::to_string(ranks), op_name(op) + " on one rank moves no data (bus factor 0)",
                           "an integer >= 2");
    if (from && to && *from > *to)
        throw config_error("/from", format(*from), "the size range is empty (from > to " + format(*to) + ")", "from <= to");

    // x = S * factor (bytes each rank's link carries, in nccl-tests' busbw convention), t in seconds.
    std::vector<double> xs, ts;
    data_size lo, hi;
    for (const auto& p : run.points) {
        const double t = (in_place ? p.time_in : p.time_out).si();
        if (!std::isfinite(t) || t <= 0 || !std::isfinite(p.size.si())) continue;
        if ((from && p.size < *from) || (to && p.size > *to)) continue;
        if (xs.empty() || p.size < lo) lo = p.size;
        if (xs.empty() || p.size > hi) hi = p.size;
        xs.push_back(p.size.si() * factor);
        ts.push_back(t);
    }
    const auto n = static_cast<Eigen::Index>(xs.size());
    const std::string range = std::string(from || to ? " with sizes in [" + (from ? format(*from) : std::string("0 B")) + ", " +
                                                           (to ? format(*to) : std::string("largest")) + "]"
                                                     : "");
    if (n < 3)
        throw config_error("/fitted/points", std::to_string(n),
                           run.source + " has " + std::to_string(n) + " " + (in_place ? "in-place" : "out-of-place") +
                               " measurements" + range + "; the fit needs at least 3",
                           "3 or more sizes");

    // Weighted least squares: minimise sum w_i (t_i - a - b x_i)^2 with w_i = 1/t_i, i.e. ordinary
    // least squares on rows scaled by sqrt(w_i). Columns are normalised before the QR solve (1 and x
    // differ by ten orders of magnitude) and the solution scaled back.
    Eigen::MatrixXd A(n, 2);
    Eigen::VectorXd rhs(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        const double sw = 1.0 / std::sqrt(ts[static_cast<std::size_t>(i)]);
        A(i, 0) = sw;
        A(i, 1) = sw * xs[static_cast<std::size_t>(i)];
        rhs(i) = sw * ts[static_cast<std::size_t>(i)];
    }
    const Eigen::Vector2d scale(A.col(0).norm(), A.col(1).norm());
    if (!(scale(1) > 0))
        throw config_error("/fitted/points", std::to_string(n), "every size" + range + " in " + run.source + " is 0 bytes",
                           "at least two different sizes");
    A.col(0) /= scale(0);
    A.col(1) /= scale(1);
    const auto qr = A.colPivHouseholderQr();
    if (qr.rank() < 2)
        throw config_error("/fitted/points", std::to_string(n), "all sizes" + range + " in " + run.source + " are equal",
                           "at least two different sizes");
    const Eigen::Vector2d c = qr.solve(rhs);
    double alpha = c(0) / scale(0);
    const double beta = c(1) / scale(1);  // seconds per bus byte

    if (!(beta > 0) || !std::isfinite(beta))
        throw config_error("/bus_bandwidth", format_number(beta > 0 ? 1.0 / beta : -1.0 / beta) + (beta > 0 ? "" : " (negative)"),
                           "the fitted bus bandwidth is not positive: times in " + run.source + range +
                               " do not grow with size",
                           "a size range that reaches bandwidth-bound sizes (MB and up)");
    const double t_max = *std::max_element(ts.begin(), ts.end());
    if (alpha < 0) {
        if (-alpha <= 1e-9 * t_max) alpha = 0.0;  // rounding of an exact zero
        else
            throw config_error("/latency", format(duration::from_si(alpha)),
                               "the fitted latency is negative: the sizes in " + run.source + range +
                                   " do not constrain it",
                               "a size range that includes latency-bound sizes (KB and below)");
    }

    // Weighted R^2 (same weights as the fit): 1 - SS_res / SS_tot around the weighted mean.
    double sw = 0, swt = 0;
    for (std::size_t i = 0; i < ts.size(); ++i) sw += 1.0 / ts[i], swt += 1.0;
    const double mean = swt / sw;
    double ss_res = 0, ss_tot = 0;
    for (std::size_t i = 0; i < ts.size(); ++i) {
        const double w = 1.0 / ts[i];
        const double r = ts[i] - (alpha + beta * xs[i]);
        ss_res += w * r * r;
        ss_tot += w * (ts[i] - mean) * (ts[i] - mean);
    }

    collective_fit fit;
    fit.op = op;
    fit.ranks = ranks;
    fit.latency = duration::from_si(alpha);
    fit.bus_bandwidth = byte_rate::from_si(1.0 / beta);
    fit.r_squared = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    fit.points = static_cast<int>(n);
    fit.min_size = lo;
    fit.max_size = hi;
    fit.in_place = in_place;
    return fit;
}

namespace {
// Catalog names: ^[A-Za-z0-9][A-Za-z0-9._+-]*$.
std::string name_part(std::string_view s) {
    std::string out;
    for (char c : s) {
        const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-';
        if (ok) out += c;
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}
}  // namespace

std::string calibration_json(const collective_fit& fit, const std::string& system, const nccl_tests_run& run) {
    const std::string sys = name_part(system);
    if (sys.empty() || !std::isalnum(static_cast<unsigned char>(sys.front())))
        throw config_error("/system", "'" + system + "'", "a calibration needs the name of the system it was measured on",
                           "a system name from `capplan list systems`");
    if (run.source.empty())
        throw config_error("/source", "", "a calibration needs the file it was fitted from", "a file name or label");
    if (!(fit.bus_bandwidth.si() > 0) || !(fit.latency.si() >= 0))
        throw config_error("/bus_bandwidth", format(fit.bus_bandwidth), "not a fitted calibration (bandwidth <= 0 or latency < 0)",
                           "the result of fit_collective");

    using ojson = nlohmann::ordered_json;
    ojson j;
    std::string op = op_name(fit.op);
    std::replace(op.begin(), op.end(), '_', '-');
    j["name"] = sys + "-" + op + "-" + std::to_string(fit.ranks) + "ranks";
    j["system"] = system;
    j["op"] = op_name(fit.op);
    j["ranks"] = fit.ranks;
    j["latency"] = format_in(fit.latency.si(), dimension_of<duration>::value, "us");
    j["bus_bandwidth"] = format_in(fit.bus_bandwidth.si(), dimension_of<byte_rate>::value, "GB/s");
    j["fitted"] = ojson{{"points", fit.points},
                        {"r_squared", std::round(fit.r_squared * 1e4) / 1e4},
                        {"min_size", std::to_string(static_cast<std::int64_t>(fit.min_size.in(units::B))) + " B"},
                        {"max_size", std::to_string(static_cast<std::int64_t>(fit.max_size.in(units::B))) + " B"},
                        {"in_place", fit.in_place}};
    j["source"] = run.citation.empty() ? run.source : run.source + " (" + run.citation + ")";
    j["nccl_version"] = run.nccl_version.empty() ? ojson(nullptr) : ojson(run.nccl_version);
    j["confidence"] = "measured";
    j["created_by"] = "capplan calibrate-collectives";
    return j.dump(2);
}

}  // namespace capplan
