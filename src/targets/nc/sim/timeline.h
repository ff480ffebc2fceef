// The timeline of one simulated run: what the timing simulator records and the profiler reads.
// One event per instruction on the track of the engine that ran it (PE splits into its
// LoadStationary and MultiplyMoving rows), one per DMA transfer on its queue's track, with the
// stall that delayed it, one per collective on track "CC". Times are in ns from the start of the
// run; everything the profiler's summary reports (active %, MFU, HBM bytes, stall cycles by
// reason) is derived from these records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "targets/nc/isa/instruction.h"

namespace tessel::nc {

/// Why an instruction started later than its engine could have taken it.
enum class StallReason : uint8_t {
  None,       // Started as soon as its engine was free.
  Semaphore,  // Waited for a semaphore (the event names which).
  Port,       // Waited for a shared SBUF/PSUM port held by another engine (section 9.3).
  DmaEngine,  // A DMA transfer waited for its engines or the HBM limiter (section 9.4).
  Throttle,   // nc-v3 PE power throttling stretched it (section 9.5).
};
inline constexpr int kNumStallReasons = 5;

/// One busy interval on one track.
struct TimelineEvent {
  size_t instruction = 0;      // Index into the simulated program.
  std::string track;           // "PE.LoadStationary", "PE.Matmul", "DVE", "ACT", "POOL", "DMA.q<N>", "CC".
  std::string name;            // The mnemonic, or "LoadStationary" / "Matmul" for the PE halves.
  double readyNs = 0;          // When the engine could have started it (queue head, engine free).
  double startNs = 0;          // When it started (>= readyNs; the gap is the stall).
  double endNs = 0;            // When its engine was free again (start + initiation interval).
  double completeNs = 0;       // When its results were visible (end + pipeline latency).
  StallReason stall = StallReason::None;
  std::optional<SemaphoreWait> waitedOn;  // The last semaphore wait that held it, if any.
  double matmulFlops = 0;      // Useful matmul FLOPs (fp8 counted at 0.5x, section 8); 0 otherwise.
  double peFlops = 0;          // All PE FLOPs including transposes (for HFU).
  uint64_t hbmReadBytes = 0;   // DMA bytes read from HBM.
  uint64_t hbmWriteBytes = 0;  // DMA bytes written to HBM.
  uint64_t dmaBytes = 0;       // All bytes a DMA moved (any memories).
  uint64_t dmaChunks = 0;      // Contiguous chunks (descriptors) of a DMA.
  uint64_t collectiveBytes = 0;  // all_gather/all_reduce: dst bytes on each core.
  std::string origin;          // The model node it was compiled from (whole-model programs), or empty.
};

/// The whole run.
struct Timeline {
  std::string profileName;              // "nc-v2", "nc-v3" or the user's profile name.
  double totalNs = 0;                   // Completion of the last instruction.
  std::vector<TimelineEvent> events;    // In start order.
  double pePeakFlopsPerSec = 0;         // For MFU/HFU: the bf16 peak of the profile (cost.h).
  double hbmPeakBytesPerNs = 0;         // For MBU: the core's HBM share.
};

}  // namespace tessel::nc
