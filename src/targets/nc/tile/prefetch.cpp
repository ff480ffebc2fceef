// Prefetch gates; see prefetch.h.
#include "targets/nc/tile/prefetch.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "targets/nc/tile/estimate.h"

namespace tessel::nc::tile {
namespace {

// A load starts at least kMinLeadNs before its first reader, and at least kLeadTransfers of its own
// transfer times (trigger included), since its data phase shares the DMA engines with whatever else
// moves then. Tuned on MobileNetV2 (one nc-v2 core: no gates 150.4 us; 4 x and 4 us 147.2; 2 x 148.2;
// 6 x 149.7; an 8 us floor 150.2).
constexpr double kMinLeadNs = 4000;
constexpr double kLeadTransfers = 4;
// Above this share of the first schedule's makespan in DMA engine time, no load is gated: in BERT-base
// and GPT-2 (0.96-0.98 on nc-v2) the gates left engines idle; ResNet-50 (0.79-0.85) and MobileNetV2
// (0.33-0.46) gain.
constexpr double kMaxDmaBusyShare = 0.9;

bool isUngatedLoad(const Instruction &insn, const DependenceGraph &deps, int32_t op) {
  return insn.opcode == Opcode::DmaCopy && deps.preds[op].empty() && insn.operands[1] &&
         insn.operands[1]->space == MemSpace::HBM;
}

}  // namespace

std::vector<PrefetchGate> prefetchGates(const std::vector<Instruction> &insns, const Schedule &first,
                                        const MachineProfile &profile, const DependenceGraph &deps) {
  const auto n = static_cast<int32_t>(insns.size());
  // The earliest start of each op's readers in the first schedule.
  std::vector<double> firstReaderNs(insns.size(), -1);
  for (int32_t op = 0; op < n; ++op)
    for (const Dependence &dep : deps.preds[op]) {
      double &reader = firstReaderNs[dep.producer];
      const double start = first.ops[op].startNs;
      if (reader < 0 || start < reader) reader = start;
    }

  // Each copy's transfer time; a kernel whose DMA engines are busy nearly all the time gains nothing
  // from later loads.
  std::vector<double> transferNs(insns.size(), 0);
  double dmaEngineNs = 0;
  for (int32_t op = 0; op < n; ++op)
    if (first.ops[op].engine == Engine::DMA) {
      const InstructionEstimate cost = estimateInstruction(insns[op], Engine::DMA, profile);
      transferNs[op] = cost.triggerNs + cost.busyNs;
      dmaEngineNs += cost.busyNs * cost.dmaEngineShare;
    }
  if (dmaEngineNs > kMaxDmaBusyShare * first.makespanNs) return {};

  // Compute ops seen so far (lower indices), by completion time.
  std::multimap<double, int32_t> computeByCompletion;
  std::vector<PrefetchGate> gates;
  for (int32_t op = 0; op < n; ++op) {
    const ScheduledOp &placed = first.ops[op];
    if (placed.engine != Engine::DMA) {
      computeByCompletion.emplace(placed.completeNs, op);
      continue;
    }
    if (!isUngatedLoad(insns[op], deps, op) || firstReaderNs[op] < 0) continue;
    const double releaseNs = firstReaderNs[op] - std::max(kMinLeadNs, kLeadTransfers * transferNs[op]);
    if (releaseNs <= 0) continue;
    auto after = computeByCompletion.upper_bound(releaseNs);
    if (after == computeByCompletion.begin()) continue;
    gates.push_back(PrefetchGate{op, std::prev(after)->second});
  }
  return gates;
}

}  // namespace tessel::nc::tile
