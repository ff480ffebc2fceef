#include "targets/nc/compiler/target.h"

#include <algorithm>
#include <filesystem>

#include "targets/nc/compiler/buckets.h"
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

/// A model compiled for the accelerator: one executable, or one per bucket (buckets.h); each run
/// takes the bucket its feeds fit and reports on that bucket's executable.
class NcModel final : public CompiledModel {
 public:
  explicit NcModel(std::unique_ptr<BucketSet> set) : set_(std::move(set)) { describe(set_->buckets().back()); }

  const Model &model() const override { return set_->model(); }

  Expected<NamedValues> run(const NamedValues &feeds) override { return runResident(feeds, Residency{}); }

  Expected<NamedValues> runResident(const NamedValues &feeds, const Residency &residency) override {
    TESSEL_ASSIGN_OR_RETURN(BucketChoice choice, set_->choose(feeds));
    const NcExecutable &exe = *set_->buckets()[choice.bucket].exe;
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, exe.run(choice.padded, /*timingOnly=*/false, residency));
    recordFigures(choice, result);
    if (set_->bucketed()) lastPadded_ = result.outputs;
    return set_->unpad(choice, std::move(result.outputs));
  }
  RunFigures lastRun() const override { return figures_; }
  Status save(const std::string &path) const override { return set_->save(path); }
  std::string report() const override { return set_->report(); }

  Expected<std::string> emit(const std::string &stage) const override {
    const Bucket &largest = set_->buckets().back();
    TESSEL_ASSIGN_OR_RETURN(std::string text, largest.exe->emit(stage));
    return set_->bucketed() ? fmt::format("# bucket {} (the largest)\n{}", largest.label(), text) : text;
  }

  std::string compileTimes() const override {
    std::string text;
    for (const Bucket &bucket : set_->buckets()) {
      const NcExecutable &exe = *bucket.exe;
      if (exe.passTimes().empty()) continue;
      text += set_->bucketed() ? fmt::format("time per pass, bucket {}:\n", bucket.label()) : "time per pass:\n";
      for (const PassTime &t : exe.passTimes()) text += fmt::format("  {:10.1f} ms  {}\n", t.ms, t.name);
      text += fmt::format("  {:10.1f} ms  total\n", exe.compileSeconds() * 1000.0);
    }
    if (set_->bucketed() && !text.empty())
      text += fmt::format("all {} buckets: {:.1f} ms (compiled in parallel)\n", set_->buckets().size(),
                          set_->compileSeconds() * 1000.0);
    return text;
  }

  Status runTimingOnly(const NamedValues &feeds, const Residency &residency) override {
    return timingRun(feeds, residency).status();
  }

  Expected<std::vector<std::string>> traces(const NamedValues &feeds) override {
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, timingRun(feeds));
    std::vector<std::string> traces;
    for (size_t i = 0; i < result.timelines.size(); ++i)
      traces.push_back(formatTrace(result.timelines[i], current_->programs()[i].program));
    return traces;
  }

  Expected<std::string> writeProfile(const NamedValues &feeds, const std::string &dir) override {
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result, timingRun(feeds));
    if (result.timelines.empty()) return std::string("no device program: every node runs on the host; nothing to profile\n");
    std::string text;
    for (size_t i = 0; i < result.timelines.size(); ++i) {
      const std::string sub =
          result.timelines.size() == 1 ? dir : (std::filesystem::path(dir) / fmt::format("program{}", i)).string();
      TESSEL_RETURN_IF_ERROR(nc::writeProfile(sub, result.timelines[i], current_->programs()[i].program));
      text += formatSummary(summarize(result.timelines[i], current_->programs()[i].program));
      text += fmt::format("wrote {}/{{trace.json, summary.txt, summary.json, report.html}}\n", sub);
    }
    return text;
  }

  /// The device's outputs against the reference with the same casts (tight), and how far the casts
  /// move them from the f32 reference (reported, not checked). In a bucket, that check is made on
  /// the padded feeds and outputs, and the sliced outputs are checked against the f32 reference of
  /// the unpadded feeds too, which shows whether the padding reaches the real positions.
  Expected<OutputCheck> checkOutputs(const NamedValues &feeds, const NamedValues &outputs) const override {
    TESSEL_ASSIGN_OR_RETURN(BucketChoice choice, set_->choose(feeds));
    const NcExecutable &exe = *set_->buckets()[choice.bucket].exe;
    const Model &model = exe.model();
    const LoweringOptions &lowering = exe.options().lowering;
    TESSEL_ASSIGN_OR_RETURN(CastReference casted,
                            castReference(model, [&](size_t i) { return exe.nodeOnDevice(i); }, lowering));
    ref::CastCheck check;
    check.target = exe.profile().name;
    check.casting = lowering.autoCast != AutoCast::None;
    check.castModel = casted.model ? &*casted.model : nullptr;
    check.exact = casted.exact;
    check.unmodelled = casted.unmodelled;
    check.loose = toleranceFor(lowering);
    if (!set_->bucketed()) return ref::checkAgainstReference(model, check, feeds, outputs);
    if (lastPadded_.size() != outputs.size())
      return makeError(ErrorCode::InvalidArgument, "checkOutputs: run the bucketed model on these feeds first");
    check.target = fmt::format("{}, bucket {}", exe.profile().name, set_->buckets()[choice.bucket].label());
    TESSEL_ASSIGN_OR_RETURN(OutputCheck padded, ref::checkAgainstReference(model, check, choice.padded, lastPadded_));
    ref::CastCheck unpadded;
    unpadded.target = fmt::format("{}, outputs sliced back from bucket {}", exe.profile().name,
                                  set_->buckets()[choice.bucket].label());
    unpadded.loose = toleranceFor(lowering);
    TESSEL_ASSIGN_OR_RETURN(OutputCheck sliced, ref::checkAgainstReference(set_->model(), unpadded, feeds, outputs));
    return OutputCheck{padded.text + sliced.text, padded.passed && sliced.passed};
  }

 private:
  /// The figures that do not change from run to run, for the executable `exe` runs.
  void describe(const Bucket &bucket) {
    const NcExecutable &exe = *bucket.exe;
    if (current_ == &exe) return;
    current_ = &exe;
    figures_ = RunFigures{};
    figures_.simulated = true;
    figures_.device = exe.profile().name;
    figures_.cores = exe.cores();
    figures_.programs = static_cast<int>(exe.programs().size());
    figures_.modelFlops = exe.modelFlops();
    for (const Fallback &f : exe.fallbacks()) figures_.fallbacks.push_back(fmt::format("{} ({}): {}", f.node, f.opType, f.reason));
    for (size_t i = 0; i < exe.model().graph->nodes().size(); ++i)
      ++(exe.nodeOnDevice(i) ? figures_.deviceNodes : figures_.hostNodes);
    if (set_->bucketed()) figures_.bucket = bucket.label();
  }

  Expected<NcRunResult> timingRun(const NamedValues &feeds, const Residency &residency = {}) {
    TESSEL_ASSIGN_OR_RETURN(BucketChoice choice, set_->choose(feeds));
    TESSEL_ASSIGN_OR_RETURN(NcRunResult result,
                            set_->buckets()[choice.bucket].exe->run(choice.padded, /*timingOnly=*/true, residency));
    recordFigures(choice, result);
    return result;
  }

  void recordFigures(const BucketChoice &choice, const NcRunResult &result) {
    describe(set_->buckets()[choice.bucket]);
    const NcExecutable &exe = *current_;
    figures_.paddingWaste = choice.paddingWaste;
    figures_.deviceUs = result.deviceNs / 1000.0;
    figures_.hostUs = result.hostNs / 1000.0;
    figures_.transferUs = result.transferNs / 1000.0;
    figures_.latencyUs = figures_.deviceUs + figures_.transferUs + figures_.hostUs;
    double longest = -1;
    for (size_t i = 0; i < result.timelines.size(); ++i) {
      ProfileSummary s = summarize(result.timelines[i], exe.programs()[i].program);
      if (s.totalNs > longest) {
        longest = s.totalNs;
        figures_.boundingEngine = fmt::format("{} ({:.0f}% active)", s.boundingEngine, s.boundingActivePercent);
      }
    }
    figures_.mfuPercent = 0;
    if (figures_.deviceUs > 0 && !result.timelines.empty())
      figures_.mfuPercent = 100.0 * figures_.modelFlops /
                            (result.timelines[0].pePeakFlopsPerSec * exe.cores() * figures_.deviceUs * 1e-6);
  }

  std::unique_ptr<BucketSet> set_;
  const NcExecutable *current_ = nullptr;  // The executable the figures describe.
  RunFigures figures_;
  NamedValues lastPadded_;                 // A bucketed run's outputs before slicing, for checkOutputs.
};

