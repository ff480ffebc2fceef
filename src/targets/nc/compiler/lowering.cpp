// LoweringContext and the op-lowering registry; see lowering.h. Moving activations between layouts and
// between SBUF and HBM lives here: loads of segment inputs, stores of outputs and scratch copies, and
// relayouts. A tensor whose last axis goes on partitions is loaded row-major (rows on partitions, one
// contiguous DMA chunk per row) and turned by PE transposes, since a DMA that scatters single
// elements runs at a small fraction of its bandwidth (section 9.4).
#include "targets/nc/compiler/lowering.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/memory_budget.h"

#include "targets/nc/isa/tile_rules.h"
#include "targets/nc/kernels/identity.h"
#include "targets/nc/kernels/runner.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/kernels/transpose.h"

namespace tessel::nc::compiler {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

/// Per-partition vectors (bias, scale) per pool tile: 1 KiB per partition, one DMA.
constexpr int64_t kVectorPoolColumns = 256;

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

/// (stride, count) pairs with size-1 dims dropped and chained dims merged, outermost first.
std::vector<FreeDim> mergeDims(std::vector<std::pair<int64_t, int64_t>> dims) {
  std::vector<FreeDim> merged;
  for (auto [stride, count] : dims) {
    if (count == 1) continue;
    if (!merged.empty() && merged.back().strideElements == stride * count) {
      merged.back().strideElements = stride;
      merged.back().count = static_cast<uint32_t>(merged.back().count * count);
      continue;
    }
    merged.push_back(FreeDim{stride, static_cast<uint32_t>(count)});
  }
  if (merged.empty()) merged.push_back(FreeDim{1, 1});
  return merged;
}

/// The default partition axis of a segment input: channels of an NCHW tensor, else the last axis.
int64_t defaultAxis(const std::vector<int64_t> &shape) { return shape.size() == 4 ? 1 : std::max<int64_t>(0, shape.size() - 1); }

/// Partitions of `t` as (global partition -> logical offsets of the partition axes); the axes on
/// partitions sorted by decreasing stride.
struct PartitionAxes {
  std::vector<int64_t> axes;
};

PartitionAxes partitionAxesOf(const DeviceTensor &t) {
  PartitionAxes p;
  for (int64_t i = 0; i < t.rank(); ++i)
    if (t.axes[i].partitionStride != 0 && t.shape[i] > 1) p.axes.push_back(i);
  std::sort(p.axes.begin(), p.axes.end(),
            [&](int64_t a, int64_t b) { return t.axes[a].partitionStride > t.axes[b].partitionStride; });
  return p;
}

std::vector<int64_t> countsOf(const std::vector<FreeDim> &dims) {
  std::vector<int64_t> counts;
  for (const FreeDim &d : dims) counts.push_back(d.count);
  return counts;
}

}  // namespace

std::vector<int64_t> hbmShape(const std::vector<int64_t> &shape) {
  if (shape.empty()) return {1};
  // Row-major storage: merging leading dims changes no element's place.
  std::vector<int64_t> merged(shape.begin(), shape.end());
  while (merged.size() > static_cast<size_t>(kMaxFreeDims)) {
    merged[1] *= merged[0];
    merged.erase(merged.begin());
  }
  return merged;
}

int64_t f32BlockBytes(const std::vector<int64_t> &sizes, int64_t partitionAxis) {
  const int64_t numel = std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
  return numel / sizes[static_cast<size_t>(partitionAxis)] * dtypeSizeBytes(DType::F32);
}

std::vector<int64_t> staticShape(const Value *value) {
  std::vector<int64_t> shape;
  for (const Dim &d : value->type().shape().dims()) shape.push_back(d.size);
  return shape;
}

LoweringContext::LoweringContext(KernelBuilder &builder, const LoweringOptions &options)
    : builder_(builder), options_(options) {}

DType LoweringContext::matmulDtype() const {
  return options_.autoCast == AutoCast::None ? DType::F32 : options_.castType;
}

DType LoweringContext::activationDtype() const {
  if (options_.autoCast != AutoCast::All) return DType::F32;
  // fp8 has too little range for activations; they stay in bf16 when matmuls use fp8.
  return options_.castType == DType::F8E4M3 ? DType::BF16 : options_.castType;
}

// ---- Moving data between HBM and SBUF -------------------------------------------------------------

