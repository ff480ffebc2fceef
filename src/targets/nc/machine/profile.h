// The machine model of the NeuronCore-class accelerator as data. A MachineProfile holds every number
// the compiler, the scheduler and the timing simulator use (sizes, clocks, initiation intervals, DMA
// rates), loaded from a JSON profile: a bundled one by name ("nc-v2", "nc-v3", embedded at build time
// from profiles/*.json) or a user's copy by path. Units are in the member names. The numbers and their
// sources are in docs accelerator-model.md sections 4, 5, 9 and 10.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/diagnostic.h"

namespace tessel::nc {

/// Chip-level figures; the simulator models each core on its own and uses these for chip-wide limits.
struct ChipParams {
  int64_t coresPerChip = 0;
  int64_t hbmBytesPerChip = 0;
  double hbmBytesPerNsPerChip = 0;  // GB/s.
  int64_t dmaEnginesPerChip = 0;
};

/// The state buffer (SBUF), section 4.2.
struct SbufParams {
  int64_t bytesPerPartition = 0;
  int64_t accessOverheadCycles = 0;          // Static start-up per tensor access request.
  int64_t stridedPenaltyAboveStrideBytes = 0;  // Innermost stride above this streams at 1/factor rate.
  int64_t stridedPenaltyFactor = 0;
};

/// The partial-sum buffer (PSUM), section 4.3.
struct PsumParams {
  int64_t bytesPerPartition = 0;
  int64_t banks = 0;
  int64_t bankFp32Elements = 0;
};

/// This core's share of device memory, section 1.
struct HbmParams {
  int64_t bytesPerCore = 0;
  double bytesPerNsPerCore = 0;  // GB/s.
};

/// Peak figures as the document states them; the cost model derives its own (cost.h).
struct StatedPeakTflops {
  double bf16 = 0, fp8 = 0, fp32 = 0;
};

/// The tensor engine (PE), section 5.1.
struct PeParams {
  double clockGHz = 0;
  int64_t rows = 0, cols = 0;
  int64_t mmMinIiCycles = 0;           // Floor of the MultiplyMoving initiation interval.
  int64_t fp32Factor = 0;              // fp32 matmuls take this many times longer.
  int64_t loadStationarySpeedup = 0;   // LoadStationary is this much faster than an MM of equal size.
  std::vector<int64_t> tileSizes;      // Row/column tile sizes the array can be split into.
  bool fp8DoubleRow = false;           // K = 2 x rows for fp8 at bf16 speed.
  bool transposeMode = false;          // Bit-exact transpose mode.
  int64_t transposeFp32Speedup = 0;    // fp32 transpose speedup of the transpose mode (1: none).
  int64_t pipeLatencyCycles = 0;       // Issue to last PSUM write beyond II [A].
  StatedPeakTflops statedPeakTflops;
};

/// nc-v3 DVE performance-mode speedups (all 1 on nc-v2), section 5.2.
struct DvePerfModeSpeedup {
  double copyOrTensorScalarBf16SbufContiguous = 1;
  double copyOrTensorScalarBf16Other = 1;
  double tensorTensorBf16Sbuf = 1;
};

/// The vector engine (DVE), section 5.2.
struct DveParams {
  double clockGHz = 0;
  int64_t lanes = 0;
  int64_t minIiCycles = 0;
  int64_t smallDependencyOverheadCycles = 0;
  int64_t pipeLatencyCycles = 0;  // [A]
  DvePerfModeSpeedup perfModeSpeedup;
};

/// The scalar / activation engine (ACT), section 5.3.
struct ActParams {
  double clockGHz = 0;
  int64_t lanes = 0;
  int64_t minIiCycles = 0;
  int64_t readAccumulatorCycles = 0;
  int64_t pipeLatencyCycles = 0;  // [A]
  bool biasImmediate = false;
  std::vector<std::string> reduceOps;
};

/// The GpSimd engine (POOL), section 5.4.
struct PoolParams {
  double clockGHz = 0;
  int64_t cores = 0, partitionsPerCore = 0, simdBits = 0, tcmBytes = 0;
  int64_t startCycles = 0;
  bool psumAccess = false;
  std::optional<double> integratedDmaBytesPerNs;  // nc-v3 only.
};

/// The sync engine (SP), a sequencer without a data path.
struct SpParams {
  double clockGHz = 0;
};

/// Two engines that cannot use `resource` at the same time, section 9.3.
struct PortConflict {
  std::string first, second, resource;
};

/// Hardware descriptor generation (nc-v3), section 5.5.
struct HwDgeParams {
  int64_t instances = 0;
  double issueNs = 0;  // Busy time on the issuing engine per DMA instruction.
  std::vector<std::string> issuers;
};

/// DMA transpose (nc-v3), section 9.4.
struct DmaTransposeParams {
  double hbmToSbufEfficiency = 0, sbufToSbufEfficiency = 0;
  std::vector<int64_t> dtypeBytes;
};

/// One point of the DMA efficiency curve: a contiguous chunk of `bytes` streams at `efficiency` of
/// the engine's sustained rate.
struct DmaChunkEfficiency {
  int64_t bytes = 0;
  double efficiency = 1;
};

/// The DMA engines of one core, sections 5.5 and 9.4.
struct DmaParams {
  int64_t enginesPerCore = 0, queuesPerEngine = 0;
  double bytesPerNsPerEngine = 0;      // Sustained.
  double peakBytesPerNsPerEngine = 0;  // Theoretical ceiling.
  double triggerNs = 0;                // Trigger instruction to first byte moving.
  double chunkMinNs = 0;               // Least time one contiguous chunk takes [A].
  /// Efficiency by contiguous chunk size, ascending in bytes; interpolated in log2(bytes) and held
  /// constant beyond both ends (dmaChunkEfficiency, cost.h).
  std::vector<DmaChunkEfficiency> chunkEfficiency;
  double transferFixedNs = 0;          // Occupancy per transfer beyond its chunks [A].
  std::optional<double> loadTranspose2dEfficiency;  // nc-v2 [A].
  std::optional<HwDgeParams> hwDge;
  std::optional<DmaTransposeParams> transpose;
};

/// nc-v3 PE power throttling, section 9.5.
struct ThrottleParams {
  double startUtilization = 0, rampUs = 0, windowUs = 0, reengageBelowUtilization = 0;
};

/// Collectives between the cores of one chip (all_gather, all_reduce) as one ring: a collective over
/// N cores of B bytes per core takes latencyNs + B * (N - 1) / N / bytesPerNs. The collective engines
/// are not modeled in detail; both numbers are assumptions [A] to calibrate.
struct CollectiveParams {
  double bytesPerNs = 0;  // GB/s between two cores of the chip.
  double latencyNs = 0;   // Fixed cost per collective.
};

/// The host <-> device link (PCIe): what moving a device stage's inputs and outputs costs.
struct HostLinkParams {
  double bytesPerNs = 0;  // GB/s per direction.
  double latencyNs = 0;   // Fixed cost per transfer.
};

/// Logical NeuronCore configuration (nc-v3), section 1.
struct LncParams {
  int64_t defaultCoresPerLogical = 0, coresPerLogical = 0;
};

/// One accelerator generation, per physical core.
struct MachineProfile {
  std::string name;
  std::string sourceFile;  // The path, or "<bundled nc-v2.json>".
  ChipParams chip;
  int64_t partitions = 0;
  SbufParams sbuf;
  PsumParams psum;
  HbmParams hbm;
  PeParams pe;
  DveParams dve;
  ActParams act;
  PoolParams pool;
  SpParams sp;
  std::vector<PortConflict> portConflicts;
  DmaParams dma;
  int64_t semLatencyCycles = 0;  // In consumer-engine cycles [A].
  CollectiveParams collective;
  HostLinkParams hostLink;
  std::optional<ThrottleParams> throttle;
  std::optional<LncParams> lnc;
};

/// Names of the profiles bundled into the binary, e.g. {"nc-v2", "nc-v3"}.
std::vector<std::string> bundledProfileNames();

/// Loads a profile: `pathOrName` is a bundled name or the path of a JSON file with the same keys.
/// Errors (unknown name, unreadable file, bad JSON, missing key, wrong type, non-positive size or
/// rate) name the file and the key path, e.g. "my.json: pe.clockGHz must be positive; got 0".
Expected<MachineProfile> loadProfile(const std::string &pathOrName);

/// Parses profile JSON text; `file` names it in diagnostics.
Expected<MachineProfile> parseProfile(const std::string &jsonText, const std::string &file);

}  // namespace tessel::nc
