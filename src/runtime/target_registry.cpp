#include "runtime/target_registry.h"

#include <map>
#include <mutex>

#include "targets/cpu/target.h"
#include "targets/nc/compiler/target.h"
#include "targets/ref/target.h"

namespace tessel {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<TargetEntry> entries;
  std::map<std::string, std::shared_ptr<const Target>> made;  // By requested name.
};

Expected<std::unique_ptr<Target>> wrap(std::unique_ptr<Target> target) { return target; }

Registry &registry() {
  static Registry *r = [] {
    auto *r = new Registry;
    auto exactly = [](std::string name) { return [name](const std::string &n) { return n == name; }; };
    r->entries.push_back({"ref", exactly("ref"), [](const std::string &) { return wrap(ref::makeTarget()); }, false});
    r->entries.push_back({"cpu", exactly("cpu"), [](const std::string &) { return wrap(cpu::makeTarget()); }, false});
    for (const std::string &profile : {std::string("nc-v2"), std::string("nc-v3")})
      r->entries.push_back({profile, exactly(profile), nc::compiler::makeTarget, false});
    r->entries.push_back(
        {".json", [](const std::string &n) { return n.ends_with(".json"); }, nc::compiler::makeTarget, true});
    return r;
  }();
  return *r;
}

}  // namespace

void registerTarget(TargetEntry entry) {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  r.entries.insert(r.entries.end() - 1, std::move(entry));  // Before the profile-path pattern.
}

std::vector<std::string> targetNames() {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const TargetEntry &e : r.entries)
    if (!e.pattern) names.push_back(e.name);
  return names;
}

Expected<std::shared_ptr<const Target>> findTarget(const std::string &name) {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  if (auto it = r.made.find(name); it != r.made.end()) return it->second;
  for (const TargetEntry &e : r.entries) {
    if (!e.accepts(name)) continue;
    TESSEL_ASSIGN_OR_RETURN(std::unique_ptr<Target> target, e.make(name));
    std::shared_ptr<const Target> shared = std::move(target);
    r.made[name] = shared;
    return shared;
  }
  std::vector<std::string> names;
  for (const TargetEntry &e : r.entries) names.push_back(e.pattern ? "a profile " + e.name : e.name);
  return makeError(ErrorCode::InvalidArgument, "unknown target '{}'; available: {}", name, fmt::join(names, ", "));
}

Expected<std::pair<std::shared_ptr<const Target>, std::unique_ptr<CompiledModel>>> loadArtifact(
    const std::string &path, const TargetOptions &options) {
  for (const std::string &name : targetNames()) {
    TESSEL_ASSIGN_OR_RETURN(std::shared_ptr<const Target> target, findTarget(name));
    if (!target->ownsArtifact(path)) continue;
    TESSEL_ASSIGN_OR_RETURN(std::unique_ptr<CompiledModel> compiled, target->loadArtifact(path, options));
    return std::make_pair(std::move(target), std::move(compiled));
  }
  return makeFileError(ErrorCode::ParseError, path, "not an artifact of any target ({})", fmt::join(targetNames(), ", "));
}

bool isArtifact(const std::string &path) {
  for (const std::string &name : targetNames()) {
    auto target = findTarget(name);
    if (target.ok() && (*target)->ownsArtifact(path)) return true;
  }
  return false;
}

}  // namespace tessel
