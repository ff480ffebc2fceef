// PE throttling; see throttle.h.
#include "targets/nc/sim/timing/throttle.h"

#include <algorithm>

namespace tessel::nc {
namespace {
constexpr double kNsPerUs = 1000.0;
}  // namespace

PeThrottle::PeThrottle(const MachineProfile &profile) {
  if (!profile.throttle) return;
  enabled_ = true;
  startUtilization_ = profile.throttle->startUtilization;
  rampNs_ = profile.throttle->rampUs * kNsPerUs;
  windowNs_ = profile.throttle->windowUs * kNsPerUs;
  reengageBelow_ = profile.throttle->reengageBelowUtilization;
}

double PeThrottle::utilizationBefore(double timeNs) const {
  double windowStart = timeNs - windowNs_, busyNs = 0;
  for (const Interval &interval : recent_) {
    double begin = std::max(interval.startNs, windowStart), end = std::min(interval.endNs, timeNs);
    if (end > begin) busyNs += end - begin;
  }
  return busyNs / windowNs_;
}

double PeThrottle::capAt(double startNs) {
  if (!enabled_) return 1.0;
  bool fullWindowSinceEngage = startNs - windowNs_ >= engagedAtNs_;
  if (!engaged_ || (fullWindowSinceEngage && utilizationBefore(startNs) < reengageBelow_)) {
    engaged_ = true;
    engagedAtNs_ = startNs;
    activeSinceEngageNs_ = 0;
  }
  double ramp = rampNs_ > 0 ? activeSinceEngageNs_ / rampNs_ : 1.0;
  return std::min(1.0, startUtilization_ + (1.0 - startUtilization_) * ramp);
}

void PeThrottle::recordBusy(double startNs, double endNs) {
  if (!enabled_) return;
  activeSinceEngageNs_ += endNs - startNs;
  recent_.push_back({startNs, endNs});
  while (!recent_.empty() && recent_.front().endNs <= startNs - windowNs_) recent_.pop_front();
}

}  // namespace tessel::nc
