// C++ errors -> Python exceptions with builtin bases, carrying the field, value and allowed values.
#include <pybind11/stl.h>

#include <string_view>

#include "capplan/error.hpp"
#include "capplan/progress.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

namespace {
PyObject* make_class(py::module_& m, const char* name, PyObject* bases, const char* doc) {
    const std::string qualified = std::string("capplan._core.") + name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
    if (!cls) throw py::error_already_set();
    m.add_object(name, py::handle(cls));
    return cls;
}

// Messages quote user input, which may not be UTF-8 (a byte of a Latin-1 file) or may be cut inside
// a character: invalid bytes become U+FFFD instead of a UnicodeDecodeError replacing the error.
py::str text(std::string_view s) {
    PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
    if (!u) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(u);
}

void raise(PyObject* cls, const config_error& e, const std::vector<std::string>& suggestions = {}) {
    py::object exc = py::reinterpret_borrow<py::object>(cls)(text(e.what()));
    exc.attr("field") = text(e.field());
    exc.attr("value") = text(e.value());
    exc.attr("problem") = text(e.problem());
    exc.attr("allowed") = text(e.allowed());
    py::list names;
    for (const auto& s : suggestions) names.append(text(s));
    exc.attr("suggestions") = names;
    PyErr_SetObject(cls, exc.ptr());
}

void raise_plain(PyObject* cls, const std::exception& e) { PyErr_SetObject(cls, text(e.what()).ptr()); }
}  // namespace

void register_errors(py::module_& m) {
    static PyObject* base = make_class(m, "Error", PyExc_Exception, "Base of every capplan error.");
    static PyObject* config = make_class(m, "ConfigError", py::make_tuple(py::handle(base), py::handle(PyExc_ValueError)).release().ptr(),
                                         "Bad input: a wrong value, a missing or unknown key (also a ValueError).");
    static PyObject* unit = make_class(m, "UnitError", py::make_tuple(py::handle(config)).release().ptr(),
                                       "A quantity string that does not parse or has the wrong dimension.");
    static PyObject* json = make_class(m, "JsonError", py::make_tuple(py::handle(config)).release().ptr(),
                                       "Text that is not valid JSON.");
    static PyObject* unknown = make_class(m, "UnknownNameError",
                                          py::make_tuple(py::handle(config), py::handle(PyExc_KeyError)).release().ptr(),
                                          "A catalog name that does not exist (also a KeyError).");
    static PyObject* device = make_class(m, "DeviceError", py::make_tuple(py::handle(base), py::handle(PyExc_RuntimeError)).release().ptr(),
                                         "The hardware a request needs is missing or cannot do it (also a RuntimeError).");
    // KeyError quotes its message in str(); a capplan error reads as a sentence instead.
    py::handle(unknown).attr("__str__") = py::module_::import("builtins").attr("BaseException").attr("__str__");
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const unknown_name_error& e) {
            raise(unknown, e, e.suggestions());
        } catch (const unit_error& e) {
            raise(unit, e);
        } catch (const json_error& e) {
            raise(json, e);
        } catch (const config_error& e) {
            raise(config, e);
        } catch (const device_error& e) {
            raise_plain(device, e);
        } catch (const stopped_early& e) {
            raise_plain(PyExc_KeyboardInterrupt, e);
        } catch (const error& e) {
            raise_plain(base, e);
        }
    });
}

// A long call's progress, read by Python's progress bar while the call runs on another thread (GIL released);
// request_stop() is how Ctrl-C reaches the core.
void register_progress(py::module_& m) {
    py::class_<progress>(m, "Progress", "How far a long core call has come; request_stop() ends it early.")
        .def(py::init<>())
        .def("done", &progress::done)
        .def("total", &progress::total)
        .def("request_stop", &progress::request_stop)
        .def("stop_requested", &progress::stop_requested);
}

}  // namespace capplan::python
