// Builds the HTML report: the summary as HTML tables, the events as a compact JSON blob (merged per
// time bin past the event cap), and the fixed style and script of report_page.cpp; and writes all
// profile outputs into a directory.
#include "targets/nc/profile/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include <fmt/format.h>

#include "targets/nc/profile/json_text.h"
#include "targets/nc/profile/report_page.h"
#include "targets/nc/profile/trace.h"
#include "targets/nc/profile/tracks.h"

namespace tessel::nc {
namespace {

constexpr int kNsDecimals = 3;

/// One box of the report's timeline: a timeline event, or several merged ones.
struct Box {
  int track = 0;
  int lane = 0;
  double startNs = 0;
  double endNs = 0;
  int name = 0;            // Index into the string table.
  int text = -1;           // Instruction text (string index), -1 if none.
  long instruction = -1;   // -1 for merged boxes.
  int stall = 0;           // StallReason value.
  double stallNs = 0;
  int wait = -1;           // "s3>=2" (string index), -1 if none.
};

/// Strings of the page, each stored once.
class StringTable {
 public:
  int intern(const std::string &text) {
    auto [it, inserted] = index_.emplace(text, static_cast<int>(strings_.size()));
    if (inserted) strings_.push_back(text);
    return it->second;
  }
  const std::vector<std::string> &strings() const { return strings_; }