namespace {

/// Loads row-major `src` (shape `shape`) into standard-form `dst` (axis `axis` on partitions).
void loadIntoStandard(LoweringContext &ctx, const DeviceTensor &dst, const HbmView &src, int64_t axis) {
  KernelBuilder &b = ctx.builder();
  const std::vector<int64_t> &shape = dst.shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t> strides = rowMajorStrides(shape);
  const int64_t P = ctx.profile().partitions;
  const int64_t rows = dst.freeSize;
  if (axis == rank - 1 && rows > 1 && shape[axis] > 1) {
    // Rows on partitions (contiguous DMA), then PE transposes of [rows, 128-column] blocks, a group
    // of one row tile each: each block's PSUM tile is then a quarter bank, and the PSUM rings of the
    // neighbouring matmuls keep their depth (a bank-wide group made BERT-base 2% slower).
    const int64_t cols = shape[axis];
    for (const kernels::Span &r : kernels::splitRange(rows, P)) {
      TileView rowTile = b.sbuf("in_rows", dst.dtype, r.count, {cols});
      b.load(rowTile, src.pattern(r.start * cols, {FreeDim{cols, static_cast<uint32_t>(r.count)},
                                                  FreeDim{1, static_cast<uint32_t>(cols)}}));
      const TileView group[] = {rowTile};
      kernels::emitTransposeGroup(b, "in", group, cols, [&](const kernels::Span &c) {
        return dst.partitions(c.start, c.count).cols(r.start, r.count);
      });
    }
    return;
  }
  for (size_t k = 0; k < dst.blocks.size(); ++k) {
    const int64_t first = static_cast<int64_t>(k) * P;
    const TileView &block = dst.blocks[k];
    std::vector<std::pair<int64_t, int64_t>> dims;
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis) dims.push_back({strides[i], shape[i]});
    std::vector<FreeDim> free = mergeDims(dims);
    std::vector<FreeDim> hbmDims{FreeDim{rank ? strides[axis] : 1, static_cast<uint32_t>(block.partitions())}};
    hbmDims.insert(hbmDims.end(), free.begin(), free.end());
    std::vector<FreeDim> tileDims;
    int64_t stride = 1;
    std::vector<FreeDim> reversed(free.rbegin(), free.rend());
    for (const FreeDim &d : reversed) {
      tileDims.insert(tileDims.begin(), FreeDim{stride, d.count});
      stride *= d.count;
    }
    b.load(block.pattern(0, tileDims), src.pattern(rank ? first * strides[axis] : 0, hbmDims));
  }
}

}  // namespace

namespace {

/// T6 (section 4.2): whether `count` partitions may start at partition `start` of a block.
bool partitionStartAllowed(int64_t start, int64_t count, int64_t P) {
  return start % partitionStartAlignment(count, P) == 0;
}

/// Global partitions [g, g + count) of `t` (free pattern `dims` from t.freeBase) on partitions
/// [0, count) of a new tile, row-major over `dims`, for a run whose start T6 forbids (a slice along
/// the partition axis): the window from the block's first partition, which any count may start at,
/// goes to HBM scratch, and the rows wanted come back.
TileView movedToPartitionZero(LoweringContext &ctx, const DeviceTensor &t, int64_t g, int64_t count,
                              const std::vector<FreeDim> &dims) {
  KernelBuilder &b = ctx.builder();
  const int64_t local = g % ctx.profile().partitions, window = local + count;
  int64_t freeSize = 1;
  for (const FreeDim &d : dims) freeSize *= d.count;
  HbmView scratch = b.output(fmt::format("scratch/partition-move#{}", b.kernel().tensors.size()), t.dtype,
                             {window, freeSize});
  b.store(scratch, t.partitions(g - local, window).pattern(t.freeBase, dims));
  TileView moved = b.sbuf("partition-move", t.dtype, count, {freeSize});
  b.load(moved, scratch.pattern(local * freeSize, {FreeDim{freeSize, static_cast<uint32_t>(count)},
                                                   FreeDim{1, static_cast<uint32_t>(freeSize)}}));
  std::vector<FreeDim> rowMajor(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    rowMajor[i] = FreeDim{stride, dims[i].count};
    stride *= dims[i].count;
  }
  return moved.pattern(0, rowMajor);
}

}  // namespace

/// Stores an affine DeviceTensor to `dst` from element `base` on, with HBM strides `strides`: one DMA
/// per run of partitions along the innermost partition axis.
static void storeAffine(LoweringContext &ctx, const DeviceTensor &t, const HbmView &dst, const std::vector<int64_t> &strides,
                        int64_t base) {
  KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  const PartitionAxes pa = partitionAxesOf(t);
  // Free axes sorted by decreasing free stride: the tile pattern and the HBM pattern.
  std::vector<int64_t> freeAxes;
  for (int64_t i = 0; i < t.rank(); ++i)
    if (t.axes[i].partitionStride == 0 && t.shape[i] > 1) freeAxes.push_back(i);
  std::sort(freeAxes.begin(), freeAxes.end(),
            [&](int64_t a, int64_t c) { return t.axes[a].freeStride > t.axes[c].freeStride; });
  std::vector<FreeDim> tileDims, hbmFree;
  for (int64_t a : freeAxes) {
    const FreeDim tileDim{t.axes[a].freeStride, static_cast<uint32_t>(t.shape[a])};
    const FreeDim hbmDim{strides[a], static_cast<uint32_t>(t.shape[a])};
    // An axis that continues the one before it on both sides merges with it (patterns have <= 4 dims).
    if (!tileDims.empty() && tileDims.back().strideElements == tileDim.strideElements * tileDim.count &&
        hbmFree.back().strideElements == hbmDim.strideElements * hbmDim.count) {
      tileDims.back() = FreeDim{tileDim.strideElements, tileDims.back().count * tileDim.count};
      hbmFree.back() = FreeDim{hbmDim.strideElements, hbmFree.back().count * hbmDim.count};
      continue;
    }
    tileDims.push_back(tileDim);
    hbmFree.push_back(hbmDim);
  }
  if (tileDims.empty()) {
    tileDims.push_back(FreeDim{1, 1});
    hbmFree.push_back(FreeDim{1, 1});
  }
  // Iterate the partition axes except the innermost; the innermost forms runs.
  const int64_t inner = pa.axes.empty() ? -1 : pa.axes.back();
  const int64_t innerCount = inner < 0 ? 1 : t.shape[inner];
  const int64_t innerPStride = inner < 0 ? 1 : t.axes[inner].partitionStride;
  int64_t outerCount = 1;
  for (size_t k = 0; k + 1 < pa.axes.size(); ++k) outerCount *= t.shape[pa.axes[k]];
  for (int64_t o = 0; o < outerCount; ++o) {
    int64_t rem = o, partition = t.partitionBase, hbmOffset = 0;
    for (int64_t k = static_cast<int64_t>(pa.axes.size()) - 2; k >= 0; --k) {
      const int64_t a = pa.axes[static_cast<size_t>(k)];
      const int64_t idx = rem % t.shape[a];
      rem /= t.shape[a];
      partition += idx * t.axes[a].partitionStride;
      hbmOffset += idx * strides[a];
    }
    // Split the run of the innermost axis at block boundaries (and per partition when its stride is not 1).
    for (int64_t i = 0; i < innerCount;) {
      const int64_t g = partition + i * innerPStride;
      int64_t run = 1;
      if (innerPStride == 1) run = std::min(innerCount - i, P - g % P);
      TileView src = partitionStartAllowed(g % P, run, P) ? t.partitions(g, run).pattern(t.freeBase, tileDims)
                                                           : movedToPartitionZero(ctx, t, g, run, tileDims);
      std::vector<FreeDim> hbmDims{FreeDim{inner < 0 ? 1 : strides[inner], static_cast<uint32_t>(run)}};
      hbmDims.insert(hbmDims.end(), hbmFree.begin(), hbmFree.end());
      b.store(dst.pattern(base + hbmOffset + (inner < 0 ? 0 : i * strides[inner]), hbmDims), src);
      i += run;
    }
  }
}

