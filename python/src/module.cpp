// tessel._tessel: the binding of the public C++ API (include/tessel/tessel.h) that the Python
// package `tessel` is written over. It links only libtessel.so. The names here are the package's
// building blocks; users call the ones tessel/__init__.py exports.
#include <pybind11/stl.h>

#include "binding.h"

PYBIND11_MODULE(_tessel, m) {
  namespace api = tessel::api;
  namespace py = pybind11;
  m.doc() = "The binding of tessel's C++ API; use the `tessel` package instead.";
  m.def("version", [] { return std::string(api::version()); });
  m.def("targets", [] { return api::targets(); });
  tessel::python::bindExecutable(m);
  tessel::python::bindNc(m);
}
