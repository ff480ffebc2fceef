// The targets by name. Each target registers a factory; sessions, the command-line tool and the
// public API find targets here and use them through targets/target.h alone.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "targets/target.h"

namespace tessel {

struct TargetEntry {
  std::string name;                                   // E.g. "cpu"; for a pattern, what it matches (".json").
  std::function<bool(const std::string &)> accepts;   // Whether a requested name is this entry's.
  std::function<Expected<std::unique_ptr<Target>>(const std::string &)> make;
  bool pattern = false;                               // Names a family (profile paths), not one target.
};

/// Adds a target (the built-in ones are there from the start).
void registerTarget(TargetEntry entry);

/// The targets by name: "ref", "cpu", "nc-v2", "nc-v3", and any registered since (findTarget also
/// takes the path of a machine profile, .json).
std::vector<std::string> targetNames();

/// The target `name` names; made once and shared. Fails, listing the targets, on an unknown name.
Expected<std::shared_ptr<const Target>> findTarget(const std::string &name);

/// The target whose artifact `path` is, with the artifact loaded; fails when no target owns it.
Expected<std::pair<std::shared_ptr<const Target>, std::unique_ptr<CompiledModel>>> loadArtifact(
    const std::string &path, const TargetOptions &options);

/// Whether `path` is an artifact some target wrote.
bool isArtifact(const std::string &path);

}  // namespace tessel
