// The pass registry and the pass manager. Passes are listed once, in passes.def; the table feeds
// `tessel opt --passes=...` and its --help. A PassManager runs a list of passes in order and, by
// default, verifies the model after each, so a pass that breaks an IR invariant is caught at once
// and named.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// A pass: transforms `model` in place and returns whether it changed anything.
using PassFn = Expected<bool> (*)(Model &model);

struct PassInfo {
  std::string_view name;         // UpperCamelCase, as in passes.def.
  std::string_view cliName;      // kebab-case, as `--passes` takes it.
  std::string_view description;  // One line for --help.
  PassFn run;
};

/// Every registered pass, in passes.def order.
const std::vector<PassInfo> &allPasses();
/// The pass whose cliName is `cliName`, or nullptr.
const PassInfo *findPass(std::string_view cliName);

struct PassManagerOptions {
  /// Run the verifier after every pass; a failure is reported as an internal error naming the pass.
  bool verifyEach = true;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(options) {}

  /// Appends the pass named `cliName`; InvalidArgument, listing the known names, when there is none.
  Status addPass(std::string_view cliName);
  /// Appends each pass of a comma-separated list, e.g. "infer-shapes,eliminate-dead-code".
  Status addPipeline(std::string_view pipeline);
  const std::vector<const PassInfo *> &passes() const { return passes_; }

  /// Runs the passes in order; stops at the first error. Returns whether any pass changed the model.
  Expected<bool> run(Model &model) const;

 private:
  PassManagerOptions options_;
  std::vector<const PassInfo *> passes_;
};

}  // namespace tessel
