// Session: import + target binding + run.
#include "runtime/session.h"

#include <algorithm>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "targets/nc/compiler/executable.h"

namespace tessel {

Session::Session(Model model, std::string target, SessionOptions options)
    : model_(std::move(model)), target_(std::move(target)), options_(options) {}

Session::~Session() = default;

std::vector<std::string> Session::targets() { return {"ref", "cpu", "nc-v2", "nc-v3"}; }

namespace {
bool isAcceleratorTarget(const std::string &target) { return target == "nc-v2" || target == "nc-v3"; }

/// The plan cache's key: the feeds' names and sizes.
std::string shapeKey(const NamedValues &feeds) {
  std::string key;
  for (const auto &[name, value] : feeds)
    if (value.isTensor()) key += name + formatSizes(value.tensor().sizes()) + ";";
  return key;
}
}  // namespace

Expected<std::unique_ptr<Session>> Session::create(Model model, const std::string &target,
                                                   const SessionOptions &options) {
  auto known = targets();
  if (std::find(known.begin(), known.end(), target) == known.end()) {
    return makeError(ErrorCode::InvalidArgument, "unknown target '{}'; available: {}", target, fmt::join(known, ", "));
  }
  return std::unique_ptr<Session>(new Session(std::move(model), target, options));
}

Expected<std::unique_ptr<Session>> Session::load(const std::string &path, const std::string &target,
                                                 const SessionOptions &options) {
  if (target == "cpu" && cpu::isCpuArtifact(path)) {
    TESSEL_ASSIGN_OR_RETURN(auto plan, cpu::loadCpuArtifact(path, {options.optLevel, options.threads}));
    Model model = plan->model();
    auto session = std::unique_ptr<Session>(new Session(std::move(model), target, options));
    session->cpuPlans_[""] = std::move(plan);  // An artifact has one plan, for its compiled shapes.
    return session;
  }
  TESSEL_ASSIGN_OR_RETURN(Model model, importOnnxFile(path));
  return create(std::move(model), target, options);
}

Expected<Model> Session::specializedCopy(const NamedValues &feeds) const {
  std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
  for (const auto &[name, value] : feeds)
    if (value.isTensor()) sizes.emplace_back(name, value.tensor().sizes());
  // Planning rewrites the graph, so each plan starts from its own copy of the model.
  TESSEL_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(model_));
  TESSEL_ASSIGN_OR_RETURN(Model copy, importOnnxBytes(bytes, model_.sourcePath));
  copy.sourcePath = model_.sourcePath;
  TESSEL_RETURN_IF_ERROR(cpu::specializeInputs(copy, sizes, 0));
  return copy;
}

Expected<nc::compiler::NcExecutable *> Session::ncPlanFor(const NamedValues &feeds) {
  const std::string key = shapeKey(feeds);
  if (auto it = ncPlans_.find(key); it != ncPlans_.end()) return it->second.get();
  auto compile = [&](int optLevel) -> Expected<std::unique_ptr<nc::compiler::NcExecutable>> {
    TESSEL_ASSIGN_OR_RETURN(Model copy, specializedCopy(feeds));
    nc::compiler::NcCompileOptions options;
    options.target = target_;
    options.optLevel = optLevel;
    options.lowering.autoCast = nc::compiler::AutoCast::None;
    return nc::compiler::compileNc(std::move(copy), options);
  };
  // As for cpu: a model the passes' stricter inference rejects still runs, unoptimized.
  auto compiled = compile(options_.optLevel);
  if (!compiled.ok() && options_.optLevel > 0 && compiled.diag().message.starts_with("pass '")) compiled = compile(0);
  if (!compiled.ok()) return compiled.diag();
  std::unique_ptr<nc::compiler::NcExecutable> exe = std::move(*compiled);
  auto *raw = exe.get();
  ncPlans_[key] = std::move(exe);
  return raw;
}

Expected<cpu::CpuExecutable *> Session::cpuPlanFor(const NamedValues &feeds) {
  if (auto it = cpuPlans_.find(""); it != cpuPlans_.end()) return it->second.get();
  const std::string key = shapeKey(feeds);
  if (auto it = cpuPlans_.find(key); it != cpuPlans_.end()) return it->second.get();
  auto compile = [&](int optLevel) -> Expected<std::unique_ptr<cpu::CpuExecutable>> {
    TESSEL_ASSIGN_OR_RETURN(Model copy, specializedCopy(feeds));
    return cpu::compileCpu(std::move(copy), {optLevel, options_.threads});
  };
  auto plan = compile(options_.optLevel);
  // The passes' shape inference is stricter than import (ONNX's checker on every node); a model
  // it rejects still runs, unoptimized, with each op's own checks reporting any real defect.
  if (!plan.ok() && options_.optLevel > 0 && plan.diag().message.starts_with("pass '")) plan = compile(0);
  if (!plan.ok()) return plan.diag();
  auto *raw = plan->get();
  cpuPlans_[key] = std::move(*plan);
  return raw;
}

Expected<NamedValues> Session::run(const NamedValues &feeds) {
  if (target_ == "cpu") {
    TESSEL_ASSIGN_OR_RETURN(cpu::CpuExecutable * plan, cpuPlanFor(feeds));
    return plan->run(feeds);
  }
  if (isAcceleratorTarget(target_)) {
    TESSEL_ASSIGN_OR_RETURN(nc::compiler::NcExecutable * exe, ncPlanFor(feeds));
    placement_ = {};
    for (const nc::compiler::Fallback &f : exe->fallbacks())
      placement_.fallbacks.push_back(fmt::format("{} ({}): {}", f.node, f.opType, f.reason));
    for (size_t i = 0; i < exe->model().graph->nodes().size(); ++i)
      ++(exe->nodeOnDevice(i) ? placement_.deviceNodes : placement_.hostNodes);
    TESSEL_ASSIGN_OR_RETURN(nc::compiler::NcRunResult result, exe->run(feeds));
    return std::move(result.outputs);
  }
  ReferenceInterpreter interpreter(model_);
  return interpreter.run(feeds);
}

}  // namespace tessel
