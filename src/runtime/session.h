// A loaded model bound to a target: the entry point `tessel run` and the conformance runner use.
// "ref" runs the reference interpreter; "cpu" compiles the model for the host (at the session's
// optimization level) the first time it sees a set of input shapes, and reuses that plan for
// later runs with the same shapes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/cpu/executable.h"
#include "targets/ref/interpreter.h"

namespace tessel {

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

 private:
  Session(Model model, std::string target, SessionOptions options)
      : model_(std::move(model)), target_(std::move(target)), options_(options) {}
  Expected<cpu::CpuExecutable *> cpuPlanFor(const NamedValues &feeds);

  Model model_;
  std::string target_;
  SessionOptions options_;
  std::map<std::string, std::unique_ptr<cpu::CpuExecutable>> cpuPlans_;  // By input shapes.
};

}  // namespace tessel
