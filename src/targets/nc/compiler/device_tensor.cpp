// DeviceTensor placement and views; see device_tensor.h.
#include "targets/nc/compiler/device_tensor.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tessel::nc::compiler {

int64_t DeviceTensor::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t DeviceTensor::partitionExtent() const {
  int64_t total = 0;
  for (const tile::TileView &block : blocks) total += block.partitions();
  return total;
}

bool DeviceTensor::isStandard(int64_t axis) const {
  if (bands.count > 0) return false;
  if (axis < 0 || axis >= rank() || partitionBase != 0 || freeBase != 0) return false;
  if (axes[axis].partitionStride != 1 && shape[axis] > 1) return false;
  int64_t stride = 1;
  for (int64_t i = rank() - 1; i >= 0; --i) {
    if (i == axis) continue;
    if (shape[i] > 1 && (axes[i].freeStride != stride || axes[i].partitionStride != 0)) return false;
    stride *= shape[i];
  }
  return partitionExtent() >= shape[axis] && freeSize == stride;
}

int64_t DeviceTensor::partitionAxis() const {
  if (bands.count > 0) return -1;
  for (int64_t i = 0; i < rank(); ++i)
    if (axes[i].partitionStride == 1 && shape[i] > 1) return i;
  return -1;
}

tile::TileView DeviceTensor::partitions(int64_t start, int64_t count) const {
  int64_t first = 0;
  for (const tile::TileView &block : blocks) {
    if (start < first + block.partitions()) return block.partitionSlice(start - first, count);
    first += block.partitions();
  }
  // Out of range: let the DSL report it on the last block.
  return blocks.back().partitionSlice(start - (first - blocks.back().partitions()), count);
}

DeviceTensor bandPart(const DeviceTensor &tensor, int64_t band) {
  DeviceTensor part = tensor;
  part.bands = RowBands{};
  part.shape[2] = tensor.bands.rows;
  part.partitionBase += band * tensor.bands.stride;
  return part;
}

namespace {

/// The standard form's strides and sizes, without storage.
DeviceTensor standardLayout(const std::vector<int64_t> &shape, DType dtype, int64_t axis) {
  DeviceTensor t;
  t.shape = shape;
  t.dtype = dtype;
  t.axes.resize(shape.size());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    if (i == axis) continue;
    t.axes[i].freeStride = stride;
    stride *= shape[i];
  }
  t.freeSize = stride;
  if (!shape.empty()) t.axes[axis].partitionStride = 1;
  return t;
}

}  // namespace

DeviceTensor allocateStandard(tile::KernelBuilder &builder, const std::string &name, const std::vector<int64_t> &shape,
                              DType dtype, int64_t partitionAxis) {
  const int64_t axis = normalizeAxis(partitionAxis, static_cast<int64_t>(shape.size()));
  DeviceTensor t = standardLayout(shape, dtype, axis);
  const int64_t partitions = shape.empty() ? 1 : std::max<int64_t>(shape[axis], 1);
  const int64_t blockSize = builder.profile().partitions;
  // One element per partition (a decode step's row): the blocks side by side in one tile, so one
  // instruction covers them all (sideBySide).
  if (t.freeSize == 1 && partitions > blockSize && partitions % blockSize == 0) {
    tile::TileView storage;
    return allocateStandardInOneTile(builder, name, shape, dtype, axis, &storage);
  }
  for (int64_t start = 0; start < partitions; start += blockSize) {
    const int64_t count = std::min(blockSize, partitions - start);
    t.blocks.push_back(builder.sbuf(fmt::format("{}#{}", name, start / blockSize), dtype, count, {t.freeSize}));
  }
  return t;
}

DeviceTensor allocateStandardInOneTile(tile::KernelBuilder &builder, const std::string &name,
                                       const std::vector<int64_t> &shape, DType dtype, int64_t partitionAxis,
                                       tile::TileView *storage) {
  const int64_t axis = normalizeAxis(partitionAxis, static_cast<int64_t>(shape.size()));
  const int64_t P = builder.profile().partitions;
  int64_t freeSize = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (static_cast<int64_t>(i) != axis) freeSize *= shape[i];
  const int64_t partitions = shape.empty() ? 1 : shape[axis];
  const int64_t blocks = (partitions + P - 1) / P;
  *storage = builder.sbuf(name, dtype, std::min(P, partitions), {blocks * freeSize});
  DeviceTensor t = standardLayout(shape, dtype, axis);
  for (int64_t b = 0; b < blocks; ++b)
    t.blocks.push_back(storage->partitionSlice(0, std::min(P, partitions - b * P)).cols(b * freeSize, freeSize));
  return t;
}

