#include <pybind11/stl.h>

#include "capplan/dtype.hpp"
#include "capplan/units_parse.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

namespace {
using dims = std::tuple<int, int, int, int>;
dimension to_dim(const dims& d) { return {std::get<0>(d), std::get<1>(d), std::get<2>(d), std::get<3>(d)}; }
}  // namespace

void register_units(py::module_& m) {
    m.def("parse_quantity", [](const std::string& text, const std::string& field) {
            const auto q = parse_quantity(text, field);
            return std::make_tuple(q.si, dims{q.dim.bytes, q.dim.flops, q.dim.seconds, q.dim.watts});
        }, py::arg("text"), py::arg("field") = "",
        "Parse '80 GB' -> (value in SI base units, (bytes, flops, seconds, watts) exponents).");
    m.def("unit_si", [](const std::string& unit, const dims& d, const std::string& field) { return unit_si(unit, to_dim(d), field); },
          py::arg("unit"), py::arg("dims"), py::arg("field") = "", "SI size of one unit, checked against a dimension.");
    m.def("format_quantity", [](double si, const dims& d, bool binary) { return format_quantity(si, to_dim(d), binary); },
          py::arg("si"), py::arg("dims"), py::arg("binary") = false);
    m.def("dimension_name", [](const dims& d) { return dimension_name(to_dim(d)); });
    m.def("allowed_units", [](const dims& d) { return allowed_units(to_dim(d)); });
    m.def("number_formats", [] {
        py::list out;
        for (const auto& f : number_formats())
            out.append(py::dict(py::arg("name") = f.name, py::arg("bytes_per_element") = f.bytes_per_element(),
                                py::arg("element_bits") = f.element_bits, py::arg("block_size") = f.block_size,
                                py::arg("scale_bits") = f.scale_bits, py::arg("peak_key") = f.peak_key,
                                py::arg("source") = f.source));
        return out;
    });
}

}  // namespace capplan::python
