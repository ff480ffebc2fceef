// numpy arrays in and out of the public API's Tensor. Feeds of the right layout are borrowed: the
// Tensor holds a reference to the array, dropped under the GIL from whichever thread frees the
// last copy (runs free tensors with the GIL released). Outputs are arrays over the Tensor's memory,
// whose base is a capsule holding a copy of the Tensor.
#include <Python.h>

#include <array>
#include <memory>

#include "binding.h"

namespace tessel::python {

namespace {

constexpr int kDTypeCount = static_cast<int>(api::DType::Float8E5M2FNUZ) + 1;

/// numpy's name for each DType (indexed by its ONNX number); the bits' type where numpy has none.
const char *numpyName(api::DType dtype) {
  switch (dtype) {
    case api::DType::BFloat16: return "uint16";
    case api::DType::Float8E4M3FN:
    case api::DType::Float8E4M3FNUZ:
    case api::DType::Float8E5M2:
    case api::DType::Float8E5M2FNUZ: return "uint8";
    case api::DType::String:
    case api::DType::Undefined: return nullptr;
    default: return api::dtypeName(dtype);
  }
}

/// The dtypes by DType, made once under the GIL; leaked like every module-lifetime object here.
const std::array<PyObject *, kDTypeCount> &dtypeTable() {
  static const std::array<PyObject *, kDTypeCount> *table = [] {
    auto *t = new std::array<PyObject *, kDTypeCount>{};
    for (int i = 0; i < kDTypeCount; ++i)
      if (const char *name = numpyName(static_cast<api::DType>(i))) (*t)[i] = py::dtype(name).release().ptr();
    return t;
  }();
  return *table;
}

/// The DType of a numpy dtype that maps one to one (not the bits' types of bfloat16 and float8).
api::DType dtypeOf(const py::dtype &dtype) {
  const auto &table = dtypeTable();
  for (int i = 0; i < kDTypeCount; ++i) {
    auto d = static_cast<api::DType>(i);
    if (table[i] && numpyName(d) == std::string_view(api::dtypeName(d)) &&
        py::detail::npy_api::get().PyArray_EquivTypes_(dtype.ptr(), table[i]))
      return d;
  }
  return api::DType::Undefined;
}

/// Holds one reference to `object` for as long as a Tensor does.
std::shared_ptr<void> holdReference(py::object object) {
  return std::shared_ptr<void>(object.release().ptr(), [](void *p) {
    if (!Py_IsInitialized()) return;  // The interpreter is gone, and the object with it.
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(static_cast<PyObject *>(p));
    PyGILState_Release(state);
  });
}

bool borrowable(const py::array &array, api::DType declared) {
  constexpr int kLayout = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if ((array.flags() & kLayout) != kLayout) return false;
  if (declared == api::DType::Undefined) return dtypeOf(array.dtype()) != api::DType::Undefined;
  return py::detail::npy_api::get().PyArray_EquivTypes_(array.dtype().ptr(), numpyDtype(declared).ptr());
}

api::Tensor borrow(py::array array, api::DType dtype) {
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  void *data = array.mutable_data();
  return api::Tensor::borrow(dtype, std::move(shape), data, holdReference(std::move(array)));
}

}  // namespace

py::dtype numpyDtype(api::DType dtype) {
  PyObject *d = dtypeTable()[static_cast<int>(dtype) < kDTypeCount ? static_cast<int>(dtype) : 0];
  if (!d) raiseInvalid(std::string("tessel has no numpy dtype for ") + api::dtypeName(dtype) + " tensors");
  return py::reinterpret_borrow<py::dtype>(d);
}

api::Tensor tensorFromPython(py::handle value, api::DType declared, std::string_view name) {
  if (py::isinstance<py::array>(value)) {
    auto array = py::reinterpret_borrow<py::array>(value);
    if (borrowable(array, declared)) return borrow(std::move(array), declared != api::DType::Undefined ? declared : dtypeOf(array.dtype()));
  }
  // numpy has no bfloat16 or float8: such inputs take their bits, and converting numbers to the bits'
  // integer type would be silently wrong.
  if (declared != api::DType::Undefined && numpyName(declared) != std::string_view(api::dtypeName(declared)) &&
      !(py::isinstance<py::array>(value) &&
        py::detail::npy_api::get().PyArray_EquivTypes_(py::reinterpret_borrow<py::array>(value).dtype().ptr(),
                                                      numpyDtype(declared).ptr())))
    raiseInvalid(std::string("feed '") + std::string(name) + "': a " + api::dtypeName(declared) +
                 " input takes its bits as a numpy " + numpyName(declared) + " array");
  // A copy: C-contiguous, aligned, in the declared dtype (or the one numpy infers).
  static py::object *numpyArray = new py::object(py::module_::import("numpy").attr("array"));
  py::object converted;
  try {
    converted = declared != api::DType::Undefined ? (*numpyArray)(value, numpyDtype(declared), py::arg("order") = "C")
                                                  : (*numpyArray)(value, py::arg("order") = "C");
  } catch (py::error_already_set &e) {
    raiseInvalid(std::string("feed '") + std::string(name) + "': cannot be made a numpy array of " +
                 (declared != api::DType::Undefined ? api::dtypeName(declared) : "numbers") + ": " + e.what());
  }
  auto array = py::reinterpret_borrow<py::array>(converted);
  api::DType dtype = declared != api::DType::Undefined ? declared : dtypeOf(array.dtype());
  if (dtype == api::DType::Undefined)
    raiseInvalid(std::string("feed '") + std::string(name) + "': numpy dtype " + py::str(array.dtype()).cast<std::string>() +
                 " has no tessel dtype");
  return borrow(std::move(array), dtype);
}

py::array arrayFromTensor(const api::Tensor &tensor) {
  py::dtype dtype = numpyDtype(tensor.dtype());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  py::capsule base(new api::Tensor(tensor), [](void *p) { delete static_cast<api::Tensor *>(p); });
  return py::array(dtype, std::move(shape), {}, tensor.data(), base);
}

}  // namespace tessel::python