std::optional<tile::TileView> sideBySide(const std::vector<tile::TileView> &columns, int64_t P) {
  if (columns.size() < 2) return std::nullopt;
  const tile::TileView &first = columns.front();
  for (size_t k = 0; k < columns.size(); ++k) {
    const tile::TileView &c = columns[k];
    if (c.tile() != first.tile() || c.partitionStart() != 0 || c.partitions() != P || c.freeSize() != 1 ||
        c.offsetElements() != first.offsetElements() + static_cast<int64_t>(k))
      return std::nullopt;
  }
  return first.pattern(0, {FreeDim{1, static_cast<uint32_t>(columns.size())}});
}

std::optional<DeviceTensor> reshapeView(const DeviceTensor &tensor, const std::vector<int64_t> &shape) {
  if (tensor.bands.count > 0) return std::nullopt;
  // Drop size-1 axes, then match groups of old and new axes with equal products; a group is
  // possible when its old axes chain (stride of each = size * stride of the next) in one space.
  struct Axis {
    int64_t size;
    AxisPlacement place;
  };
  std::vector<Axis> old;
  for (int64_t i = 0; i < tensor.rank(); ++i)
    if (tensor.shape[i] != 1) old.push_back({tensor.shape[i], tensor.axes[i]});
  DeviceTensor view = tensor;
  view.shape = shape;
  view.axes.assign(shape.size(), AxisPlacement{});
  size_t o = 0;
  size_t n = 0;
  while (n < shape.size() || o < old.size()) {
    if (n < shape.size() && shape[n] == 1) {
      ++n;
      continue;
    }
    if (n >= shape.size() || o >= old.size()) return std::nullopt;
    // Grow the two groups until their products match.
    size_t oEnd = o + 1, nEnd = n + 1;
    int64_t oProd = old[o].size, nProd = shape[n];
    while (oProd != nProd) {
      if (oProd < nProd) {
        if (oEnd >= old.size()) return std::nullopt;
        oProd *= old[oEnd++].size;
      } else {
        while (nEnd < shape.size() && shape[nEnd] == 1) ++nEnd;
        if (nEnd >= shape.size()) return std::nullopt;
        nProd *= shape[nEnd++];
      }
    }
    // The old group must be one strided run: inner stride then chained outward.
    const bool onPartitions = old[oEnd - 1].place.partitionStride != 0;
    auto strideOf = [&](const AxisPlacement &p) { return onPartitions ? p.partitionStride : p.freeStride; };
    for (size_t k = o; k < oEnd; ++k) {
      const bool kOnPartitions = old[k].place.partitionStride != 0;
      if (kOnPartitions != onPartitions) return std::nullopt;
      if (k + 1 < oEnd && strideOf(old[k].place) != old[k + 1].size * strideOf(old[k + 1].place)) return std::nullopt;
    }
    int64_t stride = strideOf(old[oEnd - 1].place);
    for (size_t k = nEnd; k-- > n;) {
      if (shape[k] == 1) continue;
      (onPartitions ? view.axes[k].partitionStride : view.axes[k].freeStride) = stride;
      stride *= shape[k];
    }
    o = oEnd;
    n = nEnd;
  }
  return view;
}

DeviceTensor transposeView(const DeviceTensor &tensor, const std::vector<int64_t> &perm) {
  DeviceTensor view = tensor;
  for (size_t i = 0; i < perm.size(); ++i) {
    view.shape[i] = tensor.shape[perm[i]];
    view.axes[i] = tensor.axes[perm[i]];
  }
  return view;
}

std::string describe(const DeviceTensor &tensor) {
  std::vector<std::string> axes;
  for (int64_t i = 0; i < tensor.rank(); ++i) {
    const AxisPlacement &a = tensor.axes[i];
    axes.push_back(a.partitionStride ? fmt::format("p{}", a.partitionStride) : fmt::format("f{}", a.freeStride));
  }
  return fmt::format("{}[{}] ({}) base p{} f{}, {} blocks x {} elements", dtypeName(tensor.dtype),
                     fmt::join(tensor.shape, ","), fmt::join(axes, ","), tensor.partitionBase, tensor.freeBase,
                     tensor.blocks.size(), tensor.freeSize) +
         (tensor.bands.count > 0 ? fmt::format(", rows in {} bands of {} from partition stride {} ({} tile rows, {} above)",
                                               tensor.bands.count, tensor.bands.rows, tensor.bands.stride,
                                               tensor.bands.tileRows, tensor.bands.top)
                                 : "");
}

}  // namespace tessel::nc::compiler
