// Running a model to read some of its intermediate values: a copy of the model returns them as extra
// graph outputs. Calibration reads the fp32 model's values this way, and the error report reads the
// same values from the fp32 and the quantized model.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"

namespace tessel {

class ValueProbe {
 public:
  /// Binds a copy of `model` that also returns the main-graph values `names` to `target`. Fails
  /// on an unknown target, or a name the main graph does not define.
  static Expected<ValueProbe> create(const Model &model, const std::vector<std::string> &names,
                                     const std::string &target);

  /// Runs the model on `feeds`; returns every value of `names` (graph inputs from the feeds) and
  /// every graph output, by name.
  Expected<std::map<std::string, Tensor>> run(const NamedValues &feeds);

 private:
  std::unique_ptr<Session> session_;
};

}  // namespace tessel
