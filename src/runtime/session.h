// A loaded model bound to a target: the entry point `tessel run` and the conformance runner use.
// Targets plug in here; today the reference interpreter ("ref") is the one target.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/ref/interpreter.h"

namespace tessel {

class Session {
 public:
  /// Names of the targets a session can run on.
  static std::vector<std::string> targets();

  /// Loads an ONNX model for `target`. Fails on an unknown target or a bad model.
  static Expected<std::unique_ptr<Session>> load(const std::string &path, const std::string &target);
  /// Binds an already imported model.
  static Expected<std::unique_ptr<Session>> create(Model model, const std::string &target);

  const Model &model() const { return model_; }
  const std::string &target() const { return target_; }
  /// Runs the model; see ReferenceInterpreter::run for the contract on feeds.
  Expected<NamedValues> run(const NamedValues &feeds) const;

 private:
  Session(Model model, std::string target) : model_(std::move(model)), target_(std::move(target)) {}
  Model model_;
  std::string target_;
};

}  // namespace tessel
