// Typed objects across the boundary (issue #23 items 0 and 1): a scenario parsed once and estimated without JSON text,
// its result kept typed (the dict built only when asked for, one figure read by its key), and sweeps over any keys
// whose answers come back as columns.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>

#include "capplan/error.hpp"
#include "capplan/estimate.hpp"
#include "capplan/report/result_columns.hpp"
#include "capplan/report/result_object.hpp"
#include "capplan/search/scenario_sweep.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "capplan/spec/scenario_value.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

namespace {

// A scenario read once, with its parsed document: estimating it costs the estimate alone, and a variant (a few keys
// replaced) costs reading the patched document, not writing and parsing text.
struct parsed_scenario {
    nlohmann::json doc;
    std::filesystem::path base_dir;
    std::shared_ptr<const scenario> value;
};

parsed_scenario parse(nlohmann::json doc, const std::filesystem::path& base_dir, scenario_sections* reuse = nullptr) {
    auto value = std::make_shared<const scenario>(read_scenario_value(doc, default_catalog(), base_dir, reuse));
    return {std::move(doc), base_dir, std::move(value)};
}

// An estimate made lazily (unless asked for whole): a static batch's or a training step's headline figures first
// (estimate_parts::headline(): no memory limits, cold start, checkpoint, FLOPs, ranges, cost, data reading or notes),
// the whole estimate the first time something beyond them is read. A simulated or disaggregated scenario is estimated whole at once (its
// simulation is the cost). Python threads may share one: the result is read and completed under its lock, with the
// GIL released while waiting for it.
class typed_estimate {
public:
    typed_estimate(std::shared_ptr<const scenario> sc, bool at_once) : s_(std::move(sc)) {
        const bool simulated = s_->inference && (s_->inference->concurrency || s_->inference->workload ||
                                                 s_->inference->disaggregation);
        whole_ = at_once || simulated;
        if (!whole_) parts_ = estimate_parts::headline();
        r_ = estimate(*s_, default_catalog(), parts_);
    }

    // f(result) on the result, completed first unless `column` is one the partial estimate has.
    template <class F>
    auto with_result(const result_column* column, F&& f) {
        py::gil_scoped_release release;
        const std::lock_guard<std::mutex> lock(mu_);
        if (!whole_ && (!column || !computed_in(parts_, *column))) {
            r_ = estimate(*s_, default_catalog());
            parts_ = estimate_parts{};
            whole_ = true;
        }
        return f(r_);
    }

private:
    std::shared_ptr<const scenario> s_;
    estimate_parts parts_;
    estimate_result r_;
    bool whole_ = false;
    std::mutex mu_;
};

// One figure of a result by its column key: a float, an int, a bool, a str, or None when the result has none.
py::object figure(typed_estimate& e, const std::string& key) {
    const result_column& c = result_column_named(key, "/key");
    if (c.kind == column_kind::text) {
        const auto t = e.with_result(&c, [&](const estimate_result& r) { return c.text(r); });
        return t ? py::object(py::str(*t)) : py::object(py::none());
    }
    const auto x = e.with_result(&c, [&](const estimate_result& r) { return c.number(r); });
    if (!x) return py::none();
    if (c.kind == column_kind::boolean) return py::bool_(*x != 0.0);
    if (c.kind == column_kind::integer) return py::int_(static_cast<long long>(*x));
    return py::float_(*x);
}

// A Python value as the JSON that json.dumps(_jsonable(value)) gives, built without the text: dicts with text keys,
// lists, tuples, text, booleans, integers of 64 bits, finite floats and None as they are; anything else goes
// through `as_text` (JSON text of the value: Quantity, Model, numpy, a dict with other keys, a huge integer), so its
// rules and errors stay capplan.api's. `field` names where a value sits, for the errors.
nlohmann::json json_of(py::handle v, const std::string& field, const py::function& as_text) {
    using json = nlohmann::json;
    if (v.is_none()) return nullptr;
    if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
    if (py::isinstance<py::int_>(v)) {
        int overflow = 0;
        const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
        if (overflow == 0) return n;
    } else if (py::isinstance<py::float_>(v)) {
        const double x = v.cast<double>();
        if (!std::isfinite(x))
            throw config_error(field.empty() ? "/" : field, py::repr(v).cast<std::string>(), "not a finite number",
                               "a finite number");
        return x;
    } else if (py::isinstance<py::str>(v)) {
        Py_ssize_t size = 0;
        if (const char* utf8 = PyUnicode_AsUTF8AndSize(v.ptr(), &size)) return std::string(utf8, static_cast<std::size_t>(size));
        PyErr_Clear();  // not UTF-8 (a lone surrogate): as JSON text it is an escape the reader refuses, naming where
    } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        json a = json::array();
        std::size_t i = 0;
        for (py::handle x : v) a.push_back(json_of(x, field + "/" + std::to_string(i++), as_text));
        return a;
    } else if (py::isinstance<py::dict>(v)) {
        const py::dict d = py::reinterpret_borrow<py::dict>(v);
        bool text_keys = true;
        for (auto item : d) text_keys = text_keys && py::isinstance<py::str>(item.first);
        if (text_keys) {
            json o = json::object();
            for (auto [k, x] : d) {
                const std::string key = k.cast<std::string>();
                o[key] = json_of(x, field + "/" + key, as_text);
            }
            return o;
        }
    }
    return parse_scenario_json(as_text(v, field.empty() ? "/" : field).cast<std::string>(), field.empty() ? "/" : field);
}

