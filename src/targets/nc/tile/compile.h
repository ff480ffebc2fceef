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
};

/// Where a tile was placed.
struct TilePlacement {
  int32_t tile = -1;
  MemSpace space = MemSpace::SBUF;
  uint64_t offsetBytes = 0;     // Same in every partition.
  uint64_t bytesPerPartition = 0;
  int64_t firstOp = 0, lastOp = 0;  // Live range in op indices.
};

struct CompileOptions {
  int dmaQueues = 0;            // DMA queues to spread loads/stores over; 0 = all the profile has.
};

/// When the list scheduler expects one program instruction to run.
struct InstructionTiming {
  int32_t op = -1;              // The Tile IR op it came from.
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
  uint64_t peakSbufBytesPerPartition = 0, peakPsumBytesPerPartition = 0;
  double estimatedNs = 0;       // The list scheduler's estimate.
  std::vector<InstructionTiming> timing;  // Parallel to `program`.
};

/// Compiles `kernel` for `profile`. Errors: tiles that do not fit SBUF/PSUM (saying by how much),
/// ops the target cannot run (naming the op).
Expected<CompiledKernel> compileKernel(const Kernel &kernel, const MachineProfile &profile,
                                       const CompileOptions &options = {});

/// The allocation: the policy and the peaks, then one line per tile (id, name, space, offset, bytes per
/// partition, live range, and the tiles whose bytes it reuses).
std::string printAllocation(const Kernel &kernel, const CompiledKernel &compiled);
/// The schedule: per engine/queue, its instructions in order with estimated start times.
std::string printSchedule(const CompiledKernel &compiled);

}  // namespace tessel::nc::tile