/// Stores any DeviceTensor to row-major `dst`; a banded one band by band, each band its own rows.
static void storeAny(LoweringContext &ctx, const DeviceTensor &t, const HbmView &dst) {
  const std::vector<int64_t> strides = rowMajorStrides(t.shape);
  if (t.bands.count == 0) return storeAffine(ctx, t, dst, strides, 0);
  for (int64_t band = 0; band < t.bands.count; ++band)
    storeAffine(ctx, bandPart(t, band), dst, strides, band * t.bands.rows * strides[2]);
}

Expected<DeviceTensor> LoweringContext::relayout(const DeviceTensor &tensor, int64_t axis, const std::string &name) {
  HbmView scratch = builder_.output(fmt::format("scratch/{}#{}", name, scratchCount_++), tensor.dtype, hbmShape(tensor.shape));
  storeAny(*this, tensor, scratch);
  DeviceTensor out = allocateStandard(builder_, name, tensor.shape, tensor.dtype, axis);
  loadIntoStandard(*this, out, scratch, axis);
  return out;
}

// ---- Activations ----------------------------------------------------------------------------------

void LoweringContext::bindInput(const Value *value, DType dtype) {
  inputs_[value] = builder_.input(value->name(), dtype, hbmShape(staticShape(value)));
}

Expected<DeviceTensor> LoweringContext::activation(const Value *value) {
  if (auto it = activations_.find(value); it != activations_.end()) return it->second;
  if (value->hasInitializer()) {
    // A constant read as an activation (a Concat's class token, a full-shape addend): loaded once.
    const std::vector<int64_t> shape = staticShape(value);
    HbmView hbm = constantHbm(value->name(), DType::F32, shape, constantFloats(value));
    DeviceTensor t = loadStandard(value->name(), hbm, shape, defaultAxis(shape), activationDtype());
    noteLayout(fmt::format("load constant {}: {}", value->name(), describe(t)));
    activations_[value] = t;
    return t;
  }
  if (auto spilled = spilled_.find(value); spilled != spilled_.end()) {
    const std::vector<int64_t> shape = staticShape(value);
    DeviceTensor t = loadStandard(value->name() + "/reload", spilled->second, shape, roomyAxis(shape, defaultAxis(shape)),
                                  activationDtype());
    noteLayout(fmt::format("reload spilled {}: {}", value->name(), describe(t)));
    activations_[value] = t;
    return t;
  }
  auto input = inputs_.find(value);
  if (input == inputs_.end()) {
    return makeError(ErrorCode::Internal, "value '{}' has no device form (its producer was not lowered)", value->name());
  }
  const std::vector<int64_t> shape = staticShape(value);
  const int64_t axis = roomyAxis(shape, defaultAxis(shape));
  DeviceTensor t = allocateStandard(builder_, value->name(), shape, activationDtype(), axis);
  loadIntoStandard(*this, t, input->second, axis);
  noteLayout(fmt::format("load input {} (default axis {} on partitions): {}", value->name(), axis, describe(t)));
  activations_[value] = t;
  return t;
}

