// The profile summary of one simulated run: the metrics of accelerator-model.md section 8 derived
// from a Timeline (total time, per-track and per-engine active %, MFU, HFU, MBU, DMA sizes, stall
// time by reason, the bounding engine, instruction counts), printed as an aligned text table or as
// JSON. The simulator produces the Timeline; writeProfile (report.h) writes these next to the trace.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/sim/timeline.h"

namespace tessel::nc {

/// Average DMA transfer size a well-tuned kernel should reach (section 8: "target >= 32768 B").
inline constexpr double kTargetAverageDmaBytes = 32768;

/// Stall time in ns per StallReason, indexed by the enum value.
using StallNsByReason = std::array<double, kNumStallReasons>;

/// One row of the timeline (an engine, a PE half or a DMA queue).
struct TrackSummary {
  std::string track;           // "PE.Matmul", "DVE", "DMA.q3", ...
  std::string engine;          // "PE", "DVE", "DMA", ...
  size_t events = 0;
  double busyNs = 0;           // Union of the events' [start, end) intervals.
  double activePercent = 0;    // busyNs / total time.
  StallNsByReason stallNs{};   // Sum of (start - ready) of its events, by reason.
};

/// One engine: the union of its tracks (both PE halves; all DMA queues).
struct EngineSummary {
  std::string engine;
  size_t events = 0;
  double busyNs = 0;
  double activePercent = 0;
  StallNsByReason stallNs{};
};

/// Everything the summary reports. Percentages are 0..100; they are 0 when the total time or the
/// peak they divide by is 0.
struct ProfileSummary {
  std::string profileName;
  double totalNs = 0;
  double totalUs = 0;
  size_t events = 0;
  std::vector<TrackSummary> tracks;    // Display order (tracks.h); compute tracks always present.
  std::vector<EngineSummary> engines;  // kProfileEngines order.

  double matmulFlops = 0;              // Useful matmul FLOPs (fp8 at 0.5x).
  double peFlops = 0;                  // All PE FLOPs, transposes included.
  double pePeakFlopsPerSec = 0;
  double mfuPercent = 0;               // matmulFlops / (peak * total time).
  double hfuPercent = 0;               // peFlops / (peak * total time).
  double transposeFlopsPercent = 0;    // (peFlops - matmulFlops) / peFlops.

  uint64_t hbmReadBytes = 0;
  uint64_t hbmWriteBytes = 0;
  double hbmPeakBytesPerNs = 0;
  double mbuPercent = 0;               // (read + write) / (hbm peak * total time).
  double arithmeticIntensity = 0;      // matmulFlops per HBM byte (0 without HBM traffic).
  double ridgeIntensity = 0;           // Peak FLOPs per peak HBM byte: above it a kernel can be PE bound.

  size_t dmaTransfers = 0;             // Events on DMA tracks.
  uint64_t dmaBytes = 0;
  uint64_t dmaChunks = 0;
  double averageDmaBytes = 0;          // dmaBytes / dmaTransfers.
  double averageChunkBytes = 0;        // dmaBytes / dmaChunks.
  double dmaActivePercent = 0;         // Union of all DMA queues' busy time / total.

  StallNsByReason stallNs{};           // All engines together.
  std::string boundingEngine;          // Highest active %; empty when nothing ran.
  double boundingActivePercent = 0;

  /// Instructions per mnemonic, sorted by mnemonic. Counted over the program when it is given
  /// (each instruction once), else over the distinct instruction indices of the events.
  std::vector<std::pair<std::string, size_t>> instructionCounts;
};

/// Derives the summary of `timeline`. `program` is the simulated program (for the mnemonics); it
/// may be empty, and events whose index is outside it are still counted by their name.
ProfileSummary summarize(const Timeline &timeline, std::span<const Instruction> program);

/// Rows of cells, the first row the header.
using TableRows = std::vector<std::vector<std::string>>;

/// The summary as tables of formatted cells, shared by the text form and the HTML report.
struct SummaryTables {
  TableRows metrics;       // metric, value.
  TableRows engines;       // engine, active, busy us, events, stall <reason> us...
  TableRows tracks;        // track, then as engines.
  TableRows instructions;  // instruction, count.
};

/// Formats the summary's numbers (percentages to 0.01, times in us to the ns).
SummaryTables summaryTables(const ProfileSummary &summary);

/// The summary as an aligned human-readable table, ending in '\n'.
std::string formatSummary(const ProfileSummary &summary);

/// The summary as JSON; keys are the snake_case field names, stalls keyed by stallReasonLabel.
nlohmann::json summaryToJson(const ProfileSummary &summary);

}  // namespace tessel::nc
