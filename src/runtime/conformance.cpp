// ONNX backend-test runner.
#include "runtime/conformance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <onnx/onnx-data_pb.h>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/session.h"

namespace tessel {

namespace fs = std::filesystem;

namespace {

constexpr const char *kTestDataRoot = "/usr/share/libonnx-testdata/data";

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Files named `<prefix>_<N>.pb` in `dir`, ordered by N.
std::vector<fs::path> numberedFiles(const fs::path &dir, const std::string &prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto &entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix + "_", 0) != 0 || entry.path().extension() != ".pb") continue;
    found.emplace_back(std::atoi(name.c_str() + prefix.size() + 1), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto &[n, p] : found) out.push_back(p);
  return out;
}

Expected<RuntimeValue> valueFromSequenceProto(const onnx::SequenceProto &seq, const std::string &file) {
  TensorSequence out;
  for (const auto &t : seq.tensor_values()) {
    TESSEL_ASSIGN_OR_RETURN(Tensor tensor, onnx_frontend::tensorFromProto(t, "."));
    out.push_back(std::move(tensor));
  }
  return RuntimeValue(std::move(out));
}

/// Reads a test-data .pb as the kind of value `type` says (tensor, sequence, optional).
Expected<RuntimeValue> readTestValue(const fs::path &path, const Type &type) {
  std::string bytes = readFile(path);
  const std::string file = path.string();
  auto parseError = [&]() { return makeFileError(ErrorCode::ParseError, file, "cannot parse test data"); };
  if (type.kind() == Type::Kind::Sequence) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromString(bytes)) return parseError();
    return valueFromSequenceProto(seq, file);
  }
  if (type.kind() == Type::Kind::Optional) {
    onnx::OptionalProto opt;
    if (!opt.ParseFromString(bytes)) return parseError();
    if (opt.has_tensor_value()) {
      TESSEL_ASSIGN_OR_RETURN(Tensor tensor, onnx_frontend::tensorFromProto(opt.tensor_value(), "."));
      return RuntimeValue(std::move(tensor));
    }
    if (opt.has_sequence_value()) return valueFromSequenceProto(opt.sequence_value(), file);
    return RuntimeValue();
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return parseError();
  // ONNX 1.12 writes bfloat16 test data with data type UINT16 (same bits); read it as declared.
  if (type.isTensor() && type.dtype() == DType::BFloat16 && proto.data_type() == onnx::TensorProto::UINT16) {
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  }
  TESSEL_ASSIGN_OR_RETURN(Tensor tensor, onnx_frontend::tensorFromProto(proto, "."));
  return RuntimeValue(std::move(tensor));
}

template <class T>
bool elementsMatch(const Tensor &expected, const Tensor &actual, double rtol, double atol, std::string &why) {
  const T *e = expected.data<T>();
  const T *a = actual.data<T>();
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_integral_v<T>) {
      if (e[i] == a[i]) continue;
      if constexpr (std::is_same_v<T, std::string>) {
        why = fmt::format("element {}: expected '{}', got '{}'", i, e[i], a[i]);
      } else {
        why = fmt::format("element {}: expected {}, got {}", i, static_cast<int64_t>(e[i]), static_cast<int64_t>(a[i]));
      }
      return false;
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      if (std::abs(a[i] - e[i]) <= atol + rtol * std::abs(e[i])) continue;
      why = fmt::format("element {}: complex values differ", i);
      return false;
    } else {
      double ev = static_cast<double>(static_cast<float>(e[i]));
      double av = static_cast<double>(static_cast<float>(a[i]));
      if constexpr (std::is_same_v<T, double>) {
        ev = e[i];
        av = a[i];
      }
      if (std::isnan(ev) && std::isnan(av)) continue;
      if (std::isinf(ev) || std::isinf(av)) {
        if (ev == av) continue;
      } else if (std::fabs(av - ev) <= atol + rtol * std::fabs(ev)) {
        continue;
      }
      why = fmt::format("element {}: expected {}, got {} (rtol {}, atol {})", i, ev, av, rtol, atol);
      return false;
    }
  }
  return true;
}

bool tensorsMatch(const Tensor &expected, const Tensor &actual, double rtol, double atol, std::string &why) {
  if (expected.dtype() != actual.dtype()) {
    why = fmt::format("dtype: expected {}, got {}", dtypeName(expected.dtype()), dtypeName(actual.dtype()));
    return false;
  }
  if (expected.sizes() != actual.sizes()) {
    why = fmt::format("shape: expected {}, got {}", formatSizes(expected.sizes()), formatSizes(actual.sizes()));
    return false;
  }
  bool result = true;
  visitDType(expected.dtype(), [&]<class T>(TypeTag<T>) {
    result = elementsMatch<T>(expected, actual, rtol, atol, why);
  });
  return result;
}

}  // namespace

bool valuesMatch(const RuntimeValue &expected, const RuntimeValue &actual, double rtol, double atol, std::string &why) {
  if (expected.isNone() || actual.isNone()) {
    if (expected.isNone() && actual.isNone()) return true;
    why = fmt::format("expected {}, got {}", expected.describe(), actual.describe());
    return false;
  }
  if (expected.isTensor() != actual.isTensor()) {
    why = fmt::format("expected {}, got {}", expected.describe(), actual.describe());
    return false;
  }
  if (expected.isTensor()) return tensorsMatch(expected.tensor(), actual.tensor(), rtol, atol, why);
  const auto &e = expected.sequence();
  const auto &a = actual.sequence();
  if (e.size() != a.size()) {
    why = fmt::format("sequence length: expected {}, got {}", e.size(), a.size());
    return false;
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (!tensorsMatch(e[i], a[i], rtol, atol, why)) {
      why = fmt::format("sequence element {}: {}", i, why);
      return false;
    }
  }
  return true;
}

