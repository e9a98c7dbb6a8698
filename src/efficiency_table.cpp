#include "capplan/spec/efficiency_table.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "capplan/error.hpp"
#include "json_reader.hpp"

namespace capplan {

double efficiency_curve::at(double work) const {
    if (points.empty()) return 0.0;
    if (work <= points.front().work) return points.front().value;
    const auto hi = std::upper_bound(points.begin(), points.end(), work,
                                     [](double w, const efficiency_point& p) { return w < p.work; });
    const auto lo = hi - 1;
    double line = lo->value;
    if (hi != points.end()) {
        // Where work lies between the knots on a log scale: a ratio of two logs, in any base (natural: glibc's log
        // takes about half log10's time, and the simulator asks this for every operator of every step).
        const double t = std::log(work / lo->work) / std::log(hi->work / lo->work);
        line = lo->value + t * (hi->value - lo->value);
    }
    // Where the efficiency climbs faster than the work, a kernel's time (work / efficiency) would dip below the
    // time of a smaller kernel, and more work would take less time (a 91-token prompt faster than a 90-token one;
    // tests/python/test_properties.py): the time is held at the longest time of the points at or below this work
    // until the line passes it.
    double longest = 0.0;
    for (auto p = points.begin(); p != hi; ++p) longest = std::max(longest, p->work / p->value);
    return std::min(line, work / longest);
}

efficiency_curve fit_efficiency_curve(std::vector<efficiency_point> samples, int max_knots) {
    for (const auto& s : samples)
        if (!(s.work > 0.0) || !(s.value > 0.0) || !std::isfinite(s.work) || !std::isfinite(s.value))
            throw config_error("/measurements", std::to_string(s.work) + " -> " + std::to_string(s.value),
                               "a sample needs positive, finite work and efficiency", "measurements that took time");
    if (samples.empty()) throw config_error("/measurements", "[]", "no samples to fit", "at least one measurement");
    if (max_knots < 2) throw config_error("/max_knots", std::to_string(max_knots), "too few knots", "an integer >= 2");
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.work < b.work; });

    // Knots: the distinct sizes (1% apart), or evenly spaced log sizes when there are many.
    std::vector<double> knots;
    for (const auto& s : samples) {
        const double x = std::log10(s.work);
        if (knots.empty() || x - knots.back() > 0.0043) knots.push_back(x);  // 0.0043 = log10(1.01)
    }
    if (static_cast<int>(knots.size()) > max_knots) {
        const double a = knots.front(), b = knots.back();
        knots.resize(static_cast<std::size_t>(max_knots));
        for (int i = 0; i < max_knots; ++i) knots[static_cast<std::size_t>(i)] = a + (b - a) * i / (max_knots - 1);
    }
    efficiency_curve out;
    if (knots.size() == 1) {  // one size: the weighted mean, i.e. the least-squares constant
        double num = 0.0, den = 0.0;
        for (const auto& s : samples) num += 1.0 / s.value, den += 1.0 / (s.value * s.value);
        out.points.push_back({std::pow(10.0, knots[0]), num / den});
        return out;
    }
    // Hat basis: a sample between knots j and j+1 weighs them (1 - t, t).
    const auto n = static_cast<Eigen::Index>(samples.size()), k = static_cast<Eigen::Index>(knots.size());
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, k);
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        const auto& s = samples[static_cast<std::size_t>(i)];
        const double x = std::clamp(std::log10(s.work), knots.front(), knots.back());
        auto j = static_cast<Eigen::Index>(std::upper_bound(knots.begin(), knots.end(), x) - knots.begin()) - 1;
        j = std::min(j, k - 2);
        const double t = (x - knots[static_cast<std::size_t>(j)]) /
                         (knots[static_cast<std::size_t>(j + 1)] - knots[static_cast<std::size_t>(j)]);
        const double w = 1.0 / s.value;
        a(i, j) = (1.0 - t) * w;
        a(i, j + 1) = t * w;
        y(i) = s.value * w;
    }
    // Knots no sample touches would leave the system rank-deficient: QR with pivoting gives them 0,
    // which is then rejected below rather than used.
    const Eigen::VectorXd c = a.colPivHouseholderQr().solve(y);
    for (Eigen::Index j = 0; j < k; ++j) {
        if (!(c(j) > 0.0) || !std::isfinite(c(j)))
            throw config_error("/measurements", "knot 10^" + std::to_string(knots[static_cast<std::size_t>(j)]),
                               "the fit gives a non-positive efficiency there (too few or inconsistent samples)",
                               "measurements spread over the sizes the curve covers");
        out.points.push_back({std::pow(10.0, knots[static_cast<std::size_t>(j)]), c(j)});
    }
    return out;
}