std::optional<DeviceTensor> LoweringContext::standardByCopy(const DeviceTensor &t, int64_t axis) {
  // Possible when `axis` alone is on partitions (stride 1) starting at a block boundary: the blocks
  // keep their partitions, and only the free-dim pattern changes (a slice, a permutation of the free
  // axes), which an engine copy applies; or nothing changes but which blocks are used.
  const int64_t P = profile().partitions;
  if (t.bands.count > 0 || t.axes[axis].partitionStride != 1 || t.partitionBase % P != 0) return std::nullopt;
  std::vector<FreeDim> dims;
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (i == axis || t.shape[i] == 1) continue;
    if (t.axes[i].partitionStride != 0) return std::nullopt;
    dims.push_back(FreeDim{t.axes[i].freeStride, static_cast<uint32_t>(t.shape[i])});
  }
  // Merge chained dims (outer stride == inner stride * inner count).
  std::vector<FreeDim> merged;
  for (const FreeDim &d : dims) {
    if (!merged.empty() && merged.back().strideElements == d.strideElements * d.count) {
      merged.back() = FreeDim{d.strideElements, merged.back().count * d.count};
    } else {
      merged.push_back(d);
    }
  }
  if (merged.empty()) merged.push_back(FreeDim{1, 1});
  if (merged.size() > static_cast<size_t>(kMaxFreeDims)) return std::nullopt;
  DeviceTensor sliced = t;
  sliced.blocks.clear();
  const int64_t first = t.partitionBase / P;
  for (int64_t start = 0; start < t.shape[axis]; start += P)
    sliced.blocks.push_back(t.blocks[static_cast<size_t>(first + start / P)].partitionSlice(0, std::min(P, t.shape[axis] - start)));
  sliced.partitionBase = 0;
  if (t.freeBase == 0 && merged.size() == 1 && merged[0].strideElements == 1 && merged[0].count == t.freeSize) {
    for (tile::TileView &block : sliced.blocks) block = block.cols(0, t.freeSize);
    return sliced;  // Already standard: only the blocks moved.
  }
  DeviceTensor out = allocateStandard(builder_, "relayout", t.shape, t.dtype, axis);
  for (size_t k = 0; k < out.blocks.size(); ++k)
    builder_.copy(out.blocks[k].reshapeFree(merged.size() == 1 ? std::vector<int64_t>{merged[0].count} : countsOf(merged)),
                  sliced.blocks[k].pattern(t.freeBase, merged));
  return out;
}

bool LoweringContext::isUnloadedInput(const Value *value) const {
  return inputs_.count(value) && !activations_.count(value) && !spilled_.count(value);
}

Expected<DeviceTensor> LoweringContext::standard(const Value *value, int64_t axis) {
  if (isUnloadedInput(value)) {
    const std::vector<int64_t> shape = staticShape(value);
    DeviceTensor t = loadStandard(value->name(), inputs_.at(value), shape, axis, activationDtype());
    noteLayout(fmt::format("load input {} (axis {} on partitions, as its first reader wants): {}", value->name(),
                           normalizeAxis(axis, t.rank()), describe(t)));
    activations_[value] = t;
    return t;
  }
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, activation(value));
  axis = normalizeAxis(axis, t.rank());
  if (t.rank() == 0 || t.isStandard(axis)) return t;
  // The relayouts move blocks to other places: whole ones.
  if (t.shardedCores > 1) {
    TESSEL_ASSIGN_OR_RETURN(t, unsplit(value));
  }
  auto key = std::make_pair(value, axis);
  if (auto it = standardCache_.find(key); it != standardCache_.end()) return it->second;
  DeviceTensor out;
  const char *how = "";
  if (auto moved = standardByCopy(t, axis)) {
    out = *moved;
    const bool sameTiles = !out.blocks.empty() && std::any_of(t.blocks.begin(), t.blocks.end(), [&](const TileView &b) {
      return b.tile() == out.blocks[0].tile();
    });
    how = sameTiles ? "taking its blocks as they are, no copy" : "an engine copy of the free pattern";
  } else if (auto input = inputs_.find(value); input != inputs_.end()) {
    out = allocateStandard(builder_, value->name(), t.shape, t.dtype, axis);
    loadIntoStandard(*this, out, input->second, axis);
    how = "a second load of the stage input";
  } else {
    TESSEL_ASSIGN_OR_RETURN(out, relayout(t, axis, value->name()));
    how = "a round trip through HBM";
  }
  noteLayout(fmt::format("relayout {} to axis {} on partitions by {}: {} -> {}", value->name(), axis, how, describe(t),
                         describe(out)),
             /*relayout=*/true);
  standardCache_[key] = out;
  return out;
}

Expected<DeviceTensor> LoweringContext::standardAs(const Value *value, int64_t axis, DType dtype) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, standard(value, axis));
  if (t.dtype == dtype) return t;
  axis = normalizeAxis(axis, t.rank());
  auto key = std::make_tuple(value, axis, dtype);
  if (auto it = castCache_.find(key); it != castCache_.end()) return it->second;
  DeviceTensor out = allocateStandard(builder_, value->name() + "/cast", t.shape, dtype, axis);
  noteLayout(fmt::format("cast copy of {} to {}", value->name(), dtypeName(dtype)));
  out.shardedCores = t.shardedCores;
  for (size_t k = 0; k < t.blocks.size(); ++k)  // A split tensor: only this core's blocks hold data.
    if (t.shardedCores == 1 || static_cast<int>(k) % t.shardedCores == options_.core) builder_.copy(out.blocks[k], t.blocks[k]);
  castCache_[key] = out;
  return out;
}

Expected<DeviceTensor> LoweringContext::unsplit(const Value *value) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, activation(value));
  if (t.shardedCores <= 1) return t;
  for (size_t k = 0; k < t.blocks.size(); ++k) {
    if (static_cast<int>(k) % t.shardedCores != options_.core) builder_.memset(t.blocks[k], 0.0f);
    builder_.allReduce(t.blocks[k], AluOp::Add, t.shardedCores);
  }
  noteLayout(fmt::format("{} gathered from its {} cores (all_reduce per block)", value->name(), t.shardedCores));
  t.shardedCores = 1;
  activations_[value] = t;
  return t;
}

