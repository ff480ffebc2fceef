// The defaults of the Target and CompiledModel interfaces: what a target that lacks a capability says.
#include "targets/target.h"

namespace tessel {

Status CompiledModel::save(const std::string &path) const {
  return makeFileError(ErrorCode::InvalidArgument, path, "this target writes no artifact; compile for cpu, nc-v2 or nc-v3");
}

Expected<std::string> CompiledModel::emit(const std::string &stage) const {
  return makeError(ErrorCode::InvalidArgument, "--emit={}: this target prints no compiler stages (`tessel opt` prints the graph)",
                   stage);
}

Status CompiledModel::runTimingOnly(const NamedValues &, const Residency &) {
  return makeError(ErrorCode::InvalidArgument, "this target runs natively: a timing-only run is for simulated targets");
}

Expected<std::vector<std::string>> CompiledModel::traces(const NamedValues &) {
  return makeError(ErrorCode::InvalidArgument, "this target runs natively and keeps no timeline; use its op profile");
}

Expected<std::string> CompiledModel::writeProfile(const NamedValues &, const std::string &dir) {
  return makeFileError(ErrorCode::InvalidArgument, dir,
                       "this target runs natively and keeps no timeline to write; use its op profile");
}

Expected<std::unique_ptr<CompiledModel>> Target::loadArtifact(const std::string &path, const TargetOptions &) const {
  return makeFileError(ErrorCode::InvalidArgument, path, "target '{}' reads no artifacts", name());
}

}  // namespace tessel