namespace {

using detail::json;
using detail::object_reader;
using detail::short_value;

efficiency_curve read_curve(const json& v, const std::string& where, const char* work_key) {
    if (!v.is_array() || v.empty())
        throw config_error(where, short_value(v), "expected a non-empty array of points",
                           std::string("[{\"") + work_key + "\": <number>, \"efficiency\": <number>}, ...]");
    efficiency_curve c;
    for (std::size_t i = 0; i < v.size(); ++i) {
        object_reader p(v[i], where + "/" + std::to_string(i));
        const auto w = p.number(work_key, 0.0);
        const auto e = p.number("efficiency", 0.0);
        if (!w || *w <= 0.0) p.missing(work_key, "a positive number");
        if (!e || *e <= 0.0 || *e > 100.0)
            throw config_error(p.path("efficiency"), e ? std::to_string(*e) : "", "not an efficiency",
                               "a number in (0, 100]");
        p.finish();
        if (!c.points.empty() && *w <= c.points.back().work)
            throw config_error(p.path(work_key), std::to_string(*w), "points must be in increasing order of size",
                               "a value above " + std::to_string(c.points.back().work));
        c.points.push_back({*w, *e});
    }
    return c;
}

std::map<std::string, efficiency_curve> read_format_curves(object_reader& curves, std::string_view key) {
    std::map<std::string, efficiency_curve> out;
    const json* v = curves.get(key);
    if (!v || v->is_null()) return out;
    object_reader by_format(*v, curves.path(key), false);
    for (const auto& [format, points] : v->items()) {
        static const std::vector<std::string> formats{"fp64", "fp32", "tf32", "bf16", "fp16",
                                                      "fp8",  "fp4",  "int8", "int4"};
        if (std::find(formats.begin(), formats.end(), format) == formats.end())
            throw config_error(by_format.path(format), "'" + format + "'", "not a number format",
                               "fp64, fp32, tf32, bf16, fp16, fp8, fp4, int8, int4");
        out[format] = read_curve(points, by_format.path(format), "flops");
    }
    return out;
}

efficiency_table read_efficiency_table(const json& root, const std::string& pointer) {
    object_reader r(root, pointer);
    efficiency_table t;
    if (r.required_string("kind") != "efficiency_calibration")
        throw config_error(r.path("kind"), "'" + root["kind"].get<std::string>() + "'",
                           "not an efficiency calibration (a collective calibration goes to capplan.collective)",
                           "efficiency_calibration");
    t.name = r.required_string("name");
    t.accelerator = r.required_string("accelerator");
    t.source = r.required_string("source");
    {
        object_reader peaks = r.child("peaks");
        if (const json* f = peaks.get("flops"); f && !f->is_null()) {
            object_reader flops(*f, peaks.path("flops"), false);
            for (const auto& [format, value] : f->items())
                if (const auto q = flops.quantity<flop_rate>(format)) t.peak_flops[format] = *q;
        }
        t.memory_bandwidth = peaks.quantity<byte_rate>("memory_bandwidth");
        peaks.allow({"note"});
        peaks.finish();
    }
    t.kernel_launch = r.quantity<duration>("kernel_launch");
    {
        object_reader curves = r.child("curves");
        t.gemm = read_format_curves(curves, "gemm");
        t.attention = read_format_curves(curves, "attention");
        for (auto [key, curve] : {std::pair{"memory", &t.memory}, std::pair{"norm", &t.norm}})
            if (const json* m = curves.get(key); m && !m->is_null()) *curve = read_curve(*m, curves.path(key), "bytes");
        curves.finish();
    }
    for (const auto& [format, curve] : t.gemm)
        if (!t.peak_flops.count(format))
            throw config_error(r.path("peaks") + "/flops", "", "the " + format + " curve has no reference peak",
                               "a peak for every format in curves.gemm");
    if ((!t.memory.empty() || !t.norm.empty()) && !t.memory_bandwidth)
        r.child("peaks").missing("memory_bandwidth", "the reference of the memory curve");
    r.allow({"fit", "host_accelerator", "provenance", "measurements", "report", "command"});
    r.finish();
    return t;
}

}  // namespace

efficiency_table read_efficiency_table(std::string_view json_text, const std::string& pointer) {
    return read_efficiency_table(detail::parse_json_text(json_text, pointer.empty() ? "the calibration" : pointer),
                                 pointer);
}

efficiency_table load_efficiency_table(const std::filesystem::path& file) {
    const json root = detail::read_json_file(file);
    try {
        return read_efficiency_table(root, "");
    } catch (const unit_error& e) {
        throw unit_error(file.string() + "#" + e.field(), e.value(), e.problem(), e.allowed());
    } catch (const config_error& e) {
        throw config_error(file.string() + "#" + e.field(), e.value(), e.problem(), e.allowed());
    }
}

}  // namespace capplan
