// A loaded model bound to a target: the entry point `tessel run`, the conformance runner and the
// public API use. The target comes from the registry (runtime/target_registry.h). A target that
// needs static shapes (the accelerator) compiles the model the first time it sees a set of input
// shapes and reuses that plan for later runs with the same shapes; "ref" runs the graph as
// imported, and "cpu" compiles once and plans each new shape itself. Accelerator sessions default to fp32 (no auto-cast): the session's numerics are the
// model's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/target.h"

namespace tessel {

struct SessionOptions {
  int optLevel = 3;
  int threads = 0;  // cpu: 0 = all hardware threads.
  TargetOptions target;  // optLevel and threads above override its own.
};

class Session {
 public:
  ~Session();

  /// Loads an ONNX model, or an artifact (whose own target then applies, whatever `target` says).
  /// Fails on an unknown target or a bad model.
  static Expected<std::unique_ptr<Session>> load(const std::string &path, const std::string &target,
                                                 const SessionOptions &options = {});
  /// Binds an already imported model.
  static Expected<std::unique_ptr<Session>> create(Model model, const std::string &target,
                                                   const SessionOptions &options = {});

  /// The imported model (for an artifact, the graph it runs).
  const Model &model() const { return model_; }
  /// The target's name; for an artifact, the name its figures carry (its machine profile).
  const std::string &target() const { return target_; }

  /// Runs the model; see ReferenceInterpreter::run for the contract on feeds. Not re-entrant.
  Expected<NamedValues> run(const NamedValues &feeds);
  /// The same, with values the device keeps between runs (targets/target.h).
  Expected<NamedValues> run(const NamedValues &feeds, const Residency &residency);
  /// On a simulated target, the timing of a run alone (no outputs; lastCompiled()->lastRun()).
  Status runTimingOnly(const NamedValues &feeds, const Residency &residency = {});

  /// The plan for feeds of these sizes, compiled now if there is none yet.
  Expected<CompiledModel *> compiledFor(const std::vector<std::pair<std::string, std::vector<int64_t>>> &sizes);
  /// The plan the last run used (or the artifact's, or the last compiled); null before any.
  CompiledModel *lastCompiled() const { return last_; }
  /// Every CompiledModel made so far (one, for a target that serves every shape from one).
  size_t planCount() const { return plans_.size(); }
  /// Whether one CompiledModel serves every input shape (ref, cpu, an accelerator given buckets, or
  /// an artifact of any of them).
  bool servesEveryShape() const { return !targetImpl_->needsStaticShapes() || !options_.target.buckets.empty(); }

  /// Where the last run's nodes ran, on an accelerator target: nodes in device and host stages,
  /// and the reason of each host fallback.
  struct Placement {
    int deviceNodes = 0, hostNodes = 0;
    std::vector<std::string> fallbacks;
  };
  Placement lastPlacement() const;

 private:
  Session(Model model, std::shared_ptr<const Target> target, SessionOptions options);
  TargetOptions targetOptions() const;

  Model model_;
  std::shared_ptr<const Target> targetImpl_;
  std::string target_;
  SessionOptions options_;
  bool fixedPlan_ = false;  // An artifact: one plan, for its compiled shapes.
  std::map<std::string, std::unique_ptr<CompiledModel>> plans_;  // By input shapes.
  CompiledModel *last_ = nullptr;
};

}  // namespace tessel