std::vector<std::string> defaultConformanceDirs() {
  std::vector<std::string> dirs;
  for (const char *suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    dirs.push_back(std::string(kTestDataRoot) + "/" + suite);
  }
  return dirs;
}

Expected<std::vector<std::string>> findConformanceCases(const std::vector<std::string> &paths) {
  std::vector<std::string> cases;
  for (const std::string &path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      return makeFileError(ErrorCode::FileNotFound, path, "not a folder of conformance cases");
    }
    if (fs::exists(fs::path(path) / "model.onnx")) {
      cases.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto &entry : fs::recursive_directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().filename() == "model.onnx") {
        found.push_back(entry.path().parent_path().string());
      }
    }
    std::sort(found.begin(), found.end());
    cases.insert(cases.end(), found.begin(), found.end());
  }
  return cases;
}

CaseResult runConformanceCase(const std::string &dir, const ConformanceOptions &options) {
  auto start = std::chrono::steady_clock::now();
  CaseResult result;
  fs::path casePath(dir);
  result.name = casePath.parent_path().filename().string() + "/" + casePath.filename().string();
  result.dir = dir;
  auto finish = [&](CaseOutcome outcome, std::string reason) {
    result.outcome = outcome;
    result.reason = std::move(reason);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  auto failWith = [&](const Diagnostic &diag) {
    bool unsupported = diag.code == ErrorCode::UnsupportedOp || diag.code == ErrorCode::UnsupportedOpset;
    return finish(unsupported ? CaseOutcome::Unsupported : CaseOutcome::Failed, diag.str());
  };

  auto session = Session::load((casePath / "model.onnx").string(), options.target);
  if (!session.ok()) return failWith(session.diag());
  const Graph &graph = *(*session)->model().graph;

  std::vector<fs::path> dataSets;
  for (const auto &entry : fs::directory_iterator(casePath)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      dataSets.push_back(entry.path());
    }
  }
  std::sort(dataSets.begin(), dataSets.end());
  if (dataSets.empty()) return finish(CaseOutcome::Failed, "no test_data_set_* folder");

  for (const fs::path &dataSet : dataSets) {
    // Inputs bind to the graph inputs that are not initializers, in order.
    std::vector<Value *> feedable;
    for (Value *input : graph.inputs()) {
      if (!input->hasInitializer()) feedable.push_back(input);
    }
    std::vector<fs::path> inputFiles = numberedFiles(dataSet, "input");
    std::vector<fs::path> outputFiles = numberedFiles(dataSet, "output");
    NamedValues feeds;
    for (size_t i = 0; i < inputFiles.size(); ++i) {
      Value *target = i < feedable.size() ? feedable[i] : (i < graph.inputs().size() ? graph.inputs()[i] : nullptr);
      if (!target) return finish(CaseOutcome::Failed, fmt::format("{} has more inputs than the model", dataSet.string()));
      auto value = readTestValue(inputFiles[i], target->type());
      if (!value.ok()) return failWith(value.diag());
      feeds.emplace_back(target->name(), std::move(value).value());
    }
    auto outputs = (*session)->run(feeds);
    if (!outputs.ok()) return failWith(outputs.diag());
    const Session::Placement &placement = (*session)->lastPlacement();
    result.deviceNodes = placement.deviceNodes;
    result.hostNodes = placement.hostNodes;
    result.fallbacks = placement.fallbacks;
    if (outputs->size() != outputFiles.size()) {
      return finish(CaseOutcome::Failed, fmt::format("{} outputs, expected {}", outputs->size(), outputFiles.size()));
    }
    for (size_t i = 0; i < outputFiles.size(); ++i) {
      auto expected = readTestValue(outputFiles[i], graph.outputs()[i]->type());
      if (!expected.ok()) return failWith(expected.diag());
      std::string why;
      if (!valuesMatch(*expected, (*outputs)[i].second, options.rtol, options.atol, why)) {
        return finish(CaseOutcome::Failed,
                      fmt::format("{} output {} ('{}'): {}", dataSet.filename().string(), i, (*outputs)[i].first, why));
      }
    }
  }
  return finish(CaseOutcome::Passed, "");
}

Expected<std::map<std::string, std::string>> readExpectedFailures(const std::string &path) {
  std::ifstream in(path);
  if (!in) return makeFileError(ErrorCode::FileNotFound, path, "cannot open the expected-failures file");
  std::map<std::string, std::string> entries;
  std::string line;
  int lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    size_t space = line.find_first_of(" \t", first);
    std::string name = line.substr(first, space == std::string::npos ? std::string::npos : space - first);
    std::string reason = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    if (reason.empty()) {
      return makeFileError(ErrorCode::ParseError, path, "line {}: entry '{}' has no reason", lineNumber, name);
    }
    entries[name] = reason;
  }
  return entries;
}

}  // namespace tessel
