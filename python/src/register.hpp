#pragma once

#include <pybind11/pybind11.h>

namespace capplan::python {

void register_errors(pybind11::module_& m);
void register_units(pybind11::module_& m);
void register_catalog(pybind11::module_& m);
void register_estimate(pybind11::module_& m);
void register_estimate_many(pybind11::module_& m);
void register_inference_grid(pybind11::module_& m);
void register_collectives(pybind11::module_& m);
void register_sizing(pybind11::module_& m);
void register_layout_search(pybind11::module_& m);
void register_calibration(pybind11::module_& m);

}  // namespace capplan::python
