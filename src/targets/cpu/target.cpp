#include "targets/cpu/target.h"

#include <chrono>
#include <map>
#include <set>

#include "targets/cpu/dynamic_executable.h"
#include "targets/cpu/executable.h"
#include "targets/cpu/kernels/fma_peak.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/plan.h"
#include "targets/ref/cast_check.h"

namespace tessel::cpu {

namespace {

std::string megabytes(size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

std::string planReport(const CpuExecutable &plan);

/// With auto-cast, the plan's outputs against the reference with the same casts (both operands
/// of every product the plan put on bf16), and how far the casts move them from f32.
Expected<OutputCheck> checkCastOutputs(CpuExecutable &plan, const NamedValues &feeds, const NamedValues &outputs) {
  const CpuPlanSummary &summary = plan.summary();
  if (summary.products == GemmOperands::F32) return OutputCheck{};
  const std::set<std::string> cast(summary.bf16Nodes.begin(), summary.bf16Nodes.end());
  const Model &model = plan.model();
  ref::CastCheck check;
  check.target = "cpu";
  check.casting = !cast.empty();
  for (const auto &node : model.graph->nodes()) {
    if (cast.count(node->name()) && node->opType() == "Gemm" && node->attrFloat("alpha", 1.0f) != 1.0f) {
      check.exact = false;  // The packed weights are alpha * B, rounded.
      check.unmodelled = fmt::format("Gemm '{}' rounds alpha * B", node->name());
    }
  }
  check.loose = {2e-2, 5e-2};  // bf16's 8 bits of mantissa over chains of K-long dot products.
  auto rounded = [&](size_t, const Node &node) {
    return cast.count(node.name()) ? std::vector<size_t>{0, 1} : std::vector<size_t>{};
  };
  TESSEL_ASSIGN_OR_RETURN(ref::RoundingReference reference, ref::roundingReference(model, rounded, DType::BFloat16));
  check.castModel = reference.model ? &*reference.model : nullptr;
  return ref::checkAgainstReference(model, check, feeds, outputs);
}

class CpuModel final : public CompiledModel {
 public:
  explicit CpuModel(std::unique_ptr<CpuExecutable> plan) : plan_(std::move(plan)) {}
  const Model &model() const override { return plan_->model(); }
  Expected<NamedValues> run(const NamedValues &feeds) override {
    const auto start = std::chrono::steady_clock::now();
    auto outputs = plan_->run(feeds);
    figures_.latencyUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return outputs;
  }
  RunFigures lastRun() const override { return figures_; }
  Status save(const std::string &path) const override { return plan_->save(path); }

  std::string report() const override { return planReport(*plan_); }

  Expected<OutputCheck> checkOutputs(const NamedValues &feeds, const NamedValues &outputs) const override {
    return checkCastOutputs(*plan_, feeds, outputs);
  }

  PlanStats planStats() const override {
    const CpuPlanSummary &s = plan_->summary();
    return {s.steps, s.fallbackSteps, s.fallbacks, s.arenaBytes, s.constantBytes, plan_->pool().size()};
  }

  void setProfiling(bool on) override { plan_->setProfiling(on); }
  std::vector<OpTime> opProfile() const override {
    std::vector<OpTime> rows;
    for (const StepProfile &s : plan_->profile()) rows.push_back({s.node, s.opType, s.kernel, s.outputType, s.totalMs, s.runs});
    return rows;
  }

 private:
  std::unique_ptr<CpuExecutable> plan_;
  RunFigures figures_;
};

std::string planReport(const CpuExecutable &plan) {
  const CpuPlanSummary &summary = plan.summary();
  std::map<std::string, int> kernels;
  for (const StepProfile &step : plan.profile()) ++kernels[step.opType + " -> " + step.kernel];
  std::string text = fmt::format("steps: {} ({} on reference kernels)\n", summary.steps, summary.fallbackSteps);
  text += fmt::format("activation arena: {} ({} without reuse)\n", megabytes(summary.arenaBytes),
                      megabytes(summary.unplannedBytes));
  text += fmt::format("constants: {}\n", megabytes(summary.constantBytes));
  if (summary.promotedHalf) text += "precision: the model's fp16/bf16 values compute in float32 (promote-half)\n";
  if (summary.products == GemmOperands::Bf16) {
    if (selectedGemmKernel(GemmOperands::Bf16) == nullptr) {
      text += "precision: auto-cast bf16 asked for, but this host has no bf16 GEMM (AVX2 at least): every product is "
              "float32\n";
    } else {
      text += fmt::format(
          "precision: auto-cast bf16: {} of {} matmul/conv steps take bf16 operands (sums and everything else "
          "float32)\n",
          summary.bf16Nodes.size(), summary.castableSteps);
      if (!summary.castEverywhere) {
        const GemmKernel &bf16 = *selectedGemmKernel(GemmOperands::Bf16);
        const std::string why =
            bf16ThroughputRatio() == 0.0
                ? fmt::format("this host has no bf16 dot product ({} widens the pairs to float32 FMAs)", bf16.name)
                : fmt::format("this host's bf16 dot product runs at {:.2f}x its fp32 FMA rate (measured)",
                              bf16ThroughputRatio());
        text += fmt::format("  {}, so only products of at most {} rows, bound by their weights, take bf16\n", why,
                            bf16.mr);
      }
    }
  }
  text += "kernels:\n";
  for (const auto &[kernel, count] : kernels) text += fmt::format("  {:4d}  {}\n", count, kernel);
  if (!summary.fallbacks.empty()) {
    text += "fallbacks:\n";
    for (const std::string &fallback : summary.fallbacks) text += fmt::format("  {}\n", fallback);
  }
  return text;
}

std::string inputShapes(const Graph &graph) {
  std::string text;
  for (const Value *input : graph.inputs()) {
    if (!input->hasInitializer()) text += fmt::format("{}{}: {}", text.empty() ? "" : ", ", input->name(), input->type().str());
  }
  return text;
}

/// A model with symbolic dims: one plan per input shape, made on first use.
class DynamicCpuModel final : public CompiledModel {
 public:
  explicit DynamicCpuModel(std::unique_ptr<DynamicCpuExecutable> plans) : plans_(std::move(plans)) {}
  const Model &model() const override { return plans_->model(); }
  Expected<NamedValues> run(const NamedValues &feeds) override {
    const auto start = std::chrono::steady_clock::now();
    auto outputs = plans_->run(feeds);
    figures_.latencyUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return outputs;
  }
  RunFigures lastRun() const override { return figures_; }
  Status save(const std::string &path) const override { return plans_->save(path); }

  std::string report() const override {
    std::string text = fmt::format("inputs: {}\n", inputShapes(*plans_->model().graph));
    std::string ranges;
    for (const auto &[name, range] : plans_->ranges()) ranges += fmt::format(" {}={}", name, range.str());
    text += fmt::format("symbolic dims: a plan per input shape, made on first use{}\n",
                        ranges.empty() ? " (dims unbounded)" : ";" + ranges);
    text += fmt::format("plans so far: {}; packed weights shared by all: {}\n", plans_->planCount(),
                        megabytes(plans_->packedBytes()));
    if (CpuExecutable *last = plans_->lastPlan()) text += "latest plan:\n" + planReport(*last);
    return text;
  }

  Expected<OutputCheck> checkOutputs(const NamedValues &feeds, const NamedValues &outputs) const override {
    CpuExecutable *last = plans_->lastPlan();
    return last != nullptr ? checkCastOutputs(*last, feeds, outputs) : Expected<OutputCheck>(OutputCheck{});
  }

  PlanStats planStats() const override {
    PlanStats stats;
    if (CpuExecutable *last = plans_->lastPlan()) {
      const CpuPlanSummary &s = last->summary();
      stats = {s.steps, s.fallbackSteps, s.fallbacks, s.arenaBytes, s.constantBytes, 1};
    }
    stats.threads = plans_->pool().size();
    stats.shapePlans = plans_->planCount();
    stats.shapePlanHits = plans_->planHits();
    stats.lastShapePlanMs = plans_->lastPlanMs();
    return stats;
  }

  void setProfiling(bool on) override { plans_->setProfiling(on); }
  std::vector<OpTime> opProfile() const override {
    std::vector<OpTime> rows;
    if (CpuExecutable *last = plans_->lastPlan())
      for (const StepProfile &s : last->profile()) rows.push_back({s.node, s.opType, s.kernel, s.outputType, s.totalMs, s.runs});
    return rows;
  }

 private:
  std::unique_ptr<DynamicCpuExecutable> plans_;
  RunFigures figures_;
};

bool hasSymbolicInputs(const Model &model) {
  for (const Value *input : model.graph->inputs()) {
    const Type &type = input->type();
    if (type.isTensor() && !type.shape().isStatic() && !input->hasInitializer()) return true;
  }
  return false;
}

/// --auto-cast on the cpu: none (or unset), or matmul/all (the same here: the cpu keeps activations
/// in float32 and casts only the operands of matmul and convolution products, to bf16).
Expected<GemmOperands> parseAutoCast(const TargetOptions &options) {
  if (options.autoCast.empty() || options.autoCast == "none") return GemmOperands::F32;
  if (options.autoCast != "matmul" && options.autoCast != "all") {
    return makeError(ErrorCode::InvalidArgument, "auto-cast '{}': expected none, matmul or all", options.autoCast);
  }
  if (options.autoCastType != "bf16") {
    return makeError(ErrorCode::InvalidArgument, "auto-cast type '{}': the cpu target casts to bf16 only",
                     options.autoCastType);
  }
  return GemmOperands::Bf16;
}

class CpuTarget final : public Target {
 public:
  CpuTarget() : Target("cpu") {}
  bool needsStaticShapes() const override { return false; }
  Expected<std::unique_ptr<CompiledModel>> compile(Model model, const TargetOptions &options) const override {
    TESSEL_ASSIGN_OR_RETURN(const GemmOperands products, parseAutoCast(options));
    const bool castEverywhere = products == GemmOperands::F32 || castEverywhereOnThisHost();
    const CpuCompileOptions cpuOptions{options.optLevel, options.threads, products, castEverywhere};
    if (hasSymbolicInputs(model) || !options.dimRanges.empty()) {
      TESSEL_ASSIGN_OR_RETURN(auto plans, DynamicCpuExecutable::compile(std::move(model), cpuOptions, options.dimRanges));
      return std::unique_ptr<CompiledModel>(new DynamicCpuModel(std::move(plans)));
    }
    TESSEL_ASSIGN_OR_RETURN(auto plan, compileCpu(std::move(model), cpuOptions));
    return std::unique_ptr<CompiledModel>(new CpuModel(std::move(plan)));
  }
  bool ownsArtifact(const std::string &path) const override { return isCpuArtifact(path); }
  Expected<std::unique_ptr<CompiledModel>> loadArtifact(const std::string &path,
                                                        const TargetOptions &options) const override {
    const CpuCompileOptions cpuOptions{options.optLevel, options.threads};
    TESSEL_ASSIGN_OR_RETURN(CpuArtifact artifact, readCpuArtifact(path));
    if (artifact.dynamic) {
      TESSEL_ASSIGN_OR_RETURN(auto plans, DynamicCpuExecutable::load(std::move(artifact), path, cpuOptions));
      return std::unique_ptr<CompiledModel>(new DynamicCpuModel(std::move(plans)));
    }
    TESSEL_ASSIGN_OR_RETURN(auto plan, planArtifact(std::move(artifact), path, cpuOptions));
    return std::unique_ptr<CompiledModel>(new CpuModel(std::move(plan)));
  }
};

}  // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<CpuTarget>(); }

}  // namespace tessel::cpu
