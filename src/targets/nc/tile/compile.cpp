// The kernel compiler pipeline: allocate tiles, spilling where they do not fit (allocate.h, spill.h),
// lay out HBM and build one instruction per op (emit.h), derive dependences on the placed bytes
// (dependences.h), choose engines and queues and order the streams (schedule.h; scheduled again with
// far-future loads waiting for their prefetch point, prefetch.h, kept when that is 1% faster), insert
// semaphores (semaphores.h), and check every instruction against the tile rules (isa/verifier.h),
// naming the op on failure.
#include "targets/nc/tile/compile.h"

#include <algorithm>

#include <fmt/format.h>

#include "targets/nc/isa/tile_rules.h"
#include "targets/nc/isa/verifier.h"
#include "targets/nc/tile/allocate.h"
#include "targets/nc/tile/dependences.h"
#include "targets/nc/tile/dsl.h"
#include "targets/nc/tile/emit.h"
#include "targets/nc/tile/prefetch.h"
#include "targets/nc/tile/schedule.h"
#include "targets/nc/tile/semaphores.h"
#include "targets/nc/tile/spill.h"

namespace tessel::nc::tile {
namespace {

bool isInt32(DType dtype) { return dtype == DType::I32 || dtype == DType::U32; }

/// The engines op `op` may run on: fixed, or those allowed for its opcode that reach its operands
/// and meet the per-engine rules (T7 free sizes, ACT's tensor_scalar ops, exact int32 copies).
uint8_t candidateEngines(const TileOp &op, const Instruction &insn, const IsaLimits &limits) {
  if (op.engine) return engineBit(*op.engine);
  uint8_t engines = 0;
  for (int e = 0; e < kNumEngines; ++e) {
    Engine engine = static_cast<Engine>(e);
    if (!(allowedEngines(op.opcode) & engineBit(engine))) continue;
    bool ok = true;
    for (const auto &ap : insn.operands) {
      if (!ap) continue;
      if (engine == Engine::POOL && !poolAccesses(limits, ap->space)) ok = false;
      if (freeSizeElements(*ap) > maxFreeElements(limits, engine, ap->space)) ok = false;
      if (engine == Engine::ACT && op.opcode == Opcode::TensorCopy && isInt32(ap->dtype)) ok = false;
    }
    if (engine == Engine::ACT && op.opcode == Opcode::TensorScalar && !tensorScalarRunsOnAct(op.op0, op.op1))
      ok = false;
    if (ok) engines |= engineBit(engine);
  }
  return engines;
}

}  // namespace

Expected<CompiledKernel> compileKernel(const Kernel &written, const MachineProfile &profile,
                                       const CompileOptions &options) {
  // From here on `kernel` is the kernel with its spills; `origin` numbers its ops as written.
  TESSEL_ASSIGN_OR_RETURN(SpilledKernel spilled, allocateWithSpills(written, profile));
  const Kernel &kernel = spilled.kernel;
  const Allocation &allocation = spilled.allocation;
  const std::vector<int32_t> &origin = spilled.origin;
  CompiledKernel compiled;
  compiled.name = kernel.name;
  compiled.hbmTensors = layoutHbm(kernel, &compiled.hbmBytes);
  compiled.tiles = allocation.tiles;
  for (TilePlacement &placement : compiled.tiles) {
    if (placement.firstOp < 0) continue;
    placement.firstOp = origin[static_cast<size_t>(placement.firstOp)];
    placement.lastOp = origin[static_cast<size_t>(placement.lastOp)];
  }
  compiled.tilePredecessors = allocation.predecessors;
  compiled.allocationPolicy = std::string(allocationPolicyName(allocation.policy));
  compiled.spills = std::move(spilled.spills);
  compiled.peakSbufBytesPerPartition = allocation.peakSbufBytesPerPartition;
  compiled.peakPsumBytesPerPartition = allocation.peakPsumBytesPerPartition;

  const IsaLimits limits = isaLimitsFor(profile);
  const size_t numOps = kernel.ops.size();
  std::vector<Instruction> insns;
  std::vector<uint8_t> candidates;
  insns.reserve(numOps);
  candidates.reserve(numOps);
  for (size_t i = 0; i < numOps; ++i) {
    insns.push_back(emitOp(kernel.ops[i], allocation, compiled.hbmTensors));
    candidates.push_back(candidateEngines(kernel.ops[i], insns.back(), limits));
    if (candidates.back() == 0)
      return makeError(ErrorCode::InvalidArgument, "kernel '{}': op #{} ({}): no engine can run {} on these operands",
                       kernel.name, origin[i], tileOpKindName(kernel.ops[i].kind), mnemonic(kernel.ops[i].opcode));
  }
  DependenceGraph deps = computeDependences(kernel, insns, allocation);
  int queues = static_cast<int>(profile.dma.queuesPerEngine);
  if (options.dmaQueues > 0) queues = std::min(queues, options.dmaQueues);
  TESSEL_ASSIGN_OR_RETURN(Schedule schedule, scheduleOps(insns, candidates, deps, profile, queues));
  if (const std::vector<PrefetchGate> gates =
          options.prefetchGates ? prefetchGates(insns, schedule, profile, deps) : std::vector<PrefetchGate>{};
      !gates.empty()) {
    DependenceGraph gated = deps;
    for (const PrefetchGate &g : gates) gated.preds[g.load].push_back(Dependence{g.gate, DependenceKind::Prefetch});
    TESSEL_ASSIGN_OR_RETURN(Schedule second, scheduleOps(insns, candidates, gated, profile, queues));
    // The scheduler's DMA model is coarser than the simulator's: a gain under 1% may not be one.
    if (second.makespanNs < 0.99 * schedule.makespanNs) {
      schedule = std::move(second);
      deps = std::move(gated);
    }
  }

  compiled.program.reserve(numOps);
  compiled.timing.reserve(numOps);
  for (int32_t op : schedule.order) {
    const ScheduledOp &placed = schedule.ops[op];
    Instruction insn = std::move(insns[op]);
    insn.engine = placed.engine;
    insn.queue = placed.engine == Engine::DMA ? placed.queue : 0;
    compiled.program.push_back(std::move(insn));
    compiled.timing.push_back(InstructionTiming{origin[static_cast<size_t>(op)], placed.startNs, placed.endNs});
  }
  TESSEL_RETURN_IF_ERROR(insertSemaphores(compiled.program, schedule, deps, profile));
  for (size_t k = 0; k < compiled.program.size(); ++k) {
    std::vector<std::string> errors = verifyInstruction(compiled.program[k], k, limits);
    if (errors.empty()) continue;
    const int32_t op = schedule.order[k];
    return makeError(ErrorCode::InvalidArgument, "kernel '{}': op #{} ({}) on {}: {}", kernel.name, origin[op],
                     tileOpKindName(kernel.ops[op].kind), engineName(compiled.program[k].engine),
                     fmt::join(errors, "; "));
  }
  compiled.estimatedNs = schedule.makespanNs;
  return compiled;
}

}  // namespace tessel::nc::tile
