// Writes the Perfetto/Chrome JSON trace of a Timeline: metadata, one complete event per timeline
// event, and the counter tracks. Streamed as text (json_text.h) so large timelines stay cheap.
#include "targets/nc/profile/trace.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "targets/nc/isa/disassembler.h"
#include "targets/nc/profile/json_text.h"
#include "targets/nc/profile/tracks.h"

namespace tessel::nc {
namespace {

constexpr double kNsPerUs = 1e3;
constexpr double kPsPerNs = 1e3;
constexpr double kPsPerUs = 1e6;
constexpr int kUsDecimals = 6;   // Microseconds to the picosecond.
constexpr int kNsDecimals = 3;
constexpr int kValueDecimals = 3;
constexpr double kPercent = 100;
constexpr int kPid = 0;

std::string micros(double ns) { return decimalText(ns / kNsPerUs, kUsDecimals); }

/// Collects the trace events as JSON object texts, joined at the end.
class TraceWriter {
 public:
  void add(std::string object) { events_.push_back(std::move(object)); }

  void metadata(std::string_view name, int tid, std::string_view key, const std::string &valueJson) {
    add(fmt::format(R"({{"name":{},"ph":"M","pid":{},"tid":{},"args":{{{}:{}}}}})", jsonQuote(name), kPid, tid,
                    jsonQuote(key), valueJson));
  }

  void counter(std::string_view name, double ns, double value) {
    add(fmt::format(R"({{"name":{},"ph":"C","pid":{},"ts":{},"args":{{"value":{}}}}})", jsonQuote(name), kPid,
                    micros(ns), decimalText(value, kValueDecimals)));
  }

  std::string finish(const std::string &profileName) const {
    std::string text = "{\"traceEvents\":[\n";
    for (size_t i = 0; i < events_.size(); ++i) {
      text += events_[i];
      text += i + 1 < events_.size() ? ",\n" : "\n";
    }
    text += fmt::format("],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"profile\":{}}}}}\n", jsonQuote(profileName));
    return text;
  }