void LoweringContext::define(const Value *value, DeviceTensor tensor) {
  noteLayout(fmt::format("{}: {}{}", value->name(), describe(tensor),
                         tensor.shardedCores > 1 ? fmt::format(", split over {} cores", tensor.shardedCores) : ""));
  activations_[value] = std::move(tensor);
}

DeviceTensor LoweringContext::allocate(const Value *value, int64_t partitionAxis, std::optional<DType> dtype) {
  const std::vector<int64_t> shape = staticShape(value);
  return allocateStandard(builder_, value->name(), shape, dtype.value_or(activationDtype()),
                          normalizeAxis(partitionAxis, static_cast<int64_t>(shape.size())));
}

int64_t LoweringContext::bytesPerPartition(const std::vector<int64_t> &shape, int64_t axis) const {
  const int64_t P = profile().partitions;
  const int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  return (shape[axis] + P - 1) / P * (numel / shape[axis]) * dtypeSizeBytes(activationDtype());
}

bool LoweringContext::crowdsSbuf(const std::vector<int64_t> &shape, int64_t axis) const {
  return bytesPerPartition(shape, axis) * 4 > static_cast<int64_t>(profile().sbuf.bytesPerPartition);
}

int64_t LoweringContext::roomyAxis(const std::vector<int64_t> &shape, int64_t axis) const {
  if (shape.empty() || !crowdsSbuf(shape, axis)) return axis;
  int64_t best = axis;
  for (int64_t a = 0; a < static_cast<int64_t>(shape.size()); ++a)
    if (bytesPerPartition(shape, a) < bytesPerPartition(shape, best)) best = a;
  return best;
}

Status LoweringContext::spill(const Value *value) {
  auto it = activations_.find(value);
  if (it == activations_.end() || it->second.shardedCores > 1) return Status::success();
  if (!hbmCache_.count(value) && !inputs_.count(value)) {
    // Stored in its SBUF dtype; the reload (activation()) reads it back in the activation dtype.
    const DeviceTensor &t = it->second;
    HbmView scratch = builder_.output(fmt::format("spill/{}#{}", value->name(), scratchCount_++), t.dtype, hbmShape(t.shape));
    storeAny(*this, t, scratch);
    hbmCache_[value] = scratch;
  }
  spilled_[value] = inputs_.count(value) ? inputs_.at(value) : hbmCache_.at(value);
  activations_.erase(value);
  for (auto c = standardCache_.begin(); c != standardCache_.end();) c = c->first.first == value ? standardCache_.erase(c) : std::next(c);
  for (auto c = castCache_.begin(); c != castCache_.end();) c = std::get<0>(c->first) == value ? castCache_.erase(c) : std::next(c);
  return Status::success();
}

std::map<int32_t, int64_t> LoweringContext::sbufTilesOf(const Value *value) const {
  std::map<int32_t, int64_t> tiles;
  auto it = activations_.find(value);
  if (it == activations_.end()) return tiles;
  for (const TileView &block : it->second.blocks) {
    const tile::TileDecl &decl = builder_.kernel().tiles[static_cast<size_t>(block.tile())];
    int64_t elements = 1;
    for (int64_t d : decl.freeShape) elements *= d;
    tiles[block.tile()] = elements * dtypeSizeBytes(decl.dtype);
  }
  return tiles;
}

bool LoweringContext::canOverwrite(const Value *value, const DeviceTensor &tensor) const {
  if (!readAfter_ || readAfter_(value) || tensor.shardedCores > 1) return false;
  std::set<int32_t> tiles;
  for (const TileView &block : tensor.blocks) tiles.insert(block.tile());
  auto sharesTile = [&](const DeviceTensor &t) {
    return std::any_of(t.blocks.begin(), t.blocks.end(), [&](const TileView &b) { return tiles.count(b.tile()) > 0; });
  };
  for (const auto &[v, t] : activations_)
    if (v != value && readAfter_(v) && sharesTile(t)) return false;
  for (const auto &[key, t] : standardCache_)
    if (key.first != value && readAfter_(key.first) && sharesTile(t)) return false;
  for (const auto &[key, t] : castCache_)
    if (std::get<0>(key) != value && readAfter_(std::get<0>(key)) && sharesTile(t)) return false;
  return true;
}

int LoweringContext::launchRegister(const Value *value) const {
  auto it = launchRegisters_.find(value);
  return it == launchRegisters_.end() ? -1 : it->second;
}

const Value *LoweringContext::inPlaceInputOf(const Value *output) const {
  auto it = inPlace_.find(output);
  return it == inPlace_.end() ? nullptr : it->second;
}

Expected<HbmView> LoweringContext::hbmOf(const Value *value) {
  if (auto it = inputs_.find(value); it != inputs_.end()) return it->second;
  if (auto it = hbmCache_.find(value); it != hbmCache_.end()) return it->second;
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, activation(value));
  HbmView scratch = builder_.output(fmt::format("scratch/{}#{}", value->name(), scratchCount_++), t.dtype, hbmShape(t.shape));
  storeAny(*this, t, scratch);
  hbmCache_[value] = scratch;
  return scratch;
}

