// The HTML report of one simulated run and the directory writer of all profile outputs. The report
// is one self-contained file (inline CSS and vanilla JS, no network access, no external scripts or
// fonts): the summary tables (summary.h) and an interactive timeline drawn on a <canvas>, one
// labelled row per track, instruction boxes colored by engine, wheel zoom, drag pan, and a hover
// tooltip with the instruction text, stall and semaphore. The events travel in the page as a JSON
// blob of parallel number arrays; past ReportOptions::maxEvents, events that fall in the same small
// time bin of a lane are merged into one box (the page says so).
#pragma once

#include <span>
#include <string>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/profile/summary.h"
#include "targets/nc/sim/timeline.h"

namespace tessel::nc {

/// Events embedded one by one up to this many; beyond it the report merges per time bin.
inline constexpr size_t kMaxReportEvents = 200000;

struct ReportOptions {
  size_t maxEvents = kMaxReportEvents;  // Must be > 0.
};

/// The report page for `timeline` with its precomputed `summary`. `program` supplies the
/// instruction texts of the tooltips; it may be empty.
std::string renderReport(const ProfileSummary &summary, const Timeline &timeline, std::span<const Instruction> program,
                         const ReportOptions &options = {});

/// The report page for `timeline` (computes the summary itself).
std::string renderReport(const Timeline &timeline, std::span<const Instruction> program,
                         const ReportOptions &options = {});

/// Writes trace.json (trace.h), summary.txt, summary.json and report.html into `dir`, creating it
/// (and its parents) when missing. Errors: IoError naming the path that could not be created or
/// written.
Status writeProfile(const std::string &dir, const Timeline &timeline, std::span<const Instruction> program);

}  // namespace tessel::nc
