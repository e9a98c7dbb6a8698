// capplan._core: the C++ core for Python. Data crosses as JSON text or plain numbers; the
// Python package (python/capplan) builds the friendly objects on top.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "register.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "capplan core (C++): units, catalog, scenario and estimate";
    m.attr("__version__") = CAPPLAN_VERSION;
    capplan::python::register_errors(m);
    capplan::python::register_units(m);
    capplan::python::register_catalog(m);
    capplan::python::register_estimate(m);
    capplan::python::register_estimate_many(m);
    capplan::python::register_inference_grid(m);
    capplan::python::register_collectives(m);
    capplan::python::register_sizing(m);
    capplan::python::register_layout_search(m);
    capplan::python::register_calibration(m);
}
