// Session: import + target binding + per-shape plans + run.
#include "runtime/session.h"

#include "frontend/onnx/importer.h"
#include "ir/clone.h"
#include "ir/specialize.h"
#include "runtime/target_registry.h"

namespace tessel {

Session::Session(Model model, std::shared_ptr<const Target> target, SessionOptions options)
    : model_(std::move(model)), targetImpl_(std::move(target)), target_(targetImpl_->name()), options_(std::move(options)) {}

Session::~Session() = default;

namespace {

using Sizes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// The plan cache's key: the feeds' names and sizes.
std::string shapeKey(const Sizes &sizes) {
  std::string key;
  for (const auto &[name, dims] : sizes) key += name + formatSizes(dims) + ";";
  return key;
}

Sizes sizesOf(const NamedValues &feeds) {
  Sizes sizes;
  for (const auto &[name, value] : feeds)
    if (value.isTensor()) sizes.emplace_back(name, value.tensor().sizes());
  return sizes;
}

}  // namespace

TargetOptions Session::targetOptions() const {
  TargetOptions options = options_.target;
  options.optLevel = options_.optLevel;
  options.threads = options_.threads;
  return options;
}

Expected<std::unique_ptr<Session>> Session::create(Model model, const std::string &target,
                                                   const SessionOptions &options) {
  TESSEL_ASSIGN_OR_RETURN(std::shared_ptr<const Target> impl, findTarget(target));
  return std::unique_ptr<Session>(new Session(std::move(model), std::move(impl), options));
}

Expected<std::unique_ptr<Session>> Session::load(const std::string &path, const std::string &target,
                                                 const SessionOptions &options) {
  if (isArtifact(path)) {
    TargetOptions targetOptions = options.target;
    targetOptions.optLevel = options.optLevel;
    targetOptions.threads = options.threads;
    TESSEL_ASSIGN_OR_RETURN(auto loaded, loadArtifact(path, targetOptions));
    Model model = loaded.second->model();
    auto session = std::unique_ptr<Session>(new Session(std::move(model), std::move(loaded.first), options));
    const RunFigures figures = loaded.second->lastRun();
    if (!figures.device.empty()) session->target_ = figures.device;
    session->fixedPlan_ = true;
    session->last_ = loaded.second.get();
    session->plans_[""] = std::move(loaded.second);
    return session;
  }
  TESSEL_ASSIGN_OR_RETURN(Model model, importOnnxFile(path));
  return create(std::move(model), target, options);
}

Expected<CompiledModel *> Session::compiledFor(const Sizes &sizes) {
  if (fixedPlan_) return last_ = plans_.begin()->second.get();
  // A target that serves every shape from one CompiledModel (ref; cpu, which plans each shape
  // itself; an accelerator given buckets) compiles the graph as imported, once; the others compile
  // per set of input sizes.
  const bool everyShape = servesEveryShape();
  const std::string key = everyShape ? "" : shapeKey(sizes);
  if (auto it = plans_.find(key); it != plans_.end()) return last_ = it->second.get();
  auto compile = [&](int optLevel) -> Expected<std::unique_ptr<CompiledModel>> {
    // From a copy: the target's passes rewrite the graph.
    Model copy = cloneModel(model_);
    if (!everyShape) TESSEL_RETURN_IF_ERROR(specializeInputs(copy, sizes, 0));
    TargetOptions options = targetOptions();
    options.optLevel = optLevel;
    return targetImpl_->compile(std::move(copy), options);
  };
  auto plan = compile(options_.optLevel);
  // The passes' shape inference is stricter than import (ONNX's checker on every node); a model
  // it rejects still runs, unoptimized, with each op's own checks reporting any real defect.
  if (!plan.ok() && options_.optLevel > 0 && plan.diag().message.starts_with("pass '")) plan = compile(0);
  if (!plan.ok()) return plan.diag();
  CompiledModel *raw = plan->get();
  plans_[key] = std::move(*plan);
  return last_ = raw;
}

Expected<NamedValues> Session::run(const NamedValues &feeds) {
  TESSEL_ASSIGN_OR_RETURN(CompiledModel * plan, compiledFor(sizesOf(feeds)));
  return plan->run(feeds);
}

Status Session::runTimingOnly(const NamedValues &feeds, const Residency &residency) {
  TESSEL_ASSIGN_OR_RETURN(CompiledModel * plan, compiledFor(sizesOf(feeds)));
  return plan->runTimingOnly(feeds, residency);
}

Expected<NamedValues> Session::run(const NamedValues &feeds, const Residency &residency) {
  TESSEL_ASSIGN_OR_RETURN(CompiledModel * plan, compiledFor(sizesOf(feeds)));
  return plan->runResident(feeds, residency);
}

Session::Placement Session::lastPlacement() const {
  if (!last_) return {};
  const RunFigures figures = last_->lastRun();
  return {figures.deviceNodes, figures.hostNodes, figures.fallbacks};
}

}  // namespace tessel
