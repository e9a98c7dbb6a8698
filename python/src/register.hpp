#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "capplan/catalog.hpp"
#include "capplan/report/result_object.hpp"
#include "capplan/spec/hf_config.hpp"

namespace capplan::python {

// A model the Python side passes as a catalog name, or as config.json text when `is_config`.
inline model_spec resolve_model(const std::string& model, bool is_config, const std::string& name = "custom") {
    return is_config ? model_from_hf_config(model, name, "/model") : default_catalog().model(model, "/model");
}

// A JSON value as the Python object json.loads would give (register_estimate.cpp).
pybind11::object to_python(const nlohmann::ordered_json& v);

void register_errors(pybind11::module_& m);
void register_progress(pybind11::module_& m);
void register_units(pybind11::module_& m);
void register_catalog(pybind11::module_& m);
void register_estimate(pybind11::module_& m);
void register_estimate_many(pybind11::module_& m);
void register_inference_grid(pybind11::module_& m);
void register_typed(pybind11::module_& m);
void register_collectives(pybind11::module_& m);
void register_sizing(pybind11::module_& m);
void register_layout_search(pybind11::module_& m);
void register_calibration(pybind11::module_& m);

}  // namespace capplan::python
