// Semaphore insertion; see semaphores.h. Knowledge is tracked as, per stream, the highest ordinal
// of every semaphore it is known to have reached; each incrementing instruction snapshots its
// stream's knowledge (plus itself) so that a consumer waiting for it inherits that knowledge.
#include "targets/nc/tile/semaphores.h"

#include <algorithm>

#include "targets/nc/tile/estimate.h"

namespace tessel::nc::tile {

Status insertSemaphores(std::vector<Instruction> &program, const Schedule &schedule, const DependenceGraph &deps,
                        const MachineProfile &profile) {
  const int32_t n = static_cast<int32_t>(program.size());
  const int numStreams = schedule.numStreams;
  auto streamOf = [&](int32_t op) { return schedule.ops[op].stream; };
  auto needsSync = [&](int32_t producer, int32_t consumer) {
    return streamOf(producer) != streamOf(consumer) || streamOf(consumer) >= kFirstDmaStream;
  };
  std::vector<int32_t> position(n);
  for (int32_t k = 0; k < n; ++k) position[schedule.order[k]] = k;

  // Which instructions increment their stream's semaphore, and their ordinals.
  std::vector<char> increments(n, 0);
  for (int32_t c = 0; c < n; ++c)
    for (const Dependence &dep : deps.preds[c])
      if (needsSync(dep.producer, c)) increments[dep.producer] = 1;
  std::vector<uint32_t> ordinal(n, 0);
  std::vector<std::vector<int32_t>> incrementers(numStreams);  // Per stream, ops by ordinal - 1.
  std::vector<int32_t> slot(n, -1);                             // Row of the op's knowledge snapshot.
  int32_t slots = 0;
  for (int32_t k = 0; k < n; ++k) {
    int32_t op = schedule.order[k];
    if (!increments[op]) continue;
    std::vector<int32_t> &list = incrementers[streamOf(op)];
    list.push_back(op);
    ordinal[op] = static_cast<uint32_t>(list.size());
    slot[op] = slots++;
  }
  std::vector<uint32_t> knownAt(static_cast<size_t>(slots) * numStreams, 0);
  std::vector<uint32_t> known(static_cast<size_t>(numStreams) * numStreams, 0);
  auto knowledgeOf = [&](int stream, uint32_t value) {
    return &knownAt[static_cast<size_t>(slot[incrementers[stream][value - 1]]) * numStreams];
  };
  std::vector<std::vector<int32_t>> streamPositions(numStreams);

  std::vector<uint32_t> need(numStreams, 0);
  struct Wanted {
    int stream;
    uint32_t value;
    int32_t producerPosition;
  };
  std::vector<Wanted> wanted, kept;
  for (int32_t k = 0; k < n; ++k) {
    int32_t op = schedule.order[k];
    int s = streamOf(op);
    uint32_t *mine = &known[static_cast<size_t>(s) * numStreams];
    std::fill(need.begin(), need.end(), 0);
    // Keep a queue's counted copies completing in order (see the header).
    if (s >= kFirstDmaStream && increments[op] && ordinal[op] > 1) {
      int32_t previous = incrementers[s][ordinal[op] - 2];
      int64_t engines = dmaEnginesUsed(program[k], profile);
      if (engines < dmaEnginesUsed(program[position[previous]], profile)) need[s] = ordinal[previous];
    }
    for (const Dependence &dep : deps.preds[op])
      if (needsSync(dep.producer, op))
        need[streamOf(dep.producer)] = std::max(need[streamOf(dep.producer)], ordinal[dep.producer]);
    wanted.clear();
    for (int t = 0; t < numStreams; ++t)
      if (need[t] > mine[t])
        wanted.push_back(Wanted{t, need[t], position[incrementers[t][need[t] - 1]]});
    // Drop waits implied by another wanted producer's knowledge.
    kept.clear();
    for (const Wanted &w : wanted) {
      bool implied = std::any_of(wanted.begin(), wanted.end(), [&](const Wanted &other) {
        return other.stream != w.stream && knowledgeOf(other.stream, other.value)[w.stream] >= w.value;
      });
      if (!implied) kept.push_back(w);
    }
    for (const Wanted &w : kept) {
      const uint32_t *theirs = knowledgeOf(w.stream, w.value);
      for (int t = 0; t < numStreams; ++t) mine[t] = std::max(mine[t], theirs[t]);
      mine[w.stream] = std::max(mine[w.stream], w.value);
    }
    // Too many waits: the earliest producers' waits move to an instruction this one already waits
    // for (a kept producer, latest first) or to an earlier instruction of this stream, either of
    // which starts after the moved wait's producer in program order (so no cycle can form).
    std::sort(kept.begin(), kept.end(),
              [](const Wanted &a, const Wanted &b) { return a.producerPosition < b.producerPosition; });
    size_t excess = kept.size() > static_cast<size_t>(kMaxWaits) ? kept.size() - kMaxWaits : 0;
    auto host = [&](int32_t h, const Wanted &w) {
      std::vector<SemaphoreWait> &hostWaits = program[h].waits;
      auto same = std::find_if(hostWaits.begin(), hostWaits.end(),
                               [&](const SemaphoreWait &sw) { return sw.id == w.stream; });
      if (same != hostWaits.end()) {
        same->value = std::max(same->value, w.value);
      } else if (hostWaits.size() < static_cast<size_t>(kMaxWaits)) {
        hostWaits.push_back(SemaphoreWait{static_cast<uint16_t>(w.stream), w.value});
      } else {
        return false;
      }
      int32_t hostOp = schedule.order[h];
      if (slot[hostOp] >= 0) {
        uint32_t *snapshot = &knownAt[static_cast<size_t>(slot[hostOp]) * numStreams];
        const uint32_t *theirs = knowledgeOf(w.stream, w.value);
        for (int t = 0; t < numStreams; ++t) snapshot[t] = std::max(snapshot[t], theirs[t]);
        snapshot[w.stream] = std::max(snapshot[w.stream], w.value);
      }
      return true;
    };
    for (size_t e = 0; e < excess; ++e) {
      const Wanted &w = kept[e];
      bool placed = false;
      for (size_t h = kept.size(); h-- > excess && !placed;)
        if (kept[h].producerPosition > w.producerPosition) placed = host(kept[h].producerPosition, w);
      const std::vector<int32_t> &earlier = streamPositions[s];
      for (size_t h = earlier.size(); !placed && h-- > 0 && earlier[h] > w.producerPosition;)
        placed = host(earlier[h], w);
      if (!placed)
        return makeError(ErrorCode::Internal,
                         "instruction {} ({}) needs {} semaphore waits (at most {}) and no instruction it waits for "
                         "can take the extra ones",
                         k, mnemonic(program[k].opcode), kept.size(), kMaxWaits);
    }
    std::sort(kept.begin() + static_cast<std::ptrdiff_t>(excess), kept.end(),
              [](const Wanted &a, const Wanted &b) { return a.stream < b.stream; });
    for (size_t e = excess; e < kept.size(); ++e)
      program[k].waits.push_back(SemaphoreWait{static_cast<uint16_t>(kept[e].stream), kept[e].value});
    if (increments[op]) {
      program[k].increment = static_cast<uint16_t>(s);
      uint32_t *snapshot = &knownAt[static_cast<size_t>(slot[op]) * numStreams];
      std::copy(mine, mine + numStreams, snapshot);
      snapshot[s] = std::max(snapshot[s], ordinal[op]);
    }
    streamPositions[s].push_back(k);
  }
  return Status::success();
}

}  // namespace tessel::nc::tile
