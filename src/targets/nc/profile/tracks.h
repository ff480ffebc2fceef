// The rows of a profile: which tracks a Timeline has, in what order they are shown, which engine
// each belongs to, and how overlapping events on one track are spread over lanes. The summary, the
// Perfetto trace and the HTML report all read these so that the three show the same rows in the same
// order (accelerator-model.md section 8: one row per engine, PE split into its LoadStationary and
// Matmul halves, one per DMA queue).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "targets/nc/sim/timeline.h"

namespace tessel::nc {

/// The compute tracks every profile shows, busy or not, in display order. DMA queue tracks
/// ("DMA.q<N>") follow them, but only the queues that moved something.
inline constexpr std::string_view kComputeTracks[] = {"PE.LoadStationary", "PE.Matmul", "ACT",
                                                      "DVE",               "POOL",      "SP"};

/// The engines in display order; DMA covers all queue tracks.
inline constexpr std::string_view kProfileEngines[] = {"PE", "ACT", "DVE", "POOL", "SP", "DMA"};

/// The engine a track belongs to: the part of its name before the first '.' ("PE.Matmul" -> "PE",
/// "DMA.q3" -> "DMA", "ACT" -> "ACT").
std::string engineOfTrack(std::string_view track);

/// Display name of a stall reason: "none", "semaphore", "port", "dma_engine", "throttle".
std::string_view stallReasonLabel(StallReason reason);

/// The stall of an event in ns (start - ready, never negative).
double stallNsOf(const TimelineEvent &event);

/// A semaphore wait as the profiler prints it: "s3>=2".
std::string waitLabel(const SemaphoreWait &wait);

/// The disassembled text of program[index], or "" when index is outside the program.
std::string instructionText(std::span<const Instruction> program, size_t index);

/// Orders tracks for display: compute tracks in kComputeTracks order, then DMA queues by number,
/// then any other track by name.
bool trackBefore(std::string_view a, std::string_view b);

/// The tracks to show for `timeline`: every compute track plus every other track that has an
/// event, sorted with trackBefore.
std::vector<std::string> orderedTracks(const Timeline &timeline);

/// Total length of the union of [start, end) intervals, in ns. Takes the intervals by value
/// because it sorts them.
double unionLengthNs(std::vector<std::pair<double, double>> intervals);

/// Lanes of one track: events that overlap in time go to different lanes so that every lane is a
/// sequence of disjoint intervals (what a trace viewer and the report's timeline need).
struct LaneAssignment {
  std::vector<int> laneOfEvent;  // Parallel to the event indices passed in.
  int lanes = 1;                 // At least 1, even for a track without events.
};

/// Assigns the events `indices` of `timeline` (all on one track) to the lowest free lane, taking
/// them in start order; an event may start exactly when the previous one on its lane ends.
LaneAssignment assignLanes(const Timeline &timeline, const std::vector<size_t> &indices);

/// The events of each track of `tracks`, as indices into timeline.events sorted by start time.
/// Events on tracks not in `tracks` are left out.
std::vector<std::vector<size_t>> eventsByTrack(const Timeline &timeline, const std::vector<std::string> &tracks);

}  // namespace tessel::nc