DeviceTensor LoweringContext::loadStandard(const std::string &name, const HbmView &src,
                                          const std::vector<int64_t> &shape, int64_t axis, DType dtype) {
  axis = normalizeAxis(axis, static_cast<int64_t>(shape.size()));
  DeviceTensor t = allocateStandard(builder_, name, shape, dtype, axis);
  loadIntoStandard(*this, t, src, axis);
  return t;
}

/// Columns of one row tile when storeToHbm turns features on partitions back to rows: 16 KiB of f32
/// per partition, a whole-row store of every model but an LM head's vocabulary.
constexpr int64_t kStoreRowColumns = 4096;

Status storeToHbm(LoweringContext &ctx, const DeviceTensor &t, const HbmView &dst) {
  // A split tensor's other blocks are on the other cores: only a split-aware reader may take it.
  if (t.shardedCores > 1)
    return makeError(ErrorCode::UnsupportedOp, "a tensor split over {} cores leaves the device stage", t.shardedCores);
  KernelBuilder &b = ctx.builder();
  const int64_t axis = t.partitionAxis();
  const int64_t P = ctx.profile().partitions;
  if (axis == t.rank() - 1 && t.isStandard(axis)) {
    if (std::optional<TileView> columns = t.freeSize == 1 ? sideBySide(t.blocks, P) : std::nullopt) {
      // One row of features on partitions (a decode step's logits): block k's feature p is element
      // 128 k + p, so a direct store writes 4-byte runs. PE transposes up to 128 blocks at a time to
      // a block per partition, then each partition stores 128 contiguous features.
      const TileView blocks[] = {*columns};
      std::vector<std::pair<kernels::Span, TileView>> rowTiles;
      kernels::emitTransposeGroup(b, "out", blocks, static_cast<int64_t>(t.blocks.size()), [&](const kernels::Span &g) {
        rowTiles.emplace_back(g, b.sbuf("out_rows", t.dtype, g.count, {P}));
        return rowTiles.back().second;
      });
      for (const auto &[g, rowTile] : rowTiles)
        b.store(dst.pattern(g.start * P, {FreeDim{P, static_cast<uint32_t>(g.count)}, FreeDim{1, static_cast<uint32_t>(P)}}),
                rowTile);
      return Status::success();
    }
  }
  if (axis == t.rank() - 1 && t.isStandard(axis) && t.freeSize > 1) {
    // Features on partitions: PE transposes back to rows on partitions, then contiguous stores, in
    // column chunks of whole partition blocks so the row tile stays small (an LM head's 128256
    // logits would take 501 KiB per partition whole).
    const int64_t cols = t.shape[axis], rows = t.freeSize;
    const int64_t chunk = std::max<int64_t>(P, kStoreRowColumns / P * P);
    for (const kernels::Span &r : kernels::splitRange(rows, P)) {
      for (const kernels::Span &cc : kernels::splitRange(cols, chunk)) {
        TileView rowTile = b.sbuf("out_rows", t.dtype, r.count, {cc.count});
        for (const kernels::Span &c : kernels::splitRange(cc.count, P)) {
          // One block of features (the transpose's source rows) per group, as loads do.
          const TileView features[] = {t.partitions(cc.start + c.start, c.count).cols(r.start, r.count)};
          kernels::emitTransposeGroup(b, "out", features, r.count,
                                      [&](const kernels::Span &) { return rowTile.cols(c.start, c.count); });
        }
        b.store(dst.pattern(r.start * cols + cc.start, {FreeDim{cols, static_cast<uint32_t>(r.count)},
                                                        FreeDim{1, static_cast<uint32_t>(cc.count)}}),
                rowTile);
      }
    }
    return Status::success();
  }
  storeAny(ctx, t, dst);
  return Status::success();
}

// ---- Constants ------------------------------------------------------------------------------------

const Tensor *LoweringContext::constant(const Value *value) const {
  return value && value->hasInitializer() ? &value->initializer() : nullptr;
}

std::vector<float> LoweringContext::constantFloats(const Value *value) const {
  const Tensor &t = value->initializer();
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) values[static_cast<size_t>(i)] = static_cast<float>(t.scalarAsDouble(i));
  return values;
}

HbmView LoweringContext::constantHbm(const std::string &name, DType dtype, const std::vector<int64_t> &shape,
                                     std::vector<float> values) {
  HbmView view = builder_.constant(name, dtype, hbmShape(shape));
  constants_.push_back(ConstantData{view.tensor(), dtype, std::move(values), nullptr});
  return view;
}

tile::HbmView LoweringContext::constantHbm(const std::string &name, DType dtype, const std::vector<int64_t> &shape,
                                           const std::string &recipe,
                                           const std::function<std::vector<float>()> &values) {
  // Encoded at once: a model's weights are held in the narrow type, never as a float copy.
  ConstantCache *cache = options_.constantCache;
  const std::string key = cache ? fmt::format("{}|{}|{}", recipe, dtypeName(dtype), fmt::join(shape, "x")) : "";
  std::shared_ptr<const std::vector<uint8_t>> bytes = cache ? cache->find(key) : nullptr;
  if (!bytes) {
    bytes = std::make_shared<const std::vector<uint8_t>>(kernels::encodeValues(dtype, values()));
    if (cache) cache->add(key, bytes);
  }
  HbmView view = builder_.constant(name, dtype, hbmShape(shape));
  constants_.push_back(ConstantData{view.tensor(), dtype, {}, std::move(bytes)});
  return view;
}

