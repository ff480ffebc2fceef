// How one dma_copy splits over the DMA engines of a core (accelerator-model.md sections 5.5, 9.4).
// The copy's rows (the SBUF side's partitions; for HBM <-> HBM the destination's outermost dim) are
// dealt to the engines in blocks of dmaPartitionsPerEngine() rows, as costDmaCopyNs() assumes. Each
// engine's share is one transfer: a list of contiguous chunks (descriptors). A chunk breaks wherever
// either side's address jumps, so the chunks follow from both access patterns: each side is a
// sequence of contiguous runs of a fixed length in elements, and a chunk ends at a multiple of either
// run length (SBUF runs never cross a partition). An engine's busy time is
// transferFixedNs + sum over its chunks of dmaChunkNs(bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc {

/// One engine's part of a dma_copy.
struct DmaEngineShare {
  int engine = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;     // Bytes the engine streams (the wider of the two dtypes per element).
  uint64_t chunks = 0;
  double busyNs = 0;      // At the engine's full rate, without the trigger latency.
};

/// A dma_copy split over the engines.
struct DmaTransferPlan {
  std::vector<DmaEngineShare> shares;  // Engines with work, ascending.
  bool touchesHbm = false;             // Counts against the core's HBM bandwidth (section 9.4 limiter).
  uint64_t bytes = 0;                  // Bytes written to the destination.
  uint64_t chunks = 0;
  uint64_t hbmReadBytes = 0, hbmWriteBytes = 0;
};

/// Splits dma_copy instruction `index` over `profile`'s DMA engines. Errors: a side in PSUM, or dst
/// and src with different element counts (the verifier reports both first).
Expected<DmaTransferPlan> planDmaTransfer(const Instruction &insn, size_t index, const MachineProfile &profile);

/// The length, in elements, of the contiguous runs `ap` enumerates: its normalized innermost dim
/// when that has unit stride, else 1. Runs never span partitions.
int64_t contiguousRunElements(const AccessPattern &ap);

}  // namespace tessel::nc
