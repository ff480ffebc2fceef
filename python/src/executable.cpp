// tessel._tessel.Executable and the calls that make one (compile, load). The Python package wraps
// it (tessel/_executable.py) with the onnxruntime-style calls, metadata objects and summaries; what
// runs per inference stays here so a run costs a few microseconds over the C++ call. Every call
// that reaches the Executable releases the GIL: it takes the executable's lock, and a run may free
// a borrowed feed (which takes the GIL) while holding it.
#include <optional>
#include <unordered_map>

#include <pybind11/stl.h>

#include "binding.h"

namespace tessel::python {

namespace {

/// The value of a Result computed with the GIL released.
template <class F>
auto withoutGil(F &&f) {
  std::optional<decltype(f())> result;
  {
    py::gil_scoped_release release;
    result.emplace(f());
  }
  return std::move(*result);
}

py::list describe(const std::vector<api::TensorInfo> &infos) {
  py::list list;
  for (const api::TensorInfo &info : infos) {
    py::object shape = py::none();
    if (info.rankKnown) {
      py::list dims;
      for (const api::Dim &d : info.shape) {
        if (d.isStatic()) dims.append(d.size);
        else if (!d.symbol.empty()) dims.append(d.symbol);
        else dims.append(py::none());
      }
      shape = std::move(dims);
    }
    list.append(py::make_tuple(info.name, api::dtypeName(info.dtype), shape));
  }
  return list;
}

class PyExecutable {
 public:
  explicit PyExecutable(api::Executable executable) : exe_(std::move(executable)) {
    for (const api::TensorInfo &info : exe_.inputs()) inputTypes_.emplace(info.name, info.dtype);
    for (size_t i = 0; i < exe_.outputs().size(); ++i) outputIndex_.emplace(exe_.outputs()[i].name, i);
  }

  /// onnxruntime's InferenceSession.run: the outputs named (all when None), in that order.
  py::list run(const py::object &outputNames, const py::dict &feeds) const {
    std::vector<api::NamedTensor> tensors;
    tensors.reserve(feeds.size());
    for (auto [key, value] : feeds) {
      if (!py::isinstance<py::str>(key)) raiseInvalid("feed names are strings; got " + py::repr(key).cast<std::string>());
      auto name = key.cast<std::string>();
      auto declared = inputTypes_.find(name);
      api::Tensor tensor = tensorFromPython(value, declared != inputTypes_.end() ? declared->second : api::DType::Undefined, name);
      tensors.emplace_back(std::move(name), std::move(tensor));
    }
    std::vector<api::NamedTensor> outputs = valueOrRaise(withoutGil([&] { return exe_.run(tensors); }));
    py::list result;
    if (outputNames.is_none()) {
      for (const auto &[name, tensor] : outputs) result.append(arrayFromTensor(tensor));
      return result;
    }
    for (py::handle name : outputNames) {
      auto found = py::isinstance<py::str>(name) ? outputIndex_.find(name.cast<std::string>()) : outputIndex_.end();
      if (found == outputIndex_.end() || found->second >= outputs.size()) {
        std::string known;
        for (const api::TensorInfo &info : exe_.outputs()) known += (known.empty() ? "'" : ", '") + info.name + "'";
        raiseInvalid("output " + py::repr(name).cast<std::string>() + " is not an output of the model; its outputs: " + known);
      }
      result.append(arrayFromTensor(outputs[found->second].second));
    }
    return result;
  }

  const std::string &target() const { return exe_.target(); }
  py::list inputs() const { return describe(exe_.inputs()); }
  py::list outputs() const { return describe(exe_.outputs()); }

  void save(const std::string &path) const {
    checkStatus(withoutGil([&] { return exe_.save(path); }));
  }
  std::string report() const {
    return withoutGil([&] { return exe_.report(); });
  }

  py::dict lastRun() const {
    api::RunSummary s = withoutGil([&] { return exe_.lastRun(); });
    py::dict d;
    d["simulated"] = s.simulated;
    d["latency_us"] = s.latencyUs;
    d["device_us"] = s.deviceUs;
    d["transfer_us"] = s.transferUs;
    d["host_us"] = s.hostUs;
    d["mfu_percent"] = s.mfuPercent;
    d["bounding_engine"] = s.boundingEngine;
    d["device_nodes"] = s.deviceNodes;
    d["host_nodes"] = s.hostNodes;
    d["fallbacks"] = s.fallbacks;
    d["bucket"] = s.bucket;
    d["padding_waste"] = s.paddingWaste;
    return d;
  }

  void setProfiling(bool on) const {
    py::gil_scoped_release release;
    exe_.setProfiling(on);
  }
  py::list opProfile() const {
    std::vector<api::OpProfile> rows = withoutGil([&] { return exe_.opProfile(); });
    py::list list;
    for (const api::OpProfile &r : rows) list.append(py::make_tuple(r.node, r.op, r.kernel, r.totalMs, r.runs));
    return list;
  }

