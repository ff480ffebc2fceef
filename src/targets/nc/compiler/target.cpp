#include "targets/nc/compiler/target.h"

#include <algorithm>
#include <filesystem>

#include "targets/nc/compiler/cast_reference.h"
#include "targets/nc/compiler/executable.h"
#include "targets/nc/profile/report.h"
#include "targets/nc/profile/summary.h"
#include "targets/nc/profile/trace.h"
#include "targets/ref/cast_check.h"

namespace tessel::nc::compiler {

namespace {

Expected<LoweringOptions> parseCast(const std::string &autoCast, const std::string &castType) {
  LoweringOptions options;
  if (autoCast == "none") {
    options.autoCast = AutoCast::None;
  } else if (autoCast == "matmul" || autoCast.empty()) {
    options.autoCast = AutoCast::Matmul;
  } else if (autoCast == "all") {
    options.autoCast = AutoCast::All;
  } else {
    return makeError(ErrorCode::InvalidArgument, "auto-cast '{}': expected none, matmul or all", autoCast);
  }
  if (castType == "bf16") {
    options.castType = DType::BF16;
  } else if (castType == "fp16") {
    options.castType = DType::F16;
  } else if (castType == "fp8_e4m3") {
    options.castType = DType::F8E4M3;
  } else {
    return makeError(ErrorCode::InvalidArgument, "auto-cast type '{}': expected bf16, fp16 or fp8_e4m3", castType);
  }
  return options;
}

class NcModel final : public CompiledModel {
 public:
  explicit NcModel(std::unique_ptr<NcExecutable> exe) : exe_(std::move(exe)) {
    figures_.simulated = true;
    figures_.device = exe_->profile().name;
    figures_.cores = exe_->cores();
    figures_.programs = static_cast<int>(exe_->programs().size());
    figures_.modelFlops = exe_->modelFlops();
    for (const Fallback &f : exe_->fallbacks()) figures_.fallbacks.push_back(fmt::format("{} ({}): {}", f.node, f.opType, f.reason));
    for (size_t i = 0; i < exe_->model().graph->nodes().size(); ++i)
      ++(exe_->nodeOnDevice(i) ? figures_.deviceNodes : figures_.hostNodes);
  }

  const Model &model() const override { return exe_->model(); }

  Expected<NamedValues> run(const NamedValues &feeds) override {
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, exe_->run(feeds));
    recordFigures(result);
    return std::move(result.outputs);
  }
  RunFigures lastRun() const override { return figures_; }
  Status save(const std::string &path) const override { return exe_->save(path); }
  std::string report() const override { return exe_->report(); }

  Expected<std::string> emit(const std::string &stage) const override { return exe_->emit(stage); }

  std::string compileTimes() const override {
    if (exe_->passTimes().empty()) return {};
    std::string text = "time per pass:\n";
    for (const PassTime &t : exe_->passTimes()) text += fmt::format("  {:10.1f} ms  {}\n", t.ms, t.name);
    return text + fmt::format("  {:10.1f} ms  total\n", exe_->compileSeconds() * 1000.0);
  }

  Status runTimingOnly(const NamedValues &feeds) override {
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, exe_->run(feeds, /*timingOnly=*/true));
    recordFigures(result);
    return Status::success();
  }

