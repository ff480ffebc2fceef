// The probe's model is a clone (ir/clone.h) with the extra outputs appended, so the model it was made
// from is never changed and its own outputs keep their positions.
#include "quantize/value_probe.h"

#include <algorithm>

#include "ir/clone.h"

namespace tessel {

Expected<ValueProbe> ValueProbe::create(const Model &model, const std::vector<std::string> &names,
                                        const std::string &target) {
  Model copy = cloneModel(model);
  Graph &graph = *copy.graph;
  for (const std::string &name : names) {
    Value *value = graph.findValue(name);
    if (!value) return makeFileError(ErrorCode::Internal, model.sourcePath, "the model has no value named '{}'", name);
    // Inputs come back from the feeds, and constants are not probed.
    if (!value->producer()) continue;
    if (std::find(graph.outputs().begin(), graph.outputs().end(), value) == graph.outputs().end()) graph.addOutput(value);
  }
  ValueProbe probe;
  // -O0: the probed values are to be the graph's own, computed as written; the passes that would
  // rewrite them (folding, fusion) are blocked by the extra outputs anyway.
  SessionOptions options;
  options.optLevel = 0;
  TESSEL_ASSIGN_OR_RETURN(probe.session_, Session::create(std::move(copy), target, options));
  return probe;
}

Expected<std::map<std::string, Tensor>> ValueProbe::run(const NamedValues &feeds) {
  TESSEL_ASSIGN_OR_RETURN(NamedValues outputs, session_->run(feeds));
  std::map<std::string, Tensor> values;
  const NamedValues &produced = outputs;
  for (const NamedValues *named : {&feeds, &produced})
    for (const auto &[name, value] : *named)
      if (value.isTensor()) values[name] = value.tensor();
  return values;
}

}  // namespace tessel
