// The one interface every target implements: compile a model into a CompiledModel, load an
// artifact, run. Targets register by name (runtime/target_registry.h); sessions, the command-line
// tool and the public API reach them only through that registry and this interface.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "ir/specialize.h"
#include "support/diagnostic.h"

namespace tessel {

struct TargetOptions {
  int optLevel = 3;  // The graph pass pipeline.
  int threads = 0;   // cpu: thread pool size (0 = all hardware threads).
  // none, matmul or all; "" is the target's default (accelerators: matmul; cpu: none, and on the cpu
  // matmul and all both mean bf16 matmul/conv operands).
  std::string autoCast = "none";
  std::string autoCastType = "bf16";
  // Accelerators:
  int cores = 1;
  bool timePasses = false;  // Record the time of every pass and compiler stage (compileTimes()).
  // Targets that plan every shape (cpu): the sizes each symbolic dim may take, checked at run time.
  DimRanges dimRanges;
  // Accelerators: the sizes to compile each symbolic dim at, one program set per bucket in one
  // CompiledModel (every other dim must be static).
  std::vector<DimBuckets> buckets;
};

/// The figures of the last run.
struct RunFigures {
  bool simulated = false;
  double latencyUs = 0;   // Measured on this host; for a simulated target, device + transfers + host stages.
  double deviceUs = 0;    // Simulated device time.
  double hostUs = 0;      // Where a simulated target hands stages to the host: their time, measured.
  double transferUs = 0;  // A simulated target's host <-> device transfers, as its link model says.
  double mfuPercent = 0;
  double modelFlops = 0;  // The device stages' matmul, convolution and attention FLOPs.
  std::string device;     // The machine profile, e.g. "nc-v2".
  int cores = 1;
  int programs = 0;       // Device programs (stage x core); 0: every node ran on the host.
  std::string boundingEngine;
  int deviceNodes = 0, hostNodes = 0;
  std::vector<std::string> fallbacks;  // "node (Op): reason" for each node that left the device.
  // A model compiled in buckets: the one the run took ("S=128") and the share of its padded
  // inputs' elements that were padding.
  std::string bucket;
  double paddingWaste = 0;
};

/// Time in one op over the profiled runs.
struct OpTime {
  std::string node, opType, kernel, outputType;
  double totalMs = 0;
  int64_t runs = 0;
};

/// What a plan holds, where the target plans memory on this host.
struct PlanStats {
  int steps = 0, fallbackSteps = 0;    // Steps that run, and those on reference kernels.
  std::vector<std::string> fallbacks;  // "node 'x' (Op): reason" per reference step.
  size_t arenaBytes = 0, constantBytes = 0;
  int threads = 1;                     // The thread pool's size, counting the caller.
  // A model with symbolic dims on a target that plans each shape on first use (cpu):
  int shapePlans = 0;                  // Plans made so far, one per set of input shapes.
  int64_t shapePlanHits = 0;           // Runs that found their shape's plan already made.
  double lastShapePlanMs = 0;          // The time the latest plan took to make.
};

/// How a target's outputs compare with the reference interpreter's.
struct OutputCheck {
  std::string text;  // One line per output, as `tessel run` prints it.
  bool passed = true;
};

/// Values a run leaves on the device for the next one (a decoder's KV cache, written in place):
/// the named inputs are already there and the named outputs stay there, so neither crosses the
/// host link; before the run the device copies `movedBytes` from buffer to buffer (the cache moving
/// into a larger buffer). A target that runs on the host has nothing to move and ignores it.
struct Residency {
  std::vector<std::string> values;
  uint64_t movedBytes = 0;
};

/// A model compiled for one target: at fixed input shapes, or (cpu) for every shape, planning
/// each on first use. run() is not re-entrant.
class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  /// The graph it runs (after the target's passes).
  virtual const Model &model() const = 0;
  virtual Expected<NamedValues> run(const NamedValues &feeds) = 0;
  /// run() with values kept on the device between runs (Residency).
  virtual Expected<NamedValues> runResident(const NamedValues &feeds, const Residency &) { return run(feeds); }
  virtual RunFigures lastRun() const = 0;

  /// Writes the artifact that Target::loadArtifact reads back.
  virtual Status save(const std::string &path) const;
  /// What the compiler decided, as text.
  virtual std::string report() const { return {}; }
  /// What one compiler stage decided, as text (`tessel compile --emit=STAGE`); the stages are the
  /// target's own.
  virtual Expected<std::string> emit(const std::string &stage) const;
  /// The time of every pass and compiler stage, where TargetOptions::timePasses asked for it.
  virtual std::string compileTimes() const { return {}; }

  virtual PlanStats planStats() const { return {}; }
  /// Per-op timing, where the target runs natively.
  virtual void setProfiling(bool on) {}
  virtual std::vector<OpTime> opProfile() const { return {}; }

  /// Where the target simulates: one run's timing alone (no outputs; lastRun() has its figures);
  /// the same as a Perfetto trace per program; or written with the summary and HTML report to
  /// `dir`, returning the summaries and what was written, as text.
  virtual Status runTimingOnly(const NamedValues &feeds, const Residency &residency = {});
  virtual Expected<std::vector<std::string>> traces(const NamedValues &feeds);
  virtual Expected<std::string> writeProfile(const NamedValues &feeds, const std::string &dir);

  /// Where the target's numerics are not the reference's own (casts): its outputs for `feeds`
  /// against the reference with the same casts. Empty text where there is nothing to check.
  virtual Expected<OutputCheck> checkOutputs(const NamedValues &feeds, const NamedValues &outputs) const {
    return OutputCheck{};
  }
};

class Target {
 public:
  virtual ~Target() = default;
  const std::string &name() const { return name_; }
  /// Whether compile() needs every input size known. Targets that do not (ref, cpu) take symbolic
  /// dims and serve every shape from one CompiledModel.
  virtual bool needsStaticShapes() const { return true; }
  /// Whether compile() takes TargetOptions::buckets (the accelerators).
  virtual bool takesBuckets() const { return false; }
  /// Whether values can stay on a device between runs (Residency): a KV cache then need not cross
  /// the host link.
  virtual bool keepsValuesOnDevice() const { return false; }
  virtual Expected<std::unique_ptr<CompiledModel>> compile(Model model, const TargetOptions &options) const = 0;
  /// Whether `path` is an artifact this target wrote.
  virtual bool ownsArtifact(const std::string &path) const { return false; }
  virtual Expected<std::unique_ptr<CompiledModel>> loadArtifact(const std::string &path,
                                                                const TargetOptions &options) const;

 protected:
  explicit Target(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

}  // namespace tessel
