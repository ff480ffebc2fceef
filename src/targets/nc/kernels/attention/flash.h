// The flash form of attention: o = softmax(scale * q k^T [causal]) v per head with q, k, v and o in
// HBM, computed block by block with an online softmax so that the [S, S] score matrix never leaves
// PSUM/SBUF (flash.cpp says how). Variant "flash" of the library kernel `attention`, and what the
// model compiler lowers an Attention node to whose keys do not fit the heads form.
#pragma once

#include <cstdint>

#include "support/diagnostic.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

struct FlashProblem {
  int64_t H = 0, S = 0, D = 0;
  float scale = 1;
  bool causal = false;
  /// False reloads key blocks per query superblock even when a head's keys fit SBUF (for tests).
  bool allowResident = true;
};

/// q, k, v and o: [H, S, D] bf16 in HBM.
struct FlashOperands {
  tile::HbmView q, k, v, o;
};

/// Records flash attention; an error when D exceeds the partitions or the PE (the contraction of
/// q k^T lies on partitions).
Status emitFlashAttention(tile::KernelBuilder &builder, const FlashProblem &problem, const FlashOperands &operands);

}  // namespace tessel::nc::kernels