  Expected<std::vector<std::string>> traces(const NamedValues &feeds) override {
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, exe_->run(feeds, /*timingOnly=*/true));
    recordFigures(result);
    std::vector<std::string> traces;
    for (size_t i = 0; i < result.timelines.size(); ++i)
      traces.push_back(formatTrace(result.timelines[i], exe_->programs()[i].program));
    return traces;
  }

  Expected<std::string> writeProfile(const NamedValues &feeds, const std::string &dir) override {
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, exe_->run(feeds, /*timingOnly=*/true));
    recordFigures(result);
    if (result.timelines.empty()) return std::string("no device program: every node runs on the host; nothing to profile\n");
    std::string text;
    for (size_t i = 0; i < result.timelines.size(); ++i) {
      const std::string sub =
          result.timelines.size() == 1 ? dir : (std::filesystem::path(dir) / fmt::format("program{}", i)).string();
      TESSEL_RETURN_IF_ERROR(nc::writeProfile(sub, result.timelines[i], exe_->programs()[i].program));
      text += formatSummary(summarize(result.timelines[i], exe_->programs()[i].program));
      text += fmt::format("wrote {}/{{trace.json, summary.txt, summary.json, report.html}}\n", sub);
    }
    return text;
  }

  /// The device's outputs against the reference with the same casts (tight), and how far the casts
  /// move them from the f32 reference (reported, not checked).
  Expected<OutputCheck> checkOutputs(const NamedValues &feeds, const NamedValues &outputs) const override {
    const Model &model = exe_->model();
    const LoweringOptions &lowering = exe_->options().lowering;
    TESSEL_ASSIGN_OR_RETURN(CastReference casted,
                            castReference(model, [&](size_t i) { return exe_->nodeOnDevice(i); }, lowering));
    ref::CastCheck check;
    check.target = exe_->profile().name;
    check.casting = lowering.autoCast != AutoCast::None;
    check.castModel = casted.model ? &*casted.model : nullptr;
    check.exact = casted.exact;
    check.unmodelled = casted.unmodelled;
    check.loose = toleranceFor(lowering);
    return ref::checkAgainstReference(model, check, feeds, outputs);
  }

 private:
  void recordFigures(const NcRunResult &result) {
    figures_.deviceUs = result.deviceNs / 1000.0;
    figures_.hostUs = result.hostNs / 1000.0;
    figures_.transferUs = result.transferNs / 1000.0;
    figures_.latencyUs = figures_.deviceUs + figures_.transferUs + figures_.hostUs;
    double longest = -1;
    for (size_t i = 0; i < result.timelines.size(); ++i) {
      ProfileSummary s = summarize(result.timelines[i], exe_->programs()[i].program);
      if (s.totalNs > longest) {
        longest = s.totalNs;
        figures_.boundingEngine = fmt::format("{} ({:.0f}% active)", s.boundingEngine, s.boundingActivePercent);
      }
    }
    figures_.mfuPercent = 0;
    if (figures_.deviceUs > 0 && !result.timelines.empty())
      figures_.mfuPercent = 100.0 * figures_.modelFlops /
                            (result.timelines[0].pePeakFlopsPerSec * exe_->cores() * figures_.deviceUs * 1e-6);
  }

  std::unique_ptr<NcExecutable> exe_;
  RunFigures figures_;
};

class NcTarget final : public Target {
 public:
  explicit NcTarget(std::string profile) : Target(std::move(profile)) {}
  Expected<std::unique_ptr<CompiledModel>> compile(Model model, const TargetOptions &options) const override {
    TESSEL_ASSIGN_OR_RETURN(LoweringOptions lowering, parseCast(options.autoCast, options.autoCastType));
    lowering.cores = options.cores;
    NcCompileOptions nc;
    nc.target = name();
    nc.lowering = lowering;
    nc.optLevel = options.optLevel;
    nc.timePasses = options.timePasses;
    TESSEL_ASSIGN_OR_RETURN(auto exe, compileNc(std::move(model), nc));
    return std::unique_ptr<CompiledModel>(new NcModel(std::move(exe)));
  }
  bool ownsArtifact(const std::string &path) const override { return isNcArtifact(path); }
  Expected<std::unique_ptr<CompiledModel>> loadArtifact(const std::string &path, const TargetOptions &) const override {
    TESSEL_ASSIGN_OR_RETURN(auto exe, loadNcArtifact(path));
    return std::unique_ptr<CompiledModel>(new NcModel(std::move(exe)));
  }
};

}  // namespace

Expected<std::unique_ptr<Target>> makeTarget(const std::string &profile) {
  TESSEL_RETURN_IF_ERROR(loadProfile(profile).status());
  return std::unique_ptr<Target>(new NcTarget(profile));
}

}  // namespace tessel::nc::compiler
