// The identity tile the kernels' PE transposes and additions go through (identity^T @ x adds x into
// an accumulation group in PSUM).
#pragma once

#include <cstdint>
#include <string>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// A new [partitions, partitions] identity tile in `dtype`: a POOL memset and two affine_selects.
inline tile::TileView makeIdentity(tile::KernelBuilder &b, const std::string &name, DType dtype) {
  const int64_t P = b.profile().partitions;
  tile::TileView t = b.sbuf(name, dtype, P, {P});
  b.memset(t, 1.0f, Engine::POOL);
  b.affineSelect(t, t, /*partitionMultiplier=*/1, /*freeMultiplier=*/-1, /*offset=*/0, 0.0f);
  b.affineSelect(t, t, /*partitionMultiplier=*/-1, /*freeMultiplier=*/1, /*offset=*/0, 0.0f);
  return t;
}

}  // namespace tessel::nc::kernels
