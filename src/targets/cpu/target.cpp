#include "targets/cpu/target.h"

#include <chrono>
#include <map>

#include "targets/cpu/executable.h"

namespace tessel::cpu {

namespace {

std::string megabytes(size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

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

  std::string report() const override {
    const CpuPlanSummary &summary = plan_->summary();
    std::map<std::string, int> kernels;
    for (const StepProfile &step : plan_->profile()) ++kernels[step.opType + " -> " + step.kernel];
    std::string text = fmt::format("steps: {} ({} on reference kernels)\n", summary.steps, summary.fallbackSteps);
    text += fmt::format("activation arena: {} ({} without reuse)\n", megabytes(summary.arenaBytes),
                        megabytes(summary.unplannedBytes));
    text += fmt::format("constants: {}\n", megabytes(summary.constantBytes));
    text += "kernels:\n";
    for (const auto &[kernel, count] : kernels) text += fmt::format("  {:4d}  {}\n", count, kernel);
    if (!summary.fallbacks.empty()) {
      text += "fallbacks:\n";
      for (const std::string &fallback : summary.fallbacks) text += fmt::format("  {}\n", fallback);
    }
    return text;
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

class CpuTarget final : public Target {
 public:
  CpuTarget() : Target("cpu") {}
  Expected<std::unique_ptr<CompiledModel>> compile(Model model, const TargetOptions &options) const override {
    TESSEL_ASSIGN_OR_RETURN(auto plan, compileCpu(std::move(model), {options.optLevel, options.threads}));
    return std::unique_ptr<CompiledModel>(new CpuModel(std::move(plan)));
  }
  bool ownsArtifact(const std::string &path) const override { return isCpuArtifact(path); }
  Expected<std::unique_ptr<CompiledModel>> loadArtifact(const std::string &path,
                                                        const TargetOptions &options) const override {
    TESSEL_ASSIGN_OR_RETURN(auto plan, loadCpuArtifact(path, {options.optLevel, options.threads}));
    return std::unique_ptr<CompiledModel>(new CpuModel(std::move(plan)));
  }
};

}  // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<CpuTarget>(); }

}  // namespace tessel::cpu