const char* kind_name(column_kind k) {
    switch (k) {
        case column_kind::number: return "number";
        case column_kind::integer: return "integer";
        case column_kind::boolean: return "boolean";
        case column_kind::text: return "text";
    }
    return "number";
}

}  // namespace

void register_typed(py::module_& m) {
    py::class_<parsed_scenario>(m, "ParsedScenario", "A scenario read into the core's typed form once.")
        .def("to_json", [](const parsed_scenario& s) { return s.doc.dump(); }, "The scenario as JSON text.")
        .def("base_dir", [](const parsed_scenario& s) { return s.base_dir; })
        .def("replace", [](const parsed_scenario& s, const py::dict& changes, const py::function& as_text) {
                std::vector<std::pair<std::string, nlohmann::json>> values;
                for (auto [k, v] : changes) {  // text keys (capplan.Scenario.replace checks them)
                    std::string key = k.cast<std::string>();
                    nlohmann::json value = json_of(v, "/" + key, as_text);
                    values.emplace_back(std::move(key), std::move(value));
                }
                py::gil_scoped_release release;
                nlohmann::json doc = s.doc;  // the copy the variant keeps
                // Whether a dotted key sets a section or a key inside it.
                auto reaches = [](std::string_view key, std::string_view section) {
                    return key.substr(0, section.size()) == section &&
                           (key.size() == section.size() || key[section.size()] == '.');
                };
                bool model = true, system = true;  // sections no change reaches, kept rather than read again
                for (const auto& [key, value] : values) {
                    if (value.is_null()) continue;
                    set_scenario_key(doc, key, value);
                    model = model && !reaches(key, "model");
                    system = system && !reaches(key, "system");
                }
                scenario_sections reuse;
                reuse.keep(*s.value, s.doc, model, system);
                return parse(std::move(doc), s.base_dir, &reuse);
            }, py::arg("changes"), py::arg("as_text"),
            "A new parsed scenario with each dotted key set to its value (a Python value, as parse_scenario_object "
            "reads them; None keeps this one's).");
    m.def("parse_scenario_object", [](py::handle scenario, const std::filesystem::path& base_dir, const py::function& as_text) {
            nlohmann::json doc = json_of(scenario, "", as_text);
            py::gil_scoped_release release;
            return parse(std::move(doc), base_dir);
        }, py::arg("scenario"), py::arg("base_dir"), py::arg("as_text"),
        "Read a scenario dict into the typed scenario without JSON text (as_text(value, field): JSON text of a value "
        "that is not plain JSON data).");
    m.def("parse_scenario", [](const std::string& text, const std::filesystem::path& base_dir) {
            py::gil_scoped_release release;
            return parse(parse_scenario_json(text), base_dir);
        }, py::arg("scenario"), py::arg("base_dir") = std::filesystem::path{},
        "Read scenario JSON text into the typed scenario (errors name the field).");

    py::class_<typed_estimate>(m, "EstimateResult", "An estimate's result, typed, completed on first need.")
        .def("to_object", [](typed_estimate& e) {
                const nlohmann::ordered_json j = e.with_result(nullptr, [](const estimate_result& r) { return result_object(r); });
                return to_python(j);
            }, "The result as the dict json.loads would give for estimate_json's text.")
        .def("value", &figure, py::arg("key"), "One figure by its dotted result key, or None.");
    m.def("estimate_parsed", [](const parsed_scenario& s, bool whole) {
            py::gil_scoped_release release;
            return std::make_unique<typed_estimate>(s.value, whole);
        }, py::arg("scenario"), py::arg("whole") = false,
        "Estimate a parsed scenario; the result stays typed. whole=False: a static batch's or a training step's "
        "headline figures first, the rest when read.");
    m.def("result_column_keys", [] {
            std::vector<std::pair<std::string, std::string>> out;
            for (const result_column& c : result_columns()) out.emplace_back(c.key, kind_name(c.kind));
            return out;
        }, "(key, kind) of every figure a sweep can tabulate, in the result's order.");

    m.def("sweep_scenario", [](const std::string& base, const std::filesystem::path& base_dir,
                               const std::vector<std::pair<std::string, std::vector<std::string>>>& axes,
                               const std::vector<std::string>& columns, int threads, progress* watch) {
            sweep_table t;
            {
                py::gil_scoped_release release;
                std::vector<sweep_axis> as;
                for (const auto& [k, v] : axes) as.push_back({k, v});
                t = sweep_scenario(base, base_dir, as, columns, threads, watch);
            }
            // Numbers as raw float64 bytes (numpy.frombuffer or array.array read them without a Python object each).
            py::list cols;
            for (const sweep_column& c : t.columns) {
                py::object data;
                if (c.kind == column_kind::text) {
                    py::list l(c.texts.size());
                    for (std::size_t i = 0; i < c.texts.size(); ++i)
                        l[i] = c.texts[i] ? py::object(py::str(*c.texts[i])) : py::object(py::none());
                    data = l;
                } else {
                    data = py::bytes(reinterpret_cast<const char*>(c.numbers.data()), c.numbers.size() * sizeof(double));
                }
                cols.append(py::make_tuple(c.key, kind_name(c.kind), data));
            }
            py::dict errors, reasons;  // only the points that have them
            for (const auto& [i, text] : t.errors) errors[py::int_(i)] = text;
            for (const auto& [i, why] : t.reasons) reasons[py::int_(i)] = why;
            py::dict out;
            out["columns"] = cols;
            out["errors"] = errors;
            out["reasons"] = reasons;
            out["points"] = t.points;
            out["stopped"] = t.stopped;
            return out;
        }, py::arg("base"), py::arg("base_dir"), py::arg("axes"), py::arg("columns"), py::arg("threads") = 0,
        py::arg("watch") = nullptr,
        "Every combination of the axes ((key, [JSON text of each value])) applied to the base scenario's JSON text and "
        "estimated in the core: {columns: [(key, kind, float64 bytes or a list of str/None)], errors: {point: text}, "
        "reasons: {point: [text]}, points, stopped}.");
}

}  // namespace capplan::python