  std::string timeline() const {
    return valueOrRaise(withoutGil([&] { return exe_.timeline(); }));
  }
  void profile(const std::string &dir) const {
    checkStatus(withoutGil([&] { return exe_.profile(dir); }));
  }

 private:
  api::Executable exe_;
  std::unordered_map<std::string, api::DType> inputTypes_;
  std::unordered_map<std::string, size_t> outputIndex_;
};

template <class T>
T option(const std::string &key, py::handle value, const char *expected) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error &) {
    raiseInvalid("compile option " + key + "=" + py::repr(value).cast<std::string>() + ": expected " + expected);
  }
}

/// CompileOptions from tessel.compile's keyword arguments (snake_case names of its fields).
api::CompileOptions compileOptions(const py::dict &kwargs) {
  api::CompileOptions o;
  for (auto [k, value] : kwargs) {
    auto key = k.cast<std::string>();
    if (key == "opt_level") o.optLevel = option<int>(key, value, "an int 0-3");
    else if (key == "threads") o.threads = option<int>(key, value, "an int");
    else if (key == "batch") o.batch = option<int64_t>(key, value, "an int");
    else if (key == "cores") o.cores = option<int>(key, value, "an int");
    else if (key == "auto_cast") o.autoCast = option<std::string>(key, value, "'none', 'matmul' or 'all'");
    else if (key == "auto_cast_type") o.autoCastType = option<std::string>(key, value, "'bf16', 'fp16' or 'fp8_e4m3'");
    else if (key == "shapes") o.shapes = option<std::map<std::string, std::vector<int64_t>>>(key, value, "a dict of input name -> sizes");
    else if (key == "dims")
      o.dimRanges = option<std::map<std::string, std::pair<int64_t, int64_t>>>(key, value, "a dict of dim name -> (lo, hi)");
    else if (key == "buckets")
      o.buckets = option<std::map<std::string, std::vector<int64_t>>>(key, value, "a dict of dim name -> sizes");
    else
      raiseInvalid("unknown compile option '" + key +
                   "'; the options are opt_level, threads, shapes, batch, dims, buckets, auto_cast, auto_cast_type and "
                   "cores");
  }
  return o;
}

/// Loads a model (`loadModel()` returns a Result<Model>) and compiles it, with the GIL released.
template <class LoadModel>
PyExecutable compileModel(LoadModel &&loadModel, const std::string &target, const api::CompileOptions &options) {
  api::Result<api::Executable> exe = withoutGil([&]() -> api::Result<api::Executable> {
    api::Result<api::Model> model = loadModel();
    if (!model.ok()) return model.status();
    return api::compile(*model, target, options);
  });
  return PyExecutable(valueOrRaise(std::move(exe)));
}

}  // namespace

void bindExecutable(py::module_ &m) {
  py::class_<PyExecutable>(m, "Executable")
      .def("run", &PyExecutable::run, py::arg("output_names"), py::arg("feeds"))
      .def_property_readonly("target", &PyExecutable::target)
      .def_property_readonly("inputs", &PyExecutable::inputs)
      .def_property_readonly("outputs", &PyExecutable::outputs)
      .def("save", &PyExecutable::save, py::arg("path"))
      .def("report", &PyExecutable::report)
      .def("last_run", &PyExecutable::lastRun)
      .def("set_profiling", &PyExecutable::setProfiling, py::arg("on"))
      .def("op_profile", &PyExecutable::opProfile)
      .def("timeline", &PyExecutable::timeline)
      .def("profile", &PyExecutable::profile, py::arg("dir"));

  m.def(
      "compile_path",
      [](const std::string &path, const std::string &target, const py::dict &options) {
        return compileModel([&] { return api::Model::load(path); }, target, compileOptions(options));
      },
      py::arg("path"), py::arg("target"), py::arg("options"));
  m.def(
      "compile_bytes",
      [](const py::bytes &data, const std::string &name, const std::string &target, const py::dict &options) {
        // The bytes object is immutable and held by the caller, so its buffer is read without the GIL.
        auto view = static_cast<std::string_view>(data);
        return compileModel([&] { return api::Model::fromBytes(view, name); }, target, compileOptions(options));
      },
      py::arg("data"), py::arg("name"), py::arg("target"), py::arg("options"));
  m.def(
      "load",
      [](const std::string &path, int threads) {
        api::CompileOptions options;
        options.threads = threads;
        return PyExecutable(valueOrRaise(withoutGil([&] { return api::load(path, options); })));
      },
      py::arg("path"), py::arg("threads") = 0);
}

}  // namespace tessel::python
