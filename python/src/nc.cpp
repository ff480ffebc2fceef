// tessel._tessel's accelerator kernel tools: the kernel library and one simulated kernel run, as
// tessel.nc wraps them (tessel/nc.py).
#include <pybind11/stl.h>

#include "binding.h"

namespace tessel::python {

namespace {

py::list kernels() {
  py::list list;
  for (const api::nc::KernelInfo &k : api::nc::kernels()) list.append(py::make_tuple(k.name, k.summary, k.dims, k.dtypes));
  return list;
}

py::dict kernelRun(const std::string &name, const std::string &target, const std::map<std::string, int64_t> &shape,
                   const std::string &dtype, const std::map<std::string, std::string> &options, bool timingOnly,
                   uint64_t seed, const std::string &profileDir) {
  api::nc::KernelRunOptions o;
  o.target = target;
  o.shape = shape;
  o.dtype = dtype;
  o.options = options;
  o.timingOnly = timingOnly;
  o.seed = seed;
  o.profileDir = profileDir;
  api::Result<api::nc::KernelRunResult> ran = [&] {
    py::gil_scoped_release release;
    return api::nc::kernelRun(name, o);
  }();
  api::nc::KernelRunResult r = valueOrRaise(std::move(ran));
  py::dict d;
  d["latency_us"] = r.latencyUs;
  d["estimated_us"] = r.estimatedUs;
  d["mfu_percent"] = r.mfuPercent;
  d["bounding_engine"] = r.boundingEngine;
  d["instructions"] = r.instructions;
  d["checked"] = r.checked;
  d["passed"] = r.passed;
  d["max_abs_error"] = r.maxAbsError;
  d["max_error_ratio"] = r.maxErrorRatio;
  d["races"] = r.races;
  d["summary"] = r.summary;
  return d;
}

}  // namespace

void bindNc(py::module_ &m) {
  py::module_ nc = m.def_submodule("nc", "The accelerator's kernel library");
  nc.def("kernels", &kernels);
  nc.def("kernel_run", &kernelRun, py::arg("name"), py::arg("target"), py::arg("shape"), py::arg("dtype"),
         py::arg("options"), py::arg("timing_only"), py::arg("seed"), py::arg("profile_dir"));
}

}  // namespace tessel::python
