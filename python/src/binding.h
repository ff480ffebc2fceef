// What the parts of the tessel._tessel module share: raising a Status as a tessel.Error, and moving
// tensors between numpy and the public API without copies where the layout allows. The module
// sees tessel only through include/tessel/tessel.h.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string_view>

#include "tessel/tessel.h"

namespace tessel::python {

namespace py = pybind11;
namespace api = tessel::api;

/// Raises `status` (not ok) as the tessel.Error subclass of its code. Needs the GIL.
[[noreturn]] void raiseStatus(const api::Status &status);

/// The value of `result`, or raises its Status.
template <class T>
T valueOrRaise(api::Result<T> &&result) {
  if (!result.ok()) raiseStatus(result.status());
  return std::move(result).value();
}

inline void checkStatus(const api::Status &status) {
  if (!status.ok()) raiseStatus(status);
}

/// Raises tessel.InvalidArgumentError with `message` (for checks made before C++ sees a call).
[[noreturn]] void raiseInvalid(const std::string &message);

/// The numpy dtype tessel returns a dtype as. Types numpy lacks come back as their bits: bfloat16 as
/// uint16, the float8 types as uint8.
py::dtype numpyDtype(api::DType dtype);

/// A tensor for the feed `name` from a numpy array (or anything np.asarray takes). A C-contiguous,
/// aligned array of the declared dtype is borrowed (no copy; the tensor holds a reference to it);
/// anything else is copied into a new C-contiguous array of the declared dtype. `declared` is
/// DType::Undefined when the model does not say, and then the array's own dtype is kept.
api::Tensor tensorFromPython(py::handle value, api::DType declared, std::string_view name);

/// A numpy array viewing `tensor`'s memory (no copy); the array keeps a copy of the Tensor, and so
/// its memory, alive.
py::array arrayFromTensor(const api::Tensor &tensor);

void bindExecutable(py::module_ &m);
void bindNc(py::module_ &m);

}  // namespace tessel::python
