// A fixed set of same-shape tiles used round-robin, for kernels that want an explicit
// multi-buffering depth. Each slot is one tile that lives for the whole kernel, so its place is fixed
// however other tiles come and go (no fragmentation), and the dependence analysis orders each reuse
// of a slot after its previous users: the number of slots is the buffering depth. PSUM tiles in a
// ring keep the banks a loop uses independent of allocation history.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "targets/nc/tile/dsl.h"

namespace tessel::nc::tile {

class TileRing {
 public:
  TileRing(MemSpace space, std::string name, DType dtype, int64_t partitions, std::vector<int64_t> freeShape,
           int64_t slots)
      : space_(space), name_(std::move(name)), dtype_(dtype), partitions_(partitions),
        freeShape_(std::move(freeShape)), slots_(slots) {}

  /// The next slot, created on first use.
  TileView next(KernelBuilder &builder) {
    if (static_cast<int64_t>(tiles_.size()) < slots_)
      tiles_.push_back(space_ == MemSpace::PSUM ? builder.psum(name_, dtype_, partitions_, freeShape_)
                                                : builder.sbuf(name_, dtype_, partitions_, freeShape_));
    TileView slot = tiles_[static_cast<size_t>(cursor_)];
    cursor_ = (cursor_ + 1) % slots_;
    return slot;
  }

 private:
  MemSpace space_;
  std::string name_;
  DType dtype_;
  int64_t partitions_;
  std::vector<int64_t> freeShape_;
  int64_t slots_, cursor_ = 0;
  std::vector<TileView> tiles_;
};

}  // namespace tessel::nc::tile
