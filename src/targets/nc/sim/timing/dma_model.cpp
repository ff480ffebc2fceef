// The DMA engines over time; see dma_model.h. Shares keep their projected end time and the rate
// factor they run at; the remaining work is (end - now) * factor, so end times only change when the
// HBM limiter's factor does, and an unthrottled share ends exactly busyNs after it starts.
#include "targets/nc/sim/timing/dma_model.h"

#include <algorithm>

namespace tessel::nc {

DmaModel::DmaModel(const MachineProfile &profile, std::vector<int> queues)
    : profile_(profile), queues_(std::move(queues)), engines_(static_cast<size_t>(profile.dma.enginesPerCore)) {
  int queueSlots = static_cast<int>(profile.dma.queuesPerEngine);
  for (int queue : queues_) queueSlots = std::max(queueSlots, queue + 1);
  for (EngineState &engine : engines_) {
    engine.queues.resize(static_cast<size_t>(queueSlots));
    engine.lastQueueSlot = queues_.empty() ? 0 : queues_.size() - 1;
  }
}

void DmaModel::enqueue(size_t instruction, int queue, double dataReadyNs, const DmaTransferPlan &plan) {
  Transfer transfer;
  transfer.instruction = instruction;
  transfer.dataReadyNs = dataReadyNs;
  transfer.touchesHbm = plan.touchesHbm;
  transfer.sharesLeft = static_cast<int>(plan.shares.size());
  size_t id = transfers_.size();
  transfers_.push_back(transfer);
  for (const DmaEngineShare &share : plan.shares) {
    double rate = share.busyNs > 0 ? static_cast<double>(share.bytes) / share.busyNs : 0;
    engines_[static_cast<size_t>(share.engine)].queues[static_cast<size_t>(queue)].push_back({id, share.busyNs, rate});
  }
  pendingShares_ += plan.shares.size();
}

double DmaModel::nextEventNs() const {
  double next = std::numeric_limits<double>::infinity();
  for (const EngineState &engine : engines_) {
    if (engine.busy) {
      next = std::min(next, engine.finishNs);
      continue;
    }
    for (int queue : queues_) {
      const std::deque<Share> &waiting = engine.queues[static_cast<size_t>(queue)];
      if (!waiting.empty()) next = std::min(next, std::max(nowNs_, transfers_[waiting.front().transfer].dataReadyNs));
    }
  }
  return next;
}

void DmaModel::dispatchIdleEngines() {
  const size_t slots = queues_.size();
  for (EngineState &engine : engines_) {
    if (engine.busy) continue;
    for (size_t step = 1; step <= slots; ++step) {
      size_t slot = (engine.lastQueueSlot + step) % slots;
      std::deque<Share> &waiting = engine.queues[static_cast<size_t>(queues_[slot])];
      if (waiting.empty()) continue;
      Transfer &transfer = transfers_[waiting.front().transfer];
      if (transfer.dataReadyNs > nowNs_) continue;
      engine.current = waiting.front();
      waiting.pop_front();
      engine.busy = true;
      engine.factor = 1;
      engine.finishNs = nowNs_ + engine.current.busyNs;
      engine.lastQueueSlot = slot;
      transfer.firstDataNs = std::min(transfer.firstDataNs, nowNs_);
      if (nowNs_ > transfer.dataReadyNs) transfer.delayed = true;
      break;
    }
  }
}

void DmaModel::applyLimiter() {
  double demandBytesPerNs = 0;
  for (const EngineState &engine : engines_)
    if (engine.busy && transfers_[engine.current.transfer].touchesHbm) demandBytesPerNs += engine.current.bytesPerNs;
  const double limit = profile_.hbm.bytesPerNsPerCore;
  const double factor = demandBytesPerNs > limit ? limit / demandBytesPerNs : 1.0;
  for (EngineState &engine : engines_) {
    if (!engine.busy) continue;
    Transfer &transfer = transfers_[engine.current.transfer];
    if (!transfer.touchesHbm || engine.factor == factor) continue;
    double remainingNs = (engine.finishNs - nowNs_) * engine.factor;
    engine.finishNs = nowNs_ + remainingNs / factor;
    engine.factor = factor;
    if (factor < 1) transfer.delayed = true;
  }
}

void DmaModel::finishSharesAt(double timeNs, std::vector<DmaCompletion> &completed) {
  for (EngineState &engine : engines_) {
    if (!engine.busy || engine.finishNs > timeNs) continue;
    engine.busy = false;
    --pendingShares_;
    Transfer &transfer = transfers_[engine.current.transfer];
    if (--transfer.sharesLeft == 0)
      completed.push_back({transfer.instruction, transfer.firstDataNs, timeNs, transfer.delayed});
  }
}

void DmaModel::advanceTo(double nowNs, std::vector<DmaCompletion> &completed) {
  while (true) {
    dispatchIdleEngines();
    applyLimiter();
    double next = nextEventNs();
    if (next > nowNs) break;
    nowNs_ = std::max(nowNs_, next);
    finishSharesAt(nowNs_, completed);
  }
  nowNs_ = std::max(nowNs_, nowNs);
}

}  // namespace tessel::nc
