// Track order, engine of a track, interval unions and lane assignment shared by the profiler's
// summary, trace and report.
#include "targets/nc/profile/tracks.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "targets/nc/isa/disassembler.h"

namespace tessel::nc {
namespace {

constexpr std::string_view kDmaQueuePrefix = "DMA.q";

/// Sort key of a track: (group, number, name). Group 0: compute tracks (number = position),
/// 1: DMA queues (number = queue), 2: anything else (by name).
struct TrackKey {
  int group = 2;
  long number = 0;
  std::string_view name;
  auto operator<=>(const TrackKey &) const = default;
};

TrackKey trackKey(std::string_view track) {
  for (size_t i = 0; i < std::size(kComputeTracks); ++i)
    if (track == kComputeTracks[i]) return {0, static_cast<long>(i), track};
  if (track.starts_with(kDmaQueuePrefix)) {
    std::string_view digits = track.substr(kDmaQueuePrefix.size());
    long queue = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), queue);
    if (error == std::errc() && end == digits.data() + digits.size() && !digits.empty())
      return {1, queue, track};
  }
  return {2, 0, track};
}

}  // namespace

std::string engineOfTrack(std::string_view track) {
  return std::string(track.substr(0, track.find('.')));
}

std::string_view stallReasonLabel(StallReason reason) {
  switch (reason) {
    case StallReason::None: return "none";
    case StallReason::Semaphore: return "semaphore";
    case StallReason::Port: return "port";
    case StallReason::DmaEngine: return "dma_engine";
    case StallReason::Throttle: return "throttle";
  }
  return "unknown";
}

double stallNsOf(const TimelineEvent &event) { return std::max(0.0, event.startNs - event.readyNs); }

std::string waitLabel(const SemaphoreWait &wait) { return fmt::format("s{}>={}", wait.id, wait.value); }

std::string instructionText(std::span<const Instruction> program, size_t index) {
  return index < program.size() ? formatInstruction(program[index]) : std::string();
}

bool trackBefore(std::string_view a, std::string_view b) { return trackKey(a) < trackKey(b); }

std::vector<std::string> orderedTracks(const Timeline &timeline) {
  std::set<std::string, std::less<>> names(std::begin(kComputeTracks), std::end(kComputeTracks));
  for (const TimelineEvent &event : timeline.events) names.insert(event.track);
  std::vector<std::string> tracks(names.begin(), names.end());
  std::sort(tracks.begin(), tracks.end(), [](const std::string &a, const std::string &b) { return trackBefore(a, b); });
  return tracks;
}

double unionLengthNs(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0;
  bool open = false;
  double runStart = 0, runEnd = 0;
  for (const auto &[start, end] : intervals) {
    if (end <= start) continue;
    if (open && start <= runEnd) {
      runEnd = std::max(runEnd, end);
      continue;
    }
    if (open) total += runEnd - runStart;
    runStart = start;
    runEnd = end;
    open = true;
  }
  if (open) total += runEnd - runStart;
  return total;
}

LaneAssignment assignLanes(const Timeline &timeline, const std::vector<size_t> &indices) {
  LaneAssignment result;
  result.laneOfEvent.assign(indices.size(), 0);
  std::vector<size_t> order(indices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return timeline.events[indices[a]].startNs < timeline.events[indices[b]].startNs;
  });
  // Busy lanes by the time they free up; free lanes kept sorted so the lowest is reused first.
  using Busy = std::pair<double, int>;
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  std::set<int> freeLanes;
  int lanes = 0;
  for (size_t position : order) {
    const TimelineEvent &event = timeline.events[indices[position]];
    while (!busy.empty() && busy.top().first <= event.startNs) {
      freeLanes.insert(busy.top().second);
      busy.pop();
    }
    int lane = 0;
    if (freeLanes.empty()) {
      lane = lanes++;
    } else {
      lane = *freeLanes.begin();
      freeLanes.erase(freeLanes.begin());
    }
    result.laneOfEvent[position] = lane;
    busy.push({std::max(event.endNs, event.startNs), lane});
  }
  result.lanes = std::max(lanes, 1);
  return result;
}

std::vector<std::vector<size_t>> eventsByTrack(const Timeline &timeline, const std::vector<std::string> &tracks) {
  std::unordered_map<std::string_view, size_t> slot;
  for (size_t i = 0; i < tracks.size(); ++i) slot.emplace(tracks[i], i);
  std::vector<std::vector<size_t>> byTrack(tracks.size());
  for (size_t i = 0; i < timeline.events.size(); ++i) {
    auto found = slot.find(timeline.events[i].track);
    if (found != slot.end()) byTrack[found->second].push_back(i);
  }
  for (std::vector<size_t> &indices : byTrack)
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return timeline.events[a].startNs < timeline.events[b].startNs;
    });
  return byTrack;
}

}  // namespace tessel::nc
