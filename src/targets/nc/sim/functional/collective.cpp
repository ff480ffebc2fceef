// all_gather and all_reduce (isa.def): the data exchange of one collective across the cores that
// take part, done at once when every core has started it. Every core's dst is resolved and checked
// before any is written, so a failing collective leaves every state unchanged.
#include <vector>

#include "targets/nc/sim/functional/execute.h"
#include "targets/nc/sim/functional/access.h"

namespace tessel::nc {

Status executeCollective(std::span<const Instruction *const> insns, std::span<const size_t> indices,
                         std::span<MachineState *const> states, const MachineProfile &profile) {
  const size_t cores = insns.size();
  std::vector<functional::Operand> dsts;
  dsts.reserve(cores);
  for (size_t core = 0; core < cores; ++core) {
    const functional::ExecContext ctx(*insns[core], indices[core], *states[core], profile);
    TESSEL_ASSIGN_OR_RETURN(functional::Operand dst, ctx.operand("dst", functional::Access::Write));
    TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
    dsts.push_back(std::move(dst));
  }
  const functional::Operand &first = dsts[0];
  const uint64_t partitionBytes = first.freeSize * static_cast<uint64_t>(first.elementBytes);
  if (insns[0]->opcode == Opcode::AllGather) {
    // Part c (partitions [c*part, (c+1)*part) of dst) comes from core c, bit-exact.
    const int64_t part = first.partitions / static_cast<int64_t>(cores);
    std::vector<uint8_t> bytes(partitionBytes);
    for (size_t source = 0; source < cores; ++source)
      for (int64_t p = static_cast<int64_t>(source) * part; p < static_cast<int64_t>(source + 1) * part; ++p) {
        functional::loadPartitionRaw(dsts[source], p, bytes.data());
        for (size_t core = 0; core < cores; ++core)
          if (core != source) functional::storePartitionRaw(dsts[core], p, bytes.data());
      }
    return Status::success();
  }
  // all_reduce with add: fp32 sums in core order, rounded to dst's dtype on every core.
  std::vector<float> sum(first.freeSize), values(first.freeSize);
  for (int64_t p = 0; p < first.partitions; ++p) {
    functional::loadPartition(dsts[0], p, sum.data());
    for (size_t core = 1; core < cores; ++core) {
      functional::loadPartition(dsts[core], p, values.data());
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += values[i];
    }
    for (const functional::Operand &dst : dsts) functional::storePartition(dst, p, sum.data());
  }
  return Status::success();
}

}  // namespace tessel::nc
