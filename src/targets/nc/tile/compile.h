// Compiles a recorded kernel (Tile IR) into an accelerator program: SBUF/PSUM allocation by liveness
// (bank rules, alignment; a new tile takes the block freed the longest ago, which multi-buffers loops),
// dependences on the bytes each op touches, engine choice where the kernel left it open, a list
// scheduler across the engines and DMA queues driven by the cost functions of machine/cost.h (the
// same ones the timing simulator uses), and semaphore insertion for every cross-engine dependence.
// The allocation and the schedule print as text for tests and for people.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

/// Where an HBM argument lives in the program's HBM image.
struct HbmPlacement {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t offsetBytes = 0;
  bool isOutput = false;
  bool isScratch = false;       // Holds spilled tiles; neither input nor output.
};

/// Where a tile was placed.
struct TilePlacement {
  int32_t tile = -1;
  MemSpace space = MemSpace::SBUF;
  uint64_t offsetBytes = 0;     // Same in every partition.
  uint64_t bytesPerPartition = 0;
  int64_t firstOp = 0, lastOp = 0;  // Live range in op indices (of the kernel as written).
};

/// One spill the compiler inserted (spill.h). Op numbers are the kernel's, as written.
struct Spill {
  int32_t tile = -1;            // The tile whose value is saved.
  int32_t reloadTile = -1;      // The new tile it comes back into; the ops from reloadBeforeOp on use it.
  MemSpace from = MemSpace::SBUF;
  MemSpace to = MemSpace::HBM;  // HBM (from SBUF: a scratch tensor) or SBUF (from PSUM: a tile).
  int32_t holder = -1;          // The scratch HBM tensor or the SBUF tile that holds the value meanwhile
                                // (reloaded: the HBM tensor it was loaded from).
  std::string holderName, reloadName;
  bool reloaded = false;        // An unchanged copy of HBM data nothing writes: not saved, loaded again.
  int64_t saveAfterOp = -1, reloadBeforeOp = -1, pressureOp = -1;  // saveAfterOp -1 when reloaded.
  uint64_t bytesPerPartition = 0;
};

struct CompileOptions {
  int dmaQueues = 0;            // DMA queues to spread loads/stores over; 0 = all the profile has.
  bool prefetchGates = true;    // Far-future loads wait for their prefetch point (prefetch.h).
};

/// When the list scheduler expects one program instruction to run.
struct InstructionTiming {
  int32_t op = -1;              // The Tile IR op it came from (a spill's: the op it saves after or restores before).
  double startNs = 0;           // Issue (DMA: trigger).
  double endNs = 0;             // Engine free again (DMA: last byte moved).
};

struct CompiledKernel {
  std::string name;
  std::vector<Instruction> program;
  std::vector<HbmPlacement> hbmTensors;  // Inputs and outputs, in declaration order.
  uint64_t hbmBytes = 0;
  std::vector<TilePlacement> tiles;
  std::vector<std::vector<int32_t>> tilePredecessors;  // Per tile: the tiles whose bytes it reuses.
  std::string allocationPolicy;                        // How the offsets were chosen (allocate.h).
  std::vector<Spill> spills;                           // Values moved out while live data did not fit.
  uint64_t peakSbufBytesPerPartition = 0, peakPsumBytesPerPartition = 0;
  double estimatedNs = 0;       // The list scheduler's estimate.
  std::vector<InstructionTiming> timing;  // Parallel to `program`.
};

/// Compiles `kernel` for `profile`. Tiles that do not fit SBUF/PSUM spill (spill.h). Errors: an op whose
/// operands alone do not fit (saying by how much), ops the target cannot run (naming the op).
Expected<CompiledKernel> compileKernel(const Kernel &kernel, const MachineProfile &profile,
                                       const CompileOptions &options = {});

/// The allocation: the policy and the peaks, then one line per tile (id, name, space, offset, bytes per
/// partition, live range, and the tiles whose bytes it reuses), then one line per spill.
std::string printAllocation(const Kernel &kernel, const CompiledKernel &compiled);
/// The schedule: per engine/queue, its instructions in order with estimated start times.
std::string printSchedule(const CompiledKernel &compiled);

}  // namespace tessel::nc::tile
