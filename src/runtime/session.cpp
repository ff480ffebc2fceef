// Session: import + target binding + run.
#include "runtime/session.h"

#include <algorithm>

#include "frontend/onnx/importer.h"

namespace tessel {

std::vector<std::string> Session::targets() { return {"ref"}; }

Expected<std::unique_ptr<Session>> Session::create(Model model, const std::string &target) {
  auto known = targets();
  if (std::find(known.begin(), known.end(), target) == known.end()) {
    return makeError(ErrorCode::InvalidArgument, "unknown target '{}'; available: ref", target);
  }
  return std::unique_ptr<Session>(new Session(std::move(model), target));
}

Expected<std::unique_ptr<Session>> Session::load(const std::string &path, const std::string &target) {
  TESSEL_ASSIGN_OR_RETURN(Model model, importOnnxFile(path));
  return create(std::move(model), target);
}

Expected<NamedValues> Session::run(const NamedValues &feeds) const {
  ReferenceInterpreter interpreter(model_);
  return interpreter.run(feeds);
}

}  // namespace tessel
