// Summary metrics of a Timeline (accelerator-model.md section 8) and their text and JSON forms.
#include "targets/nc/profile/summary.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "targets/nc/profile/tracks.h"

namespace tessel::nc {
namespace {

constexpr double kNsPerUs = 1e3;
constexpr double kNsPerSec = 1e9;
constexpr double kPercent = 100;

/// part / whole in percent, 0 when whole is not positive.
double percentOf(double part, double whole) { return whole > 0 ? kPercent * part / whole : 0; }

/// The instruction counts: over the program when there is one, else over the events' indices.
std::vector<std::pair<std::string, size_t>> countInstructions(const Timeline &timeline,
                                                              std::span<const Instruction> program) {
  std::map<std::string, size_t> counts;
  if (!program.empty()) {
    for (const Instruction &insn : program) ++counts[std::string(mnemonic(insn.opcode))];
  } else {
    // PE halves carry "LoadStationary"/"Matmul" as their name; the instruction is one nc_matmul.
    std::map<size_t, std::string> nameOf;
    for (const TimelineEvent &event : timeline.events) {
      bool peHalf = event.name == "LoadStationary" || event.name == "Matmul";
      std::string name = peHalf ? std::string(mnemonic(Opcode::NcMatmul)) : event.name;
      auto [it, inserted] = nameOf.emplace(event.instruction, name);
      if (!inserted && !peHalf) it->second = name;
    }
    for (const auto &[index, name] : nameOf) ++counts[name];
  }
  return {counts.begin(), counts.end()};
}

void addStall(StallNsByReason &into, const TimelineEvent &event) {
  into[static_cast<size_t>(event.stall)] += stallNsOf(event);
}

}  // namespace

ProfileSummary summarize(const Timeline &timeline, std::span<const Instruction> program) {
  ProfileSummary summary;
  summary.profileName = timeline.profileName;
  summary.totalNs = timeline.totalNs;
  for (const TimelineEvent &event : timeline.events) summary.totalNs = std::max(summary.totalNs, event.completeNs);
  summary.totalUs = summary.totalNs / kNsPerUs;
  summary.events = timeline.events.size();

  std::vector<std::string> tracks = orderedTracks(timeline);
  std::vector<std::vector<size_t>> byTrack = eventsByTrack(timeline, tracks);
  std::map<std::string, std::vector<std::pair<double, double>>> engineIntervals;
  std::map<std::string, EngineSummary> engines;
  for (size_t t = 0; t < tracks.size(); ++t) {
    TrackSummary row;
    row.track = tracks[t];
    row.engine = engineOfTrack(tracks[t]);
    EngineSummary &engine = engines[row.engine];
    std::vector<std::pair<double, double>> &intervals = engineIntervals[row.engine];
    std::vector<std::pair<double, double>> trackIntervals;
    for (size_t index : byTrack[t]) {
      const TimelineEvent &event = timeline.events[index];
      trackIntervals.emplace_back(event.startNs, event.endNs);
      intervals.emplace_back(event.startNs, event.endNs);
      addStall(row.stallNs, event);
      addStall(engine.stallNs, event);
      addStall(summary.stallNs, event);
    }
    row.events = byTrack[t].size();
    engine.events += row.events;
    row.busyNs = unionLengthNs(std::move(trackIntervals));
    row.activePercent = percentOf(row.busyNs, summary.totalNs);
    summary.tracks.push_back(std::move(row));
  }

  // Engines: the fixed ones in display order, then any engine only an unknown track names.
  std::vector<std::string> engineOrder(std::begin(kProfileEngines), std::end(kProfileEngines));
  for (const auto &[name, engine] : engines)
    if (std::find(engineOrder.begin(), engineOrder.end(), name) == engineOrder.end()) engineOrder.push_back(name);
  for (const std::string &name : engineOrder) {
    EngineSummary engine = engines[name];
    engine.engine = name;
    engine.busyNs = unionLengthNs(std::move(engineIntervals[name]));
    engine.activePercent = percentOf(engine.busyNs, summary.totalNs);
    if (engine.busyNs > 0 && engine.activePercent > summary.boundingActivePercent) {
      summary.boundingEngine = name;
      summary.boundingActivePercent = engine.activePercent;
    }
    if (name == "DMA") summary.dmaActivePercent = engine.activePercent;
    summary.engines.push_back(std::move(engine));
  }

  for (size_t t = 0; t < tracks.size(); ++t) {
    bool dmaTrack = summary.tracks[t].engine == "DMA";
    for (size_t index : byTrack[t]) {
      const TimelineEvent &event = timeline.events[index];
      summary.matmulFlops += event.matmulFlops;
      summary.peFlops += event.peFlops;
      summary.hbmReadBytes += event.hbmReadBytes;
      summary.hbmWriteBytes += event.hbmWriteBytes;
      summary.dmaBytes += event.dmaBytes;
      summary.dmaChunks += event.dmaChunks;
      if (dmaTrack) ++summary.dmaTransfers;
    }
  }
  summary.pePeakFlopsPerSec = timeline.pePeakFlopsPerSec;
  summary.hbmPeakBytesPerNs = timeline.hbmPeakBytesPerNs;
  double peakFlopsInRun = timeline.pePeakFlopsPerSec * summary.totalNs / kNsPerSec;
  summary.mfuPercent = percentOf(summary.matmulFlops, peakFlopsInRun);
  summary.hfuPercent = percentOf(summary.peFlops, peakFlopsInRun);
  summary.transposeFlopsPercent = percentOf(summary.peFlops - summary.matmulFlops, summary.peFlops);
  double hbmBytes = static_cast<double>(summary.hbmReadBytes + summary.hbmWriteBytes);
  summary.mbuPercent = percentOf(hbmBytes, timeline.hbmPeakBytesPerNs * summary.totalNs);
  summary.arithmeticIntensity = hbmBytes > 0 ? summary.matmulFlops / hbmBytes : 0;
  double peakBytesPerSec = timeline.hbmPeakBytesPerNs * kNsPerSec;
  summary.ridgeIntensity = peakBytesPerSec > 0 ? timeline.pePeakFlopsPerSec / peakBytesPerSec : 0;
  if (summary.dmaTransfers > 0)
    summary.averageDmaBytes = static_cast<double>(summary.dmaBytes) / static_cast<double>(summary.dmaTransfers);
  if (summary.dmaChunks > 0)
    summary.averageChunkBytes = static_cast<double>(summary.dmaBytes) / static_cast<double>(summary.dmaChunks);
  summary.instructionCounts = countInstructions(timeline, program);
  return summary;
}

namespace {

/// Columns padded to their widest cell: the first left-aligned, the others right-aligned.
std::string alignedTable(const TableRows &rows, const std::string &indent) {
  std::vector<size_t> widths;
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string text;
  for (const auto &row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c == 0) line += fmt::format("{:<{}}", row[c], widths[c]);
      else line += fmt::format("  {:>{}}", row[c], widths[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + '\n';
  }
  return text;
}

std::string percent(double value) { return fmt::format("{:.2f} %", value); }
std::string micros(double ns) { return fmt::format("{:.3f}", ns / kNsPerUs); }

/// Header of the engine and track tables; the stall columns leave out StallReason::None.
TableRows::value_type activityHeader(const std::string &first) {
  TableRows::value_type header = {first, "active", "busy us", "events"};
  for (int r = 1; r < kNumStallReasons; ++r)
    header.push_back(fmt::format("stall {} us", stallReasonLabel(static_cast<StallReason>(r))));
  return header;
}

template <class Row>
TableRows::value_type activityRow(const std::string &name, const Row &row) {
  TableRows::value_type cells = {name, percent(row.activePercent), micros(row.busyNs), std::to_string(row.events)};
  for (int r = 1; r < kNumStallReasons; ++r) cells.push_back(micros(row.stallNs[r]));
  return cells;
}

std::string boundingText(const ProfileSummary &s) {
  if (s.boundingEngine.empty()) return "none";
  return fmt::format("{} ({})", s.boundingEngine, percent(s.boundingActivePercent));
}

std::string averageDmaText(const ProfileSummary &s) {
  bool small = s.dmaTransfers > 0 && s.averageDmaBytes < kTargetAverageDmaBytes;
  return fmt::format("{:.1f} B{}", s.averageDmaBytes,
                     small ? fmt::format(" (below the {:.0f} B target)", kTargetAverageDmaBytes) : "");
}

}  // namespace

SummaryTables summaryTables(const ProfileSummary &s) {
  SummaryTables tables;
  tables.metrics = {
      {"metric", "value"},
      {"total time", fmt::format("{:.3f} us", s.totalUs)},
      {"bounding engine", boundingText(s)},
      {"MFU", percent(s.mfuPercent)},
      {"HFU", percent(s.hfuPercent)},
      {"MBU", percent(s.mbuPercent)},
      {"transpose FLOPs share", percent(s.transposeFlopsPercent)},
      {"matmul FLOPs", fmt::format("{:.4g}", s.matmulFlops)},
      {"PE FLOPs", fmt::format("{:.4g}", s.peFlops)},
      {"PE peak", fmt::format("{:.4g} FLOP/s", s.pePeakFlopsPerSec)},
      {"arithmetic intensity", fmt::format("{:.1f} FLOP/B (ridge {:.1f})", s.arithmeticIntensity, s.ridgeIntensity)},
      {"HBM read", fmt::format("{} B", s.hbmReadBytes)},
      {"HBM write", fmt::format("{} B", s.hbmWriteBytes)},
      {"DMA active", percent(s.dmaActivePercent)},
      {"DMA transfers", std::to_string(s.dmaTransfers)},
      {"DMA bytes", fmt::format("{} B", s.dmaBytes)},
      {"average DMA size", averageDmaText(s)},
      {"average chunk size", fmt::format("{:.1f} B", s.averageChunkBytes)},
  };
  tables.engines = {activityHeader("engine")};
  for (const EngineSummary &engine : s.engines) tables.engines.push_back(activityRow(engine.engine, engine));
  tables.tracks = {activityHeader("track")};
  for (const TrackSummary &track : s.tracks) tables.tracks.push_back(activityRow(track.track, track));
  tables.instructions = {{"instruction", "count"}};
  for (const auto &[name, count] : s.instructionCounts) tables.instructions.push_back({name, std::to_string(count)});
  return tables;
}

std::string formatSummary(const ProfileSummary &s) {
  SummaryTables tables = summaryTables(s);
  std::string text = fmt::format("Profile {}: total {:.3f} us ({:.1f} ns), {} events\n\n",
                                 s.profileName.empty() ? "(unnamed)" : s.profileName, s.totalUs, s.totalNs, s.events);
  text += alignedTable(tables.metrics, "");
  text += "\nEngines\n" + alignedTable(tables.engines, "  ");
  text += "\nTracks\n" + alignedTable(tables.tracks, "  ");
  text += "\nInstructions\n" + alignedTable(tables.instructions, "  ");
  return text;
}

namespace {

nlohmann::json stallsToJson(const StallNsByReason &stallNs) {
  nlohmann::json stalls = nlohmann::json::object();
  for (int r = 0; r < kNumStallReasons; ++r)
    stalls[std::string(stallReasonLabel(static_cast<StallReason>(r)))] = stallNs[r];
  return stalls;
}

}  // namespace

nlohmann::json summaryToJson(const ProfileSummary &s) {
  nlohmann::json json;
  json["profile_name"] = s.profileName;
  json["total_ns"] = s.totalNs;
  json["total_us"] = s.totalUs;
  json["events"] = s.events;
  json["matmul_flops"] = s.matmulFlops;
  json["pe_flops"] = s.peFlops;
  json["pe_peak_flops_per_sec"] = s.pePeakFlopsPerSec;
  json["mfu_percent"] = s.mfuPercent;
  json["hfu_percent"] = s.hfuPercent;
  json["transpose_flops_percent"] = s.transposeFlopsPercent;
  json["hbm_read_bytes"] = s.hbmReadBytes;
  json["hbm_write_bytes"] = s.hbmWriteBytes;
  json["hbm_peak_bytes_per_ns"] = s.hbmPeakBytesPerNs;
  json["mbu_percent"] = s.mbuPercent;
  json["arithmetic_intensity"] = s.arithmeticIntensity;
  json["ridge_intensity"] = s.ridgeIntensity;
  json["dma_transfers"] = s.dmaTransfers;
  json["dma_bytes"] = s.dmaBytes;
  json["dma_chunks"] = s.dmaChunks;
  json["average_dma_bytes"] = s.averageDmaBytes;
  json["average_chunk_bytes"] = s.averageChunkBytes;
  json["target_average_dma_bytes"] = kTargetAverageDmaBytes;
  json["dma_active_percent"] = s.dmaActivePercent;
  json["stall_ns"] = stallsToJson(s.stallNs);
  json["bounding_engine"] = s.boundingEngine;
  json["bounding_active_percent"] = s.boundingActivePercent;
  nlohmann::json engines = nlohmann::json::array();
  for (const EngineSummary &engine : s.engines)
    engines.push_back({{"engine", engine.engine}, {"events", engine.events}, {"busy_ns", engine.busyNs},
                       {"active_percent", engine.activePercent}, {"stall_ns", stallsToJson(engine.stallNs)}});
  json["engines"] = std::move(engines);
  nlohmann::json tracks = nlohmann::json::array();
  for (const TrackSummary &track : s.tracks)
    tracks.push_back({{"track", track.track}, {"engine", track.engine}, {"events", track.events},
                      {"busy_ns", track.busyNs}, {"active_percent", track.activePercent},
                      {"stall_ns", stallsToJson(track.stallNs)}});
  json["tracks"] = std::move(tracks);
  nlohmann::json counts = nlohmann::json::object();
  for (const auto &[name, count] : s.instructionCounts) counts[name] = count;
  json["instruction_counts"] = std::move(counts);
  return json;
}

}  // namespace tessel::nc