std::shared_ptr<const std::vector<uint8_t>> ConstantCache::find(const std::string &key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = bytes_.find(key);
  return it == bytes_.end() ? nullptr : it->second.lock();
}

void ConstantCache::add(const std::string &key, const std::shared_ptr<const std::vector<uint8_t>> &bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::has_single_bit(bytes_.size())) std::erase_if(bytes_, [](const auto &entry) { return entry.second.expired(); });
  bytes_.insert_or_assign(key, bytes);
}

std::vector<TileView> LoweringContext::channelVector(const std::vector<float> &values) {
  const int64_t P = profile().partitions;
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<TileView> tiles;
  for (const kernels::Span &s : kernels::splitRange(n, P)) {
    if (!vectorPool_ || vectorPool_->used == kVectorPoolColumns) {
      // The pool's values are filled in as vectors join it; the image is written after lowering.
      HbmView hbm = constantHbm(fmt::format("vectors#{}", scratchCount_++), DType::F32, {P, kVectorPoolColumns},
                                std::vector<float>(static_cast<size_t>(P * kVectorPoolColumns), 0.0f));
      TileView pool = builder_.sbuf("vectors", DType::F32, P, {kVectorPoolColumns});
      builder_.load(pool, hbm);
      vectorPool_ = VectorPool{pool, constants_.size() - 1, 0};
    }
    const int64_t column = vectorPool_->used++;
    std::vector<float> &data = constants_[vectorPool_->constant].values;
    for (int64_t p = 0; p < s.count; ++p)
      data[static_cast<size_t>(p * kVectorPoolColumns + column)] = values[static_cast<size_t>(s.start + p)];
    tiles.push_back(vectorPool_->tile.partitionSlice(0, s.count).cols(column, 1));
  }
  return tiles;
}

TileView LoweringContext::constantTile(float value, DType dtype) {
  auto key = std::make_pair(value, dtype);
  if (auto it = constantTiles_.find(key); it != constantTiles_.end()) return it->second;
  const int64_t P = profile().partitions;
  TileView t = builder_.sbuf(fmt::format("const{}", value), dtype, P, {P});
  builder_.memset(t, value);
  constantTiles_[key] = t;
  return t;
}

TileView LoweringContext::broadcastRow(const TileView &row, const std::string &name) {
  const int64_t P = profile().partitions, n = row.freeSize();
  TileView sums = builder_.psum(name + "/broadcast", DType::F32, P, {n});
  builder_.matmul(sums, constantTile(1.0f, DType::F32).partitionSlice(0, 1), row, /*accumulate=*/false);
  TileView everywhere = builder_.sbuf(name + "/everywhere", DType::F32, P, {n});
  builder_.copy(everywhere, sums);
  return everywhere;
}

TileView LoweringContext::identity(DType dtype) {
  if (auto it = identities_.find(dtype); it != identities_.end()) return it->second;
  return identities_[dtype] = kernels::makeIdentity(builder_, fmt::format("identity.{}", dtypeName(dtype)), dtype);
}

Status LoweringContext::unsupported(const Node &node, const std::string &reason) const {
  Diagnostic diag = makeError(ErrorCode::UnsupportedOp, "the accelerator cannot run it: {}", reason);
  diag.loc.node = node.name();
  diag.loc.opType = node.opType();
  return diag;
}

// ---- Registry -------------------------------------------------------------------------------------

namespace {

const std::vector<OpLowering> &registry() {
  static const std::vector<OpLowering> all = [] {
    std::vector<OpLowering> v;
#define TESSEL_NC_EMITTER_FAMILY(family)                  \
  {                                                        \
    std::vector<OpLowering> part = family##Lowerings();    \
    v.insert(v.end(), part.begin(), part.end());           \
  }
#include "emitter_families.inc"
#undef TESSEL_NC_EMITTER_FAMILY
    return v;
  }();
  return all;
}

}  // namespace

const OpLowering *findOpLowering(std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx") domain = "";
  for (const OpLowering &l : registry())
    if (l.domain == domain && l.opType == opType) return &l;
  return nullptr;
}

const OpLowering *findOpLowering(const Node &node) { return findOpLowering(node.domain(), node.opType()); }

namespace {

// Why an op never runs on the accelerator; host_ops.def gives each such op one of these.
constexpr std::string_view kHostControlFlow =
    "control flow: its subgraphs run on the host, planned by the cpu target";
constexpr std::string_view kHostNoKernel = "no accelerator kernel for this op yet";
constexpr std::string_view kHostIntegerResult =
    "its result is an integer or bool tensor; device tensors are float32";
constexpr std::string_view kHostCast =
    "a dtype conversion; device tensors are float32 (auto-cast converts inside the kernels)";
constexpr std::string_view kHostQuantized = "integer (quantized) arithmetic has no accelerator kernel yet";
constexpr std::string_view kHostDataDependentShape =
    "its output shape depends on the data; device programs have static shapes";
constexpr std::string_view kHostShapeComputation =
    "a constant or shape computation: folded at compile time when its inputs are constant, else run on "
    "the host";
constexpr std::string_view kHostFoldedByPasses =
    "folded into its neighbouring convolution or matmul by the graph passes; one with no such neighbour "
    "runs on the host";
constexpr std::string_view kHostSequence = "sequences and optionals are host lists";
constexpr std::string_view kHostString = "string tensors have no device form";
constexpr std::string_view kHostRandom = "a random generator: its stream must equal the host's";
constexpr std::string_view kHostTraining = "a training-update op";

constexpr OpReason kHostOnlyOps[] = {
#define NC_HOST(op, domain, reason) {domain, #op, reason},
#include "targets/nc/compiler/host_ops.def"
#undef NC_HOST
};

}  // namespace