class NcTarget final : public Target {
 public:
  explicit NcTarget(std::string profile) : Target(std::move(profile)) {}
  bool takesBuckets() const override { return true; }
  bool keepsValuesOnDevice() const override { return true; }
  Expected<std::unique_ptr<CompiledModel>> compile(Model model, const TargetOptions &options) const override {
    TESSEL_ASSIGN_OR_RETURN(LoweringOptions lowering, parseCast(options.autoCast, options.autoCastType));
    lowering.cores = options.cores;
    NcCompileOptions nc;
    nc.target = name();
    nc.lowering = lowering;
    nc.optLevel = options.optLevel;
    nc.timePasses = options.timePasses;
    nc.lowering.constantCache = constants_.get();
    std::unique_ptr<BucketSet> set;
    if (options.buckets.empty()) {
      TESSEL_ASSIGN_OR_RETURN(auto exe, compileNc(std::move(model), nc));
      set = std::make_unique<BucketSet>(std::move(exe));
    } else {
      TESSEL_ASSIGN_OR_RETURN(set, BucketSet::compile(std::move(model), nc, options.buckets));
    }
    return std::unique_ptr<CompiledModel>(new NcModel(std::move(set)));
  }
  bool ownsArtifact(const std::string &path) const override { return isNcArtifact(path) || isBucketedNcArtifact(path); }
  Expected<std::unique_ptr<CompiledModel>> loadArtifact(const std::string &path, const TargetOptions &) const override {
    TESSEL_ASSIGN_OR_RETURN(auto set, BucketSet::load(path));
    return std::unique_ptr<CompiledModel>(new NcModel(std::move(set)));
  }

 private:
  // Shared by every compile of this target: a session's shapes (a decoder's prefill and decode) hold
  // one copy of the weights' encoded blocks.
  std::unique_ptr<ConstantCache> constants_ = std::make_unique<ConstantCache>();
};

}  // namespace

Expected<std::unique_ptr<Target>> makeTarget(const std::string &profile) {
  TESSEL_RETURN_IF_ERROR(loadProfile(profile).status());
  return std::unique_ptr<Target>(new NcTarget(profile));
}

}  // namespace tessel::nc::compiler
