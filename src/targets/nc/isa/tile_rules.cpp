#include "targets/nc/isa/tile_rules.h"

namespace tessel::nc {

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

int64_t transposeLimit(const IsaLimits &limits, bool onPe) { return onPe ? limits.peTransposeMax : limits.dveTransposeMax; }

}  // namespace tessel::nc
