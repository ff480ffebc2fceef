// A loaded model bound to a target: the entry point `tessel run` and the conformance runner use.
// "ref" runs the reference interpreter; "cpu" compiles the model for the host (at the session's
// optimization level) the first time it sees a set of input shapes, and reuses that plan for
// later runs with the same shapes; "nc-v2" and "nc-v3" do the same for the accelerator (fp32, no
// auto-cast: the session's numerics are the model's) and run it on the simulator.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/cpu/executable.h"
#include "targets/ref/interpreter.h"

namespace tessel {

namespace nc::compiler {
class NcExecutable;
}

struct SessionOptions {
  int optLevel = 3;  // cpu: the pass pipeline.
  int threads = 0;   // cpu: 0 = all hardware threads.
};

class Session {
 public:
  ~Session();

  /// Names of the targets a session can run on.
  static std::vector<std::string> targets();

  /// Loads an ONNX model (or, for "cpu", a .tsl artifact) for `target`. Fails on an unknown target
  /// or a bad model.
  static Expected<std::unique_ptr<Session>> load(const std::string &path, const std::string &target,
                                                 const SessionOptions &options = {});
  /// Binds an already imported model.
  static Expected<std::unique_ptr<Session>> create(Model model, const std::string &target,
                                                   const SessionOptions &options = {});

  const Model &model() const { return model_; }
  const std::string &target() const { return target_; }
  /// Runs the model; see ReferenceInterpreter::run for the contract on feeds. Not re-entrant.
  Expected<NamedValues> run(const NamedValues &feeds);

  /// Where the last run's nodes ran, on an accelerator target: nodes in device and host stages,
  /// and the reason of each host fallback.
  struct Placement {
    int deviceNodes = 0, hostNodes = 0;
    std::vector<std::string> fallbacks;
  };
  const Placement &lastPlacement() const { return placement_; }

 private:
  Session(Model model, std::string target, SessionOptions options);
  Expected<cpu::CpuExecutable *> cpuPlanFor(const NamedValues &feeds);
  Expected<nc::compiler::NcExecutable *> ncPlanFor(const NamedValues &feeds);
  /// A copy of the model with its inputs fixed to the feeds' sizes, for a plan of those shapes.
  Expected<Model> specializedCopy(const NamedValues &feeds) const;

  Model model_;
  std::string target_;
  SessionOptions options_;
  std::map<std::string, std::unique_ptr<cpu::CpuExecutable>> cpuPlans_;  // By input shapes.
  std::map<std::string, std::unique_ptr<nc::compiler::NcExecutable>> ncPlans_;
  Placement placement_;
};

}  // namespace tessel
