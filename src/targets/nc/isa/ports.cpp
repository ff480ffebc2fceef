// Port conflict rules; see ports.h.
#include "targets/nc/isa/ports.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "targets/nc/isa/footprint.h"

namespace tessel::nc {
namespace {

std::optional<PortRole> parseRole(std::string_view name) {
  if (name == "pe") return PortRole::PE;
  if (name == "dve") return PortRole::DVE;
  if (name == "dve_perf_mode") return PortRole::DvePerfMode;
  if (name == "act") return PortRole::ACT;
  if (name == "pool") return PortRole::POOL;
  if (name == "sp") return PortRole::SP;
  return std::nullopt;
}

std::optional<PortResource> parseResource(std::string_view name) {
  if (name == "sbuf") return PortResource::Sbuf;
  if (name == "psum") return PortResource::Psum;
  if (name == "sbuf_bus") return PortResource::SbufBus;
  if (name == "same_psum_bank") return PortResource::SamePsumBank;
  return std::nullopt;
}

bool hasRole(PortRole role, const PortUse &use) {
  switch (role) {
    case PortRole::PE: return use.engine == Engine::PE;
    case PortRole::DVE: return use.engine == Engine::DVE;
    case PortRole::DvePerfMode: return use.engine == Engine::DVE && use.dvePerfMode;
    case PortRole::ACT: return use.engine == Engine::ACT;
    case PortRole::POOL: return use.engine == Engine::POOL;
    case PortRole::SP: return use.engine == Engine::SP;
  }
  return false;
}

bool shareResource(PortResource resource, const PortUse &a, const PortUse &b) {
  switch (resource) {
    case PortResource::Sbuf:
    case PortResource::SbufBus: return a.sbuf && b.sbuf;
    case PortResource::Psum: return a.psum && b.psum;
    case PortResource::SamePsumBank: return (a.psumBanks & b.psumBanks) != 0;
  }
  return false;
}

}  // namespace

Expected<std::vector<PortRule>> parsePortRules(const MachineProfile &profile) {
  std::vector<PortRule> rules;
  for (size_t i = 0; i < profile.portConflicts.size(); ++i) {
    const PortConflict &entry = profile.portConflicts[i];
    auto first = parseRole(entry.first), second = parseRole(entry.second);
    auto resource = parseResource(entry.resource);
    if (!first || !second || !resource)
      return makeError(ErrorCode::InvalidArgument,
                       "profile {}: ports.conflicts[{}] = [{}, {}, {}] is not understood; engines are pe, dve, "
                       "dve_perf_mode, act, pool, sp and resources sbuf, psum, sbuf_bus, same_psum_bank",
                       profile.name, i, entry.first, entry.second, entry.resource);
    rules.push_back({*first, *second, *resource});
  }
  return rules;
}

PortUse portUseOf(const Instruction &insn, Engine engine, bool dvePerfMode, const MachineProfile &profile) {
  PortUse use;
  use.engine = engine;
  use.dvePerfMode = dvePerfMode;
  const uint64_t bankBytes =
      profile.psum.banks > 0 ? static_cast<uint64_t>(profile.psum.bytesPerPartition / profile.psum.banks) : 0;
  for (const auto &operand : insn.operands) {
    if (!operand) continue;
    if (operand->space == MemSpace::SBUF) use.sbuf = true;
    if (operand->space != MemSpace::PSUM) continue;
    use.psum = true;
    if (bankBytes == 0) continue;
    for (const ByteRange &range : computeFootprint(*operand).ranges)
      for (uint64_t bank = range.beginBytes / bankBytes; bank * bankBytes < range.endBytes && bank < 64; ++bank)
        use.psumBanks |= uint64_t{1} << bank;
  }
  return use;
}

bool portsConflict(const std::vector<PortRule> &rules, const PortUse &a, const PortUse &b) {
  if (a.engine == b.engine) return false;
  for (const PortRule &rule : rules) {
    bool pair = (hasRole(rule.first, a) && hasRole(rule.second, b)) || (hasRole(rule.first, b) && hasRole(rule.second, a));
    if (pair && shareResource(rule.resource, a, b)) return true;
  }
  return false;
}

bool hasPortConflict(const MachineProfile &profile, const std::string &a, const std::string &b,
                     const std::string &resource) {
  return std::any_of(profile.portConflicts.begin(), profile.portConflicts.end(), [&](const PortConflict &c) {
    return c.resource == resource && ((c.first == a && c.second == b) || (c.first == b && c.second == a));
  });
}

}  // namespace tessel::nc