std::span<const OpReason> hostOnlyOps() { return kHostOnlyOps; }

std::string_view hostOnlyReason(std::string_view domain, std::string_view opType) {
  return findOpReason(kHostOnlyOps, domain, opType);
}

bool isLaunchValue(const Value &value) {
  const Type &type = value.type();
  if (!value.isGraphInput() || value.hasInitializer() || !type.isTensor() || type.dtype() != tessel::DType::Int64 ||
      !type.shape().isStatic())
    return false;
  int64_t elements = 1;
  for (const Dim &d : type.shape().dims()) elements *= d.size;
  return elements == 1;
}

namespace {

/// A model may declare any sizes: a tensor larger than a core's HBM cannot be placed.
std::string checkFitsHbm(const Node &node, const MachineProfile &profile) {
  const uint64_t hbmBytes = static_cast<uint64_t>(profile.hbm.bytesPerCore);
  std::vector<const Value *> values(node.inputs().begin(), node.inputs().end());
  values.insert(values.end(), node.outputs().begin(), node.outputs().end());
  for (const Value *v : values) {
    if (!v || !v->type().isTensor() || !v->type().shape().isStatic()) continue;
    const std::vector<int64_t> sizes = *v->type().shape().sizes();
    const std::optional<uint64_t> bytes = checkedByteCount(sizes, 4);
    if (!bytes || *bytes > hbmBytes)
      return fmt::format("tensor '{}' [{}] needs {} of HBM; one {} core has {}", v->name(), fmt::join(sizes, ","),
                         bytes ? formatBytes(*bytes) : "more than 2^64 bytes", profile.name, formatBytes(hbmBytes));
  }
  return "";
}

/// An instruction of a node reads a block of each input and writes a block of its output, all in
/// SBUF at once (the tile allocator spills the other blocks): a node whose blocks cannot fit together
/// even in their most spread layouts cannot run.
std::string checkFitsSbuf(const Node &node, const MachineProfile &profile) {
  int64_t bytes = 0;
  std::vector<const Value *> values;
  for (const Value *in : node.inputs())
    if (in && !in->hasInitializer() && !isLaunchValue(*in) && std::find(values.begin(), values.end(), in) == values.end())
      values.push_back(in);
  for (const Value *out : node.outputs())
    if (out) values.push_back(out);
  for (const Value *v : values) {
    const std::vector<int64_t> sizes = v->type().shape().sizes().value_or(std::vector<int64_t>{});
    // The most spread layout: the largest axis on the partitions.
    if (!sizes.empty()) bytes += f32BlockBytes(sizes, std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
  }
  const int64_t sbuf = profile.sbuf.bytesPerPartition;
  if (bytes <= sbuf) return "";
  return fmt::format("a block of each of its inputs and outputs needs at least {} bytes per partition of SBUF "
                     "together; {} has {}",
                     bytes, profile.name, sbuf);
}

}  // namespace

std::string deviceUnsupportedReason(const Node &node, const LoweringOptions &options) {
  const OpLowering *lowering = findOpLowering(node);
  if (!lowering) {
    std::string_view reason = hostOnlyReason(node.domain(), node.opType());
    return reason.empty() ? fmt::format("no accelerator lowering for {}", node.opType()) : std::string(reason);
  }
  auto checkValue = [](const Value *v, const char *what) -> std::string {
    if (!v) return "";
    const Type &type = v->type();
    if (!type.isTensor() || type.dtype() != tessel::DType::Float32)
      return fmt::format("{} '{}' is {}, not a float32 tensor", what, v->name(), type.str());
    if (!type.shape().rankKnown()) return fmt::format("{} '{}' has an unknown rank", what, v->name());
    for (const Dim &d : type.shape().dims())
      if (!d.isStatic()) return fmt::format("{} '{}' has a dynamic shape {}", what, v->name(), type.str());
    for (const Dim &d : type.shape().dims())  // SBUF and HBM tensors have no empty dims.
      if (d.size == 0) return fmt::format("{} '{}' is empty ({})", what, v->name(), type.str());
    return "";
  };
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Value *in = node.input(i);
    if (in && static_cast<int>(i) == lowering->launchInput) {
      if (!isLaunchValue(*in))
        return fmt::format("input '{}' is {}; the accelerator takes it as a launch register, which needs a graph "
                           "input of one int64",
                           in->name(), in->type().str());
      continue;
    }
    // Integer shape operands (Reshape's shape, ...) and empty constants (Resize's absent roi) are read at
    // compile time, if at all.
    if (in && in->hasInitializer() && (in->type().dtype() != tessel::DType::Float32 || in->initializer().numel() == 0))
      continue;
    if (std::string why = checkValue(in, "input"); !why.empty()) return why;
  }
  for (const Value *out : node.outputs())
    if (std::string why = checkValue(out, "output"); !why.empty()) return why;
  if (options.profile) {
    if (std::string why = checkFitsHbm(node, *options.profile); !why.empty()) return why;
    if (std::string why = checkFitsSbuf(node, *options.profile); !why.empty()) return why;
  }
  return lowering->check ? lowering->check(node, options) : "";
}

}  // namespace tessel::nc::compiler
