// nc-v3 PE power throttling (accelerator-model.md sections 5.1 and 9.5). The PE runs under a
// utilization cap u: the cap engages at startUtilization when the PE starts working and whenever a
// full windowUs window after the last engagement had PE utilization below reengageBelowUtilization;
// it then rises linearly to 1.0 over rampUs of PE activity (busy time, so an idle PE does not ramp).
// A MultiplyMoving starting under cap u takes II / u. Profiles without a throttle section (nc-v2)
// never stretch.
#pragma once

#include <deque>

#include "targets/nc/machine/profile.h"

namespace tessel::nc {

class PeThrottle {
 public:
  explicit PeThrottle(const MachineProfile &profile);

  /// The cap for PE work starting at `startNs` (1 when the profile has no throttle). Calls come in
  /// PE start order.
  double capAt(double startNs);

  /// Records PE busy time [startNs, endNs) (matmuls and transposes), in start order.
  void recordBusy(double startNs, double endNs);

 private:
  double utilizationBefore(double timeNs) const;

  bool enabled_ = false;
  double startUtilization_ = 1, rampNs_ = 0, windowNs_ = 0, reengageBelow_ = 0;
  bool engaged_ = false;
  double engagedAtNs_ = 0;
  double activeSinceEngageNs_ = 0;
  struct Interval {
    double startNs, endNs;
  };
  std::deque<Interval> recent_;  // Busy intervals that may still overlap a window.
};

}  // namespace tessel::nc
