// Session: import + target binding + run.
#include "runtime/session.h"

#include <algorithm>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"

namespace tessel {

Session::~Session() = default;

std::vector<std::string> Session::targets() { return {"ref", "cpu"}; }

Expected<std::unique_ptr<Session>> Session::create(Model model, const std::string &target,
                                                   const SessionOptions &options) {
  auto known = targets();
  if (std::find(known.begin(), known.end(), target) == known.end()) {
    return makeError(ErrorCode::InvalidArgument, "unknown target '{}'; available: ref, cpu", target);
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

Expected<cpu::CpuExecutable *> Session::cpuPlanFor(const NamedValues &feeds) {
  if (auto it = cpuPlans_.find(""); it != cpuPlans_.end()) return it->second.get();
  std::string key;
  std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
  for (const auto &[name, value] : feeds) {
    if (!value.isTensor()) continue;
    key += name + formatSizes(value.tensor().sizes()) + ";";
    sizes.emplace_back(name, value.tensor().sizes());
  }
  if (auto it = cpuPlans_.find(key); it != cpuPlans_.end()) return it->second.get();
  // Planning rewrites the graph, so each plan starts from its own copy of the model.
  auto compile = [&](int optLevel) -> Expected<std::unique_ptr<cpu::CpuExecutable>> {
    TESSEL_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(model_));
    TESSEL_ASSIGN_OR_RETURN(Model copy, importOnnxBytes(bytes, model_.sourcePath));
    copy.sourcePath = model_.sourcePath;
    TESSEL_RETURN_IF_ERROR(cpu::specializeInputs(copy, sizes, 0));
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
  ReferenceInterpreter interpreter(model_);
  return interpreter.run(feeds);
}

}  // namespace tessel
