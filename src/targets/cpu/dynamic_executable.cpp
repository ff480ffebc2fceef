// A cpu plan per input shape, made on first use from the symbolic graph and cached.
#include "targets/cpu/dynamic_executable.h"

#include <chrono>
#include <set>

#include "ir/clone.h"
#include "passes/pipelines.h"
#include "targets/cpu/control_flow.h"
#include "targets/cpu/plan.h"

namespace tessel::cpu {
namespace {

/// The plan cache's key: the inputs' sizes in graph-input order.
std::string shapeKey(const InputSizes &sizes) {
  std::string key;
  for (const auto &[name, dims] : sizes) key += name + formatSizes(dims) + ";";
  return key;
}

/// A range for a dim no input has is a typo, not a constraint.
Status checkRangesNameDims(const Model &model, const DimRanges &ranges) {
  std::set<std::string> symbols;
  for (const Value *input : model.graph->inputs()) {
    if (!input->type().isTensor() || !input->type().shape().rankKnown()) continue;
    for (const Dim &dim : input->type().shape().dims())
      if (dim.isSymbolic()) symbols.insert(dim.symbol);
  }
  for (const auto &[name, range] : ranges) {
    if (symbols.count(name)) continue;
    std::string known;
    for (const std::string &symbol : symbols) known += (known.empty() ? "" : ", ") + symbol;
    return makeFileError(ErrorCode::InvalidArgument, model.sourcePath, "--dim {}={}: no input has a dim named '{}' (its symbolic dims: {})",
                         name, range.str(), name, known.empty() ? "none" : known);
  }
  return Status::success();
}

}  // namespace

DynamicCpuExecutable::DynamicCpuExecutable(Model model, const CpuCompileOptions &options, DimRanges ranges)
    : model_(std::move(model)),
      options_(options),
      ranges_(std::move(ranges)),
      pool_(std::make_unique<ThreadPool>(options.threads)),
      constants_(std::make_unique<PackedConstants>()) {}

DynamicCpuExecutable::~DynamicCpuExecutable() = default;

Expected<std::unique_ptr<DynamicCpuExecutable>> DynamicCpuExecutable::compile(Model model, const CpuCompileOptions &options,
                                                                             DimRanges ranges) {
  TESSEL_RETURN_IF_ERROR(checkRangesNameDims(model, ranges));
  // Where the folds cannot handle a symbolic dim, each shape's plan runs them on the graph as imported.
  Model optimized = cloneModel(model);
  if (foldSizeIndependent(optimized, options.optLevel).ok()) model = std::move(optimized);
  model.graph->nameNodesUniquely();
  return std::unique_ptr<DynamicCpuExecutable>(new DynamicCpuExecutable(std::move(model), options, std::move(ranges)));
}

Expected<std::unique_ptr<DynamicCpuExecutable>> DynamicCpuExecutable::load(CpuArtifact artifact, const std::string &path,
                                                                          const CpuCompileOptions &options) {
  if (!artifact.dynamic) {
    return makeFileError(ErrorCode::InvalidArgument, path, "the artifact was compiled for fixed input shapes");
  }
  CpuCompileOptions loaded = options;
  loaded.optLevel = artifact.optLevel;
  loaded.products = artifact.products;
  loaded.castEverywhere = artifact.castEverywhere;
  auto executable = std::unique_ptr<DynamicCpuExecutable>(
      new DynamicCpuExecutable(std::move(artifact.model), loaded, std::move(artifact.ranges)));
  executable->constants_->useLoaded(std::move(artifact.packed), std::move(artifact.file), /*grows=*/true);
  return executable;
}

Expected<CpuExecutable *> DynamicCpuExecutable::planFor(const NamedValues &feeds) {
  TESSEL_ASSIGN_OR_RETURN(InputSizes sizes, checkFeedShapes(model_, feeds, ranges_));
  const std::string key = shapeKey(sizes);
  if (auto it = plans_.find(key); it != plans_.end()) {
    ++hits_;
    return last_ = it->second.get();
  }
  const auto start = std::chrono::steady_clock::now();
  auto plan = [&](int optLevel) -> Expected<std::unique_ptr<CpuExecutable>> {
    Model copy = cloneModel(model_);
    TESSEL_RETURN_IF_ERROR(specializeInputs(copy, sizes, 0));
    CpuCompileOptions options = options_;
    options.optLevel = optLevel;
    return planStaticModel(std::move(copy), options, pool_.get(), constants_.get());
  };
  auto planned = plan(options_.optLevel);
  // As for a static compile through a session: a model whose nodes the passes' stricter shape
  // inference rejects still runs unoptimized, each op's own checks reporting any real defect.
  if (!planned.ok() && options_.optLevel > 0 && planned.diag().message.starts_with("pass '")) planned = plan(0);
  if (!planned.ok()) return withLocation(planned.status(), SourceLoc::inFile(model_.sourcePath)).diag();
  lastPlanMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (profiling_) (*planned)->setProfiling(true);
  CpuExecutable *raw = planned->get();
  plans_[key] = std::move(*planned);
  return last_ = raw;
}

Expected<NamedValues> DynamicCpuExecutable::run(const NamedValues &feeds) {
  TESSEL_ASSIGN_OR_RETURN(CpuExecutable * plan, planFor(feeds));
  return plan->run(feeds);
}

Status DynamicCpuExecutable::save(const std::string &path) const {
  return writeCpuArtifact(path, model_, *constants_, options_, &ranges_);
}

size_t DynamicCpuExecutable::packedBytes() const { return constants_->totalBytes(); }

void DynamicCpuExecutable::setProfiling(bool on) {
  profiling_ = on;
  for (auto &[key, plan] : plans_) plan->setProfiling(on);
}

}  // namespace tessel::cpu
