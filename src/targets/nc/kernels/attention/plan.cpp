// The attention family's plans (plan.h).
#include "targets/nc/kernels/attention/plan.h"

#include <algorithm>

#include "targets/nc/isa/ports.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {

EnginePlan planEngines(const MachineProfile &profile) {
  EnginePlan plan;
  plan.stageScores = hasPortConflict(profile, "dve", "act", "psum");
  plan.smallOps = hasPortConflict(profile, "dve", "pool", "sbuf") ? Engine::DVE : Engine::POOL;
  plan.outputEvictions = plan.stageScores ? Engine::DVE : Engine::ACT;
  return plan;
}

int64_t partitionAlignment(int64_t partitions, int64_t count) {
  return count > partitions / 2 ? partitions : count > partitions / 4 ? partitions / 2 : partitions / 4;
}

bool headsPackIntoBlocks(int64_t partitions, int64_t heads, int64_t width) {
  const int64_t align = partitionAlignment(partitions, width);
  for (int64_t h = 0; h < heads; ++h)
    if ((h * width) % partitions % align != 0 || (h * width) % partitions + width > partitions) return false;
  return true;
}

HeadsPlan planHeads(const MachineProfile &profile, const HeadsProblem &problem, DType matmulDtype, DType valuesDtype) {
  const int64_t P = profile.partitions, bankColumns = profile.psum.bankFp32Elements;
  HeadsPlan plan;
  plan.engines = planEngines(profile);
  plan.matmulDtype = matmulDtype;
  plan.valuesDtype = valuesDtype;
  plan.packedOutput = headsPackIntoBlocks(P, problem.H, problem.Dv);
  const int64_t perBlock = plan.packedOutput ? P / problem.Dv : 1;
  for (int64_t h = 0; h < problem.H; h += perBlock) {
    std::vector<int64_t> group;
    for (int64_t g = h; g < std::min(problem.H, h + perBlock); ++g) group.push_back(g);
    plan.groups.push_back(group);
  }
  const int64_t bankBytes = bankColumns * dtypeSizeBytes(DType::F32);
  const int64_t queryTile = std::min(P, problem.Sq);
  const int64_t keyTiles = ceilDiv(problem.Sk, P);
  plan.probsChunk = std::clamp<int64_t>(bankBytes / (queryTile * dtypeSizeBytes(matmulDtype)), 1, keyTiles);
  plan.valuesChunk = std::clamp<int64_t>(bankBytes / (problem.Dv * dtypeSizeBytes(valuesDtype)), 1, keyTiles);
  plan.scoreColumns = std::min(bankColumns, problem.Sk);
  plan.probsTColumns = plan.probsChunk * queryTile;
  plan.valuesColumns = plan.valuesChunk * problem.Dv;
  plan.outputColumns = 2 * queryTile;
  return plan;
}

}  // namespace tessel::nc::kernels
