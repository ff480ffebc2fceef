// Raising a tessel::api::Status as a Python exception. The classes live in tessel/_errors.py, so
// that Python code can raise and catch the same ones; _errors.from_status picks the class by the
// Status's code name.
#include <Python.h>

#include "binding.h"

namespace tessel::python {

namespace {

/// tessel._errors.from_status, looked up once. Leaked on purpose: a static py::object would be
/// released after the interpreter has gone.
py::handle fromStatus() {
  static py::object *function = new py::object(py::module_::import("tessel._errors").attr("from_status"));
  return *function;
}

[[noreturn]] void raiseObject(const py::object &exception) {
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exception.ptr())), exception.ptr());
  throw py::error_already_set();
}

}  // namespace

void raiseStatus(const api::Status &status) {
  raiseObject(fromStatus()(status.codeName(), status.str(), status.message(), status.file(), status.node(), status.op()));
}

void raiseInvalid(const std::string &message) {
  raiseStatus(api::Status(api::ErrorCode::InvalidArgument, message));
}

}  // namespace tessel::python
