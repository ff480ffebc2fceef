// Semaphore visibility; see semaphores.h.
#include "targets/nc/sim/timing/semaphores.h"

namespace tessel::nc {

void SemaphoreTable::addIncrement(uint16_t id, double completeNs) {
  if (id >= completionsNs_.size()) completionsNs_.resize(static_cast<size_t>(id) + 1);
  std::vector<double> &times = completionsNs_[id];
  auto position = times.end();
  while (position != times.begin() && *(position - 1) > completeNs) --position;
  times.insert(position, completeNs);
}

uint32_t SemaphoreTable::count(uint16_t id) const {
  return id < completionsNs_.size() ? static_cast<uint32_t>(completionsNs_[id].size()) : 0;
}

std::optional<double> SemaphoreTable::satisfiedAtNs(const SemaphoreWait &wait, double visibleLatencyNs) const {
  if (wait.value == 0) return 0.0;
  if (count(wait.id) < wait.value) return std::nullopt;
  return completionsNs_[wait.id][wait.value - 1] + visibleLatencyNs;
}

}  // namespace tessel::nc
