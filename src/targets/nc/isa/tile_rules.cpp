#include "targets/nc/isa/tile_rules.h"

namespace tessel::nc {

bool partitionsInRange(const IsaLimits &limits, int64_t start, int64_t count) {
  return start >= 0 && count >= 1 && start + count <= limits.partitions;
}

bool withinOnePsumBank(const IsaLimits &limits, uint64_t offsetBytes, uint64_t bytes) {
  return bytes == 0 || offsetBytes / limits.psumBankBytes == (offsetBytes + bytes - 1) / limits.psumBankBytes;
}

int64_t partitionStartAlignment(int64_t count, int64_t partitions) {
  const int64_t quarter = partitions / 4, half = partitions / 2;
  return count > half ? partitions : count > quarter ? half : quarter;
}

bool accessDimEncodable(int64_t strideElements, int64_t count) {
  return strideElements >= INT16_MIN && strideElements <= INT16_MAX && count <= UINT16_MAX;
}

bool isPeInput(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2 || t == DType::BF16 || t == DType::F16 || t == DType::TF32 ||
         t == DType::F32;
}

bool peInputsPair(DType stationary, DType moving) {
  auto wide = [](DType t) { return t == DType::F32 || t == DType::TF32; };
  return wide(stationary) == wide(moving);
}

bool matmulFits(const IsaLimits &limits, int64_t k, int64_t m, int64_t n) {
  return k <= limits.matmulMaxK && m <= limits.matmulMaxStationaryFree && n <= limits.matmulMaxMovingFree;
}

uint64_t maxFreeElements(const IsaLimits &limits, Engine engine, MemSpace space) {
  if (engine != Engine::DVE && engine != Engine::ACT) return UINT64_MAX;
  return space == MemSpace::PSUM ? limits.dveActMaxFreePsum : limits.dveActMaxFreeSbuf;
}

bool bnStatsFits(const IsaLimits &limits, uint64_t freeElements) { return freeElements <= limits.bnStatsMaxFree; }

int64_t transposeLimit(const IsaLimits &limits, bool onPe) { return onPe ? limits.peTransposeMax : limits.dveTransposeMax; }

bool poolAccesses(const IsaLimits &limits, MemSpace space) {
  return space == MemSpace::SBUF || (space == MemSpace::PSUM && limits.poolPsumAccess);
}

bool inputsNotBothInPsum(MemSpace in0, MemSpace in1) { return in0 != MemSpace::PSUM || in1 != MemSpace::PSUM; }

bool actTakesImmediateBias(const IsaLimits &limits, float bias) { return limits.actBiasImmediate || bias == 0.0f; }

bool actReduceOpSupported(const IsaLimits &limits, AluOp op) { return (limits.actReduceOps & aluOpBit(op)) != 0; }

}  // namespace tessel::nc