 private:
  std::unordered_map<std::string, int> index_;
  std::vector<std::string> strings_;
};

struct ReportData {
  std::vector<std::string> tracks;
  std::vector<int> lanes;
  std::vector<Box> boxes;  // Sorted by track, lane, start.
  StringTable strings;
  size_t mergedFrom = 0;   // Events merged into fewer boxes (0: none merged).
};

/// Boxes of one lane, merging the events whose starts fall in the same bin when binNs > 0.
void addLane(ReportData &data, const Timeline &timeline, std::span<const Instruction> program,
             const std::vector<size_t> &events, int track, int lane, double binNs,
             std::unordered_map<size_t, int> &textOf) {
  auto single = [&](size_t index) {
    const TimelineEvent &event = timeline.events[index];
    Box box{track, lane, event.startNs, std::max(event.endNs, event.startNs), data.strings.intern(event.name)};
    if (event.instruction < program.size()) {
      auto [it, inserted] = textOf.emplace(event.instruction, -1);
      if (inserted) {
        std::string text = instructionText(program, event.instruction);
        if (!event.origin.empty()) text += "\nnode: " + event.origin;
        it->second = data.strings.intern(text);
      }
      box.text = it->second;
    }
    box.instruction = static_cast<long>(event.instruction);
    box.stall = static_cast<int>(event.stall);
    box.stallNs = stallNsOf(event);
    if (event.waitedOn) box.wait = data.strings.intern(waitLabel(*event.waitedOn));
    return box;
  };
  for (size_t k = 0; k < events.size();) {
    size_t groupEnd = k + 1;
    if (binNs > 0) {
      double bin = std::floor(timeline.events[events[k]].startNs / binNs);
      auto binOf = [&](size_t g) { return std::floor(timeline.events[events[g]].startNs / binNs); };
      while (groupEnd < events.size() && binOf(groupEnd) == bin) ++groupEnd;
    }
    if (groupEnd - k == 1) {
      data.boxes.push_back(single(events[k]));
      k = groupEnd;
      continue;
    }
    Box box{track, lane, timeline.events[events[k]].startNs, 0,
            data.strings.intern(fmt::format("{} events", groupEnd - k))};
    size_t first = SIZE_MAX, last = 0;
    double busyNs = 0;
    for (size_t g = k; g < groupEnd; ++g) {
      const TimelineEvent &event = timeline.events[events[g]];
      box.endNs = std::max(box.endNs, event.endNs);
      busyNs += std::max(0.0, event.endNs - event.startNs);
      box.stallNs += stallNsOf(event);
      first = std::min(first, event.instruction);
      last = std::max(last, event.instruction);
    }
    box.text = data.strings.intern(fmt::format("{} events merged for display: instructions #{}..#{}, busy {:.1f} ns",
                                               groupEnd - k, first, last, busyNs));
    data.mergedFrom += groupEnd - k;
    data.boxes.push_back(box);
    k = groupEnd;
  }
}

ReportData collectBoxes(const Timeline &timeline, std::span<const Instruction> program, double totalNs,
                        const ReportOptions &options) {
  ReportData data;
  data.tracks = orderedTracks(timeline);
  std::vector<std::vector<size_t>> byTrack = eventsByTrack(timeline, data.tracks);
  std::vector<std::vector<std::vector<size_t>>> byLane(data.tracks.size());
  int totalLanes = 0;
  for (size_t t = 0; t < data.tracks.size(); ++t) {
    LaneAssignment lanes = assignLanes(timeline, byTrack[t]);
    data.lanes.push_back(lanes.lanes);
    totalLanes += lanes.lanes;
    byLane[t].resize(lanes.lanes);
    for (size_t k = 0; k < byTrack[t].size(); ++k) byLane[t][lanes.laneOfEvent[k]].push_back(byTrack[t][k]);
  }
  // Past the cap, each lane gets maxEvents / totalLanes bins over the run.
  double binNs = 0;
  size_t maxEvents = std::max<size_t>(options.maxEvents, 1);
  if (timeline.events.size() > maxEvents && totalNs > 0)
    binNs = totalNs * totalLanes / static_cast<double>(maxEvents);
  std::unordered_map<size_t, int> textOf;
  for (size_t t = 0; t < data.tracks.size(); ++t)
    for (size_t lane = 0; lane < byLane[t].size(); ++lane)
      addLane(data, timeline, program, byLane[t][lane], static_cast<int>(t), static_cast<int>(lane), binNs, textOf);
  return data;
}

template <class T, class F>
std::string jsonArray(const std::vector<T> &items, F &&format) {
  std::string text = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ',';
    text += format(items[i]);
  }
  return text + "]";
}

/// The data blob: {"profile", "totalNs", "tracks": [{name, engine, lanes}], "stallReasons",
/// "strings", "note", "events": {track, lane, start, dur, name, text, insn, stall, stallNs, wait}}.
std::string dataJson(const ReportData &data, const Timeline &timeline, double totalNs) {
  std::string tracks = "[";
  for (size_t t = 0; t < data.tracks.size(); ++t)
    tracks += fmt::format("{}{{\"name\":{},\"engine\":{},\"lanes\":{}}}", t ? "," : "", jsonQuote(data.tracks[t]),
                          jsonQuote(engineOfTrack(data.tracks[t])), data.lanes[t]);
  tracks += "]";
  std::string reasons = "[";
  for (int r = 0; r < kNumStallReasons; ++r)
    reasons += (r ? "," : "") + jsonQuote(stallReasonLabel(static_cast<StallReason>(r)));
  reasons += "]";
  std::string note;
  if (data.mergedFrom > 0)
    note = fmt::format("{} events; {} of them were merged into boxes of a few neighbours so that the page stays "
                       "responsive (the trace and the summary have every event).",
                       timeline.events.size(), data.mergedFrom);
  const std::vector<Box> &b = data.boxes;
  auto ns = [](double value) { return decimalText(value, kNsDecimals); };
  std::string events = "{";
  events += "\"track\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.track); });
  events += ",\"lane\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.lane); });
  events += ",\"start\":" + jsonArray(b, [&](const Box &x) { return ns(x.startNs); });
  events += ",\"dur\":" + jsonArray(b, [&](const Box &x) { return ns(x.endNs - x.startNs); });
  events += ",\"name\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.name); });
  events += ",\"text\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.text); });
  events += ",\"insn\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.instruction); });
  events += ",\"stall\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.stall); });
  events += ",\"stallNs\":" + jsonArray(b, [&](const Box &x) { return ns(x.stallNs); });
  events += ",\"wait\":" + jsonArray(b, [](const Box &x) { return std::to_string(x.wait); });
  events += "}";
  std::string json = fmt::format(
      "{{\"profile\":{},\"totalNs\":{},\"tracks\":{},\"stallReasons\":{},\"note\":{},\"strings\":{},\"events\":{}}}",
      jsonQuote(timeline.profileName), ns(totalNs), tracks, reasons, jsonQuote(note),
      jsonArray(data.strings.strings(), [](const std::string &s) { return jsonQuote(s); }), events);
  // '<' only occurs inside JSON strings, where \u003c means the same; "</script>" cannot end the blob.
  std::string safe;
  safe.reserve(json.size());
  for (char c : json) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  return safe;
}

std::string htmlEscape(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

std::string htmlTable(const std::string &id, const TableRows &rows) {
  std::string html = fmt::format("<table id=\"{}\">\n", id);
  for (size_t r = 0; r < rows.size(); ++r) {
    html += "<tr>";
    const char *tag = r == 0 ? "th" : "td";
    for (const std::string &cell : rows[r]) html += fmt::format("<{0}>{1}</{0}>", tag, htmlEscape(cell));
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

std::string summaryHtml(const ProfileSummary &summary) {
  SummaryTables tables = summaryTables(summary);
  return "<div class=\"tables\">\n<div>" + htmlTable("metrics", tables.metrics) + "</div>\n<div>" +
         htmlTable("engines", tables.engines) + htmlTable("instructions", tables.instructions) +
         "</div>\n</div>\n<details><summary>Tracks</summary>\n" + htmlTable("tracks", tables.tracks) + "</details>\n";
}

Status writeTextFile(const std::filesystem::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (out) out.close();
  if (!out)
    return makeFileError(ErrorCode::IoError, path.string(), "cannot write the profile output: {}",
                         std::strerror(errno));
  return Status::success();
}

}  // namespace

std::string renderReport(const ProfileSummary &summary, const Timeline &timeline, std::span<const Instruction> program,
                         const ReportOptions &options) {
  ReportData data = collectBoxes(timeline, program, summary.totalNs, options);
  std::string title = fmt::format("tessel profile{}", timeline.profileName.empty() ? "" : " - " + timeline.profileName);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += fmt::format("<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n", htmlEscape(title), reportStyle());
  html += fmt::format("<h1>{}</h1>\n<p class=\"subtitle\">total {:.3f} us, {} events</p>\n", htmlEscape(title),
                      summary.totalUs, summary.events);
  html += "<section id=\"summary\">\n" + summaryHtml(summary) + "</section>\n";
  html += R"(<section id="timeline-section">
<div id="toolbar"><button id="reset-zoom" type="button">Reset zoom</button> <span id="range"></span>
<span class="hint">wheel: zoom, drag: pan, double-click: reset</span></div>
<p id="note"></p>
<div id="legend"></div>
<div id="timeline"><canvas id="timeline-canvas"></canvas><div id="tooltip" hidden></div></div>
</section>
)";
  html += "<script type=\"application/json\" id=\"profile-data\">" + dataJson(data, timeline, summary.totalNs) +
          "</script>\n";
  html += fmt::format("<script>\n{}</script>\n</body>\n</html>\n", reportScript());
  return html;
}

std::string renderReport(const Timeline &timeline, std::span<const Instruction> program, const ReportOptions &options) {
  return renderReport(summarize(timeline, program), timeline, program, options);
}

Status writeProfile(const std::string &dir, const Timeline &timeline, std::span<const Instruction> program) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return makeFileError(ErrorCode::IoError, dir, "cannot create the profile directory: {}", error.message());
  std::filesystem::path base(dir);
  ProfileSummary summary = summarize(timeline, program);
  TESSEL_RETURN_IF_ERROR(writeTextFile(base / "trace.json", formatTrace(timeline, program)));
  TESSEL_RETURN_IF_ERROR(writeTextFile(base / "summary.txt", formatSummary(summary)));
  // Invalid UTF-8 in a user-chosen name is replaced rather than thrown over.
  std::string json = summaryToJson(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  TESSEL_RETURN_IF_ERROR(writeTextFile(base / "summary.json", json + "\n"));
  TESSEL_RETURN_IF_ERROR(writeTextFile(base / "report.html", renderReport(summary, timeline, program)));
  return Status::success();
}

}  // namespace tessel::nc