 private:
  std::vector<std::string> events_;
};

/// The args object of one event.
std::string eventArgs(const TimelineEvent &event, std::span<const Instruction> program) {
  std::string args = fmt::format(R"("instruction":{})", event.instruction);
  if (!event.origin.empty()) args += fmt::format(R"(,"node":{})", jsonQuote(event.origin));
  if (event.instruction < program.size()) {
    const Instruction &insn = program[event.instruction];
    args += fmt::format(R"(,"insn":{})", jsonQuote(formatInstruction(insn)));
    std::string operands;
    const std::vector<OperandSlot> &slots = operandSlots(insn.opcode);
    for (size_t i = 0; i < slots.size() && i < insn.operands.size(); ++i) {
      if (!insn.operands[i]) continue;
      if (!operands.empty()) operands += ',';
      operands += jsonQuote(slots[i].name) + ':' + jsonQuote(formatAccessPattern(*insn.operands[i]));
    }
    args += ",\"operands\":{" + operands + "}";
  }
  if (event.waitedOn) args += fmt::format(R"(,"wait":{})", jsonQuote(waitLabel(*event.waitedOn)));
  args += fmt::format(R"(,"stall":{},"stall_ns":{},"ready_ns":{},"complete_ns":{})",
                      jsonQuote(stallReasonLabel(event.stall)), decimalText(stallNsOf(event), kNsDecimals),
                      decimalText(event.readyNs, kNsDecimals), decimalText(event.completeNs, kNsDecimals));
  if (event.matmulFlops > 0) args += fmt::format(R"(,"matmul_flops":{})", decimalText(event.matmulFlops, 0));
  if (event.peFlops > 0) args += fmt::format(R"(,"pe_flops":{})", decimalText(event.peFlops, 0));
  if (event.dmaBytes > 0 || event.dmaChunks > 0)
    args += fmt::format(R"(,"dma_bytes":{},"dma_chunks":{},"hbm_read_bytes":{},"hbm_write_bytes":{})", event.dmaBytes,
                        event.dmaChunks, event.hbmReadBytes, event.hbmWriteBytes);
  return "{" + args + "}";
}

/// Adds `amount` spread uniformly over [start, end) to the bins of width binNs; a zero-length
/// interval puts it all in its bin.
void spreadOverBins(std::vector<double> &bins, double binNs, double start, double end, double amount) {
  if (bins.empty()) return;
  auto binOf = [&](double ns) {
    return std::clamp(static_cast<long>(std::floor(ns / binNs)), 0L, static_cast<long>(bins.size()) - 1);
  };
  if (end <= start) {
    bins[binOf(start)] += amount;
    return;
  }
  double perNs = amount / (end - start);
  for (long b = binOf(start); b <= binOf(end); ++b) {
    double overlap = std::min(end, (b + 1) * binNs) - std::max(start, b * binNs);
    if (overlap > 0) bins[b] += overlap * perNs;
  }
}

/// Emits a binned counter, one sample per bin where the value changes, and a closing sample.
void binnedCounter(TraceWriter &writer, std::string_view name, const std::vector<double> &values, double binNs) {
  std::string previous;
  for (size_t b = 0; b < values.size(); ++b) {
    std::string text = decimalText(values[b], kValueDecimals);
    if (text == previous) continue;
    writer.counter(name, b * binNs, values[b]);
    previous = text;
  }
  if (!values.empty()) writer.counter(name, values.size() * binNs, 0);
}

void addCounters(TraceWriter &writer, const Timeline &timeline, double totalNs) {
  std::vector<size_t> matmul, dma;
  for (size_t i = 0; i < timeline.events.size(); ++i) {
    const TimelineEvent &event = timeline.events[i];
    if (event.track == kComputeTracks[1]) matmul.push_back(i);
    if (engineOfTrack(event.track) == "DMA") dma.push_back(i);
  }
  if (totalNs > 0) {
    double binNs = totalNs / kTraceCounterBins;
    std::vector<double> peBusy(kTraceCounterBins, 0), dmaBytes(kTraceCounterBins, 0);
    // PE utilization: the busy fraction of the MultiplyMoving row, overlaps merged first.
    std::vector<std::pair<double, double>> intervals;
    for (size_t i : matmul) intervals.emplace_back(timeline.events[i].startNs, timeline.events[i].endNs);
    std::sort(intervals.begin(), intervals.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto &interval : intervals) {
      if (!merged.empty() && interval.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, interval.second);
      else
        merged.push_back(interval);
    }
    for (const auto &[start, end] : merged)
      if (end > start) spreadOverBins(peBusy, binNs, start, end, (end - start) * kPercent / binNs);
    binnedCounter(writer, "PE utilization %", peBusy, binNs);
    // DMA throughput: each transfer's bytes spread over its busy interval; bytes per ns = GB/s.
    for (size_t i : dma) {
      const TimelineEvent &event = timeline.events[i];
      spreadOverBins(dmaBytes, binNs, event.startNs, event.endNs, static_cast<double>(event.dmaBytes) / binNs);
    }
    binnedCounter(writer, "DMA throughput GB/s", dmaBytes, binNs);
  }
  // Pending DMA transfers: from when the queue could take one to when its data is visible.
  std::map<double, long> deltas;
  for (size_t i : dma) {
    ++deltas[timeline.events[i].readyNs];
    --deltas[std::max(timeline.events[i].completeNs, timeline.events[i].readyNs)];
  }
  long pending = 0;
  if (!deltas.empty() && deltas.begin()->first > 0) writer.counter("pending DMAs", 0, 0);
  for (const auto &[ns, delta] : deltas) {
    pending += delta;
    writer.counter("pending DMAs", ns, static_cast<double>(pending));
  }
}

}  // namespace

std::string formatTrace(const Timeline &timeline, std::span<const Instruction> program) {
  TraceWriter writer;
  double totalNs = timeline.totalNs;
  for (const TimelineEvent &event : timeline.events) totalNs = std::max(totalNs, event.completeNs);
  std::string processName = timeline.profileName.empty() ? "core" : fmt::format("core ({})", timeline.profileName);
  writer.metadata("process_name", 0, "name", jsonQuote(processName));

  std::vector<std::string> tracks = orderedTracks(timeline);
  std::vector<std::vector<size_t>> byTrack = eventsByTrack(timeline, tracks);
  int nextTid = 1;
  for (size_t t = 0; t < tracks.size(); ++t) {
    LaneAssignment lanes = assignLanes(timeline, byTrack[t]);
    std::vector<int> tidOfLane;
    for (int lane = 0; lane < lanes.lanes; ++lane) {
      int tid = nextTid++;
      tidOfLane.push_back(tid);
      std::string name = lane == 0 ? tracks[t] : fmt::format("{} [{}]", tracks[t], lane + 1);
      writer.metadata("thread_name", tid, "name", jsonQuote(name));
      writer.metadata("thread_sort_index", tid, "sort_index", std::to_string(tid));
    }
    std::string engine = engineOfTrack(tracks[t]);
    for (size_t k = 0; k < byTrack[t].size(); ++k) {
      const TimelineEvent &event = timeline.events[byTrack[t][k]];
      // ts and dur in whole picoseconds first, so that back-to-back slices stay back to back.
      int64_t startPs = static_cast<int64_t>(std::llround(event.startNs * kPsPerNs));
      int64_t endPs = std::max(startPs, static_cast<int64_t>(std::llround(event.endNs * kPsPerNs)));
      std::string ts = decimalText(static_cast<double>(startPs) / kPsPerUs, kUsDecimals);
      std::string dur = decimalText(static_cast<double>(endPs - startPs) / kPsPerUs, kUsDecimals);
      writer.add(fmt::format(R"({{"name":{},"cat":{},"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
                             jsonQuote(event.name), jsonQuote(engine), kPid, tidOfLane[lanes.laneOfEvent[k]], ts, dur,
                             eventArgs(event, program)));
    }
  }
  addCounters(writer, timeline, totalNs);
  return writer.finish(timeline.profileName);
}

}  // namespace tessel::nc
