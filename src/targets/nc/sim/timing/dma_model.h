// The DMA engines of one core over time (accelerator-model.md sections 5.5 and 9.4). A triggered
// dma_copy is split into one share per engine (dma_transfer.h); a share may start moving data
// triggerNs after the trigger, and each engine serves one share at a time, FIFO within a queue and
// round robin between queues. While a transfer's data moves, the next transfer on the same queue can
// already be triggered, so its trigger latency overlaps this data phase. Global limiter: the shares
// that touch HBM together stream at most hbm.bytesPerNsPerCore; when their full-rate sum is higher,
// all of them slow down by the same factor (fluid model, re-evaluated whenever a share starts or
// ends). A copy completes when its last share ends.
#pragma once

#include <cstddef>
#include <deque>
#include <limits>
#include <vector>

#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/timing/dma_transfer.h"

namespace tessel::nc {

/// A dma_copy whose data has all arrived.
struct DmaCompletion {
  size_t instruction = 0;
  double firstDataNs = 0;   // The first share started moving data.
  double completeNs = 0;    // The last share ended.
  bool delayed = false;     // A share waited for its engine or was slowed by the HBM limiter.
};

class DmaModel {
 public:
  /// `queues` lists the queue ids in use (ascending); round robin runs over them.
  DmaModel(const MachineProfile &profile, std::vector<int> queues);

  /// Queues the shares of dma_copy `instruction` on `queue`; they may start at `dataReadyNs`.
  void enqueue(size_t instruction, int queue, double dataReadyNs, const DmaTransferPlan &plan);

  /// The time of the next change inside the model (a share ending, or a queued share becoming ready
  /// on an idle engine); +infinity when there is none.
  double nextEventNs() const;

  /// Runs the engines up to `nowNs` (not earlier than the previous call), appending the copies that
  /// completed, in completion order.
  void advanceTo(double nowNs, std::vector<DmaCompletion> &completed);

  /// True when no share is queued or moving.
  bool idle() const { return pendingShares_ == 0; }

 private:
  struct Share {
    size_t transfer = 0;
    double busyNs = 0;
    double bytesPerNs = 0;  // Full-rate streaming rate of this share.
  };
  struct Transfer {
    size_t instruction = 0;
    double dataReadyNs = 0;
    bool touchesHbm = false;
    int sharesLeft = 0;
    double firstDataNs = std::numeric_limits<double>::infinity();
    bool delayed = false;
  };
  struct EngineState {
    std::vector<std::deque<Share>> queues;  // Indexed by queue id.
    bool busy = false;
    Share current;
    double finishNs = 0;  // Projected end of `current` at `factor`.
    double factor = 1;    // Fraction of full rate `current` runs at.
    size_t lastQueueSlot = 0;  // Round-robin position in queues_ of the last queue served.
  };

  void dispatchIdleEngines();
  void applyLimiter();
  void finishSharesAt(double timeNs, std::vector<DmaCompletion> &completed);

  const MachineProfile &profile_;
  std::vector<int> queues_;
  std::vector<EngineState> engines_;
  std::vector<Transfer> transfers_;
  size_t pendingShares_ = 0;
  double nowNs_ = 0;
};

}  // namespace tessel::nc
