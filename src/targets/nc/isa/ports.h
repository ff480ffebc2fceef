// Shared SBUF/PSUM ports (accelerator-model.md sections 4.4 and 9.3), the one statement of the rules
// that both the scheduler (tile/schedule.cpp) and the timing simulator apply. The profile lists pairs of
// engines that cannot use a resource at the same time, e.g. nc-v2 ["dve", "pool", "sbuf"] and
// ["dve", "act", "psum"], nc-v3 ["dve_perf_mode", "pool", "sbuf_bus"] and
// ["dve", "act", "same_psum_bank"]. An instruction holds the ports it uses for its busy time
// [start, start + II); an instruction of the other engine that needs a conflicting port waits until
// then. Each engine runs one instruction at a time, so the only possible holder on another engine is
// the one it started last.
#pragma once

#include <cstdint>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {

/// What one instruction uses of the shared ports.
struct PortUse {
  Engine engine = Engine::DVE;
  bool dvePerfMode = false;  // A DVE instruction running in an nc-v3 performance mode.
  bool sbuf = false;         // Touches SBUF.
  bool psum = false;         // Touches PSUM.
  uint64_t psumBanks = 0;    // Bit b: touches PSUM bank b (bank = offset / (bytesPerPartition / banks)).
};

/// Who a port rule names: an engine, or DVE in a performance mode.
enum class PortRole : uint8_t { PE, DVE, DvePerfMode, ACT, POOL, SP };

/// The resource a port rule serialises on.
enum class PortResource : uint8_t { Sbuf, Psum, SbufBus, SamePsumBank };

/// One profile port_conflicts entry.
struct PortRule {
  PortRole first = PortRole::DVE, second = PortRole::POOL;
  PortResource resource = PortResource::Sbuf;
};

/// Parses profile.portConflicts. Roles: pe, dve, dve_perf_mode, act, pool, sp; resources: sbuf, psum,
/// sbuf_bus, same_psum_bank. An unknown name is an InvalidArgument error naming the profile and entry.
Expected<std::vector<PortRule>> parsePortRules(const MachineProfile &profile);

/// The port use of `insn` when it runs on `engine` (`dvePerfMode` from its cost). The scheduler asks
/// before it has placed the instruction; the simulator passes insn.engine.
PortUse portUseOf(const Instruction &insn, Engine engine, bool dvePerfMode, const MachineProfile &profile);

/// Whether the profile lists roles `a` and `b` (either order) as serialising on `resource`, by the
/// profile's names (e.g. "dve", "pool", "sbuf"): how a kernel plan asks which engines compete.
bool hasPortConflict(const MachineProfile &profile, const std::string &a, const std::string &b,
                     const std::string &resource);

/// True when an instruction using `a` and one using `b` (on different engines) cannot overlap.
bool portsConflict(const std::vector<PortRule> &rules, const PortUse &a, const PortUse &b);

}  // namespace tessel::nc
