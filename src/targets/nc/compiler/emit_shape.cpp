// Ops that only change how the elements are indexed (Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
// Identity, Slice, Split, Gather of one constant index) and Concat: views of the same SBUF storage (device_tensor.h), so the head split and merge around
// attention cost no instruction. A reshape that no stride pattern can express goes through HBM, where
// the row-major order makes every reshape free.
#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/slice_geometry.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {
namespace {

/// A view keeps the elements: the output has as many as the input.
std::string checkView(const Node &node, const LoweringOptions &) {
  const std::vector<int64_t> in = staticShape(node.input(0)), out = staticShape(node.output(0));
  auto numel = [](const std::vector<int64_t> &shape) {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  };
  if (numel(in) != numel(out))
    return fmt::format("output [{}] does not hold the input's [{}] elements", fmt::join(out, ","), fmt::join(in, ","));
  return "";
}

/// perm is a permutation of the input's axes and the output's shape follows from it.
std::string checkTranspose(const Node &node, const LoweringOptions &options) {
  const std::vector<int64_t> in = staticShape(node.input(0)), out = staticShape(node.output(0));
  std::vector<int64_t> perm = node.attrInts("perm");
  if (perm.empty()) {
    perm.resize(in.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> axes(in.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (sorted != axes) return fmt::format("perm [{}] is not a permutation of {} axes", fmt::join(perm, ","), in.size());
  for (size_t i = 0; i < perm.size(); ++i)
    if (i >= out.size() || out[i] != in[static_cast<size_t>(perm[i])])
      return fmt::format("output [{}] is not the input [{}] permuted by [{}]", fmt::join(out, ","), fmt::join(in, ","),
                         fmt::join(perm, ","));
  return checkView(node, options);
}

Status emitReshape(LoweringContext &ctx, const Node &node) {
  const std::vector<int64_t> shape = staticShape(node.output(0));
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  if (auto view = reshapeView(t, shape)) {
    ctx.define(node.output(0), *view);
    return Status::success();
  }
  // Through HBM: row-major storage reshapes for free (of a whole tensor).
  if (t.shardedCores > 1) TESSEL_RETURN_IF_ERROR(ctx.unsplit(node.input(0)).status());
  TESSEL_ASSIGN_OR_RETURN(tile::HbmView hbm, ctx.hbmOf(node.input(0)));
  std::vector<FreeDim> dims(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    dims[i] = FreeDim{stride, static_cast<uint32_t>(shape[i])};
    stride *= shape[i];
  }
  const int64_t axis = shape.size() == 4 ? 1 : static_cast<int64_t>(shape.size()) - 1;
  ctx.define(node.output(0), ctx.loadStandard(node.output(0)->name(), hbm.pattern(0, dims), shape, axis, t.dtype));
  return Status::success();
}

Status emitTranspose(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  std::vector<int64_t> perm = node.attrInts("perm");
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(t.rank()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  ctx.define(node.output(0), transposeView(t, perm));
  return Status::success();
}

Status emitIdentity(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  ctx.define(node.output(0), t);
  return Status::success();
}

/// The view of `t` restricted to [start, start + count) along `axis`.
DeviceTensor sliceView(const DeviceTensor &t, int64_t axis, int64_t start, int64_t count) {
  DeviceTensor view = t;
  view.shape[axis] = count;
  view.partitionBase += start * t.axes[axis].partitionStride;
  view.freeBase += start * t.axes[axis].freeStride;
  return view;
}

std::vector<int64_t> constantInts(const Value *value) {
  std::vector<int64_t> v;
  const Tensor &t = value->initializer();
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalarAsInt64(i));
  return v;
}

bool present(const Value *v) { return v != nullptr; }

std::string checkSlice(const Node &node, const LoweringOptions &) {
  for (size_t i = 1; i < node.inputs().size(); ++i)
    if (present(node.input(i)) && !node.input(i)->hasInitializer()) return "slice bounds are not constants";
  if (node.inputs().size() > 4 && present(node.input(4)))
    for (int64_t step : constantInts(node.input(4)))
      if (step != 1) return "a step other than 1";
  return "";
}

Status emitSlice(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  std::vector<int64_t> starts = node.inputs().size() > 1 ? constantInts(node.input(1)) : node.attrInts("starts");
  std::vector<int64_t> ends = node.inputs().size() > 2 ? constantInts(node.input(2)) : node.attrInts("ends");
  std::vector<int64_t> axes;  // Empty: the leading axes.
  if (node.inputs().size() > 3 && present(node.input(3))) {
    axes = constantInts(node.input(3));
  } else if (node.hasAttr("axes")) {
    axes = node.attrInts("axes");
  }
  // checkSlice admits only steps of 1.
  auto slices = sliceAxes(t.shape, starts, ends, axes, {});
  if (!slices.ok()) return ctx.unsupported(node, slices.diag().message);
  for (size_t axis = 0; axis < slices->size(); ++axis) {
    const AxisSlice &slice = (*slices)[axis];
    if (slice.start != 0 || slice.size != t.shape[axis])
      t = sliceView(t, static_cast<int64_t>(axis), slice.start, slice.size);
  }
  ctx.define(node.output(0), t);
  return Status::success();
}

std::string checkSplit(const Node &node, const LoweringOptions &) {
  if (node.inputs().size() > 1 && present(node.input(1)) && !node.input(1)->hasInitializer()) return "split sizes are not constants";
  return "";
}

Status emitSplit(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  const int64_t axis = normalizeAxis(node.attrInt("axis", 0), t.rank());
  std::vector<int64_t> sizes;
  if (node.inputs().size() > 1 && present(node.input(1))) {
    sizes = constantInts(node.input(1));
  } else if (node.hasAttr("split")) {
    sizes = node.attrInts("split");
  } else {
    for (const Value *out : node.outputs()) sizes.push_back(out->type().shape().dims()[axis].size);
  }
  int64_t start = 0;
  for (size_t i = 0; i < node.outputs().size() && i < sizes.size(); ++i) {
    if (node.output(i)) ctx.define(node.output(i), sliceView(t, axis, start, sizes[i]));
    start += sizes[i];
  }
  return Status::success();
}

std::string checkGather(const Node &node, const LoweringOptions &) {
  if (!node.input(1)->hasInitializer() || node.input(1)->initializer().numel() != 1)
    return "indices other than one constant";
  return "";
}

Status emitGather(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  const int64_t axis = normalizeAxis(node.attrInt("axis", 0), t.rank());
  int64_t index = constantInts(node.input(1))[0];
  if (index < 0) index += t.shape[axis];
  DeviceTensor view = sliceView(t, axis, index, 1);
  if (node.input(1)->initializer().rank() == 0) {  // A scalar index drops the axis.
    view.shape.erase(view.shape.begin() + axis);
    view.axes.erase(view.axes.begin() + axis);
  }
  ctx.define(node.output(0), view);
  return Status::success();
}

/// Whether every reader of `value` is an attention reading it as K or V, and it is no graph output.
bool readAsAttentionKv(const Value *value) {
  for (const Value *out : value->graph()->outputs())
    if (out == value) return false;
  for (const Use &use : value->uses())
    if (!use.user || use.user->domain() != "tessel" || use.user->opType() != "Attention" || use.inputIndex < 1 ||
        use.inputIndex > 2)
      return false;
  return !value->uses().empty();
}

/// The most new positions for which a KV cache's Concat takes D on partitions (below). Measured on the
/// 1B-class Llama: a decode step and prefills of 32 and 128 tokens gain; a 256-token prefill loses
/// (nc-v3: 5.13 -> 5.95 ms for one layer), so longer appends keep the heads on partitions.
constexpr int64_t kMaxAppendedPositionsOnD = 128;

/// The output's partition axis: one other than the concatenation axis, the last or the channels. An
/// attention's K or V [B, H, S, D] concatenated along the positions (a KV cache's past and the few new
/// ones) takes D on partitions, as the attention reads it: with the heads on partitions (8 of a
/// grouped-query cache) each copy would stream through one DMA engine, and the attention would move
/// the result through HBM.
int64_t concatPartitionAxis(const Node &node, int64_t rank, int64_t axis) {
  if (rank == 4 && axis == 2 && readAsAttentionKv(node.output(0)) &&
      staticShape(node.inputs().back())[2] <= kMaxAppendedPositionsOnD)
    return 3;
  const int64_t preferred = rank == 4 ? 1 : rank - 1;
  if (preferred != axis) return preferred;
  return axis == rank - 1 ? rank - 2 : rank - 1;
}

std::string checkConcat(const Node &node, const LoweringOptions &options) {
  const std::vector<int64_t> shape = staticShape(node.output(0));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2) return "a 1-D concatenation";
  if (!options.profile) return "";
  // A block of the output and of every input, in standard form on the partition axis, are in SBUF
  // together, and each copy walks the free axes with int16 strides.
  const int64_t partitionAxis = concatPartitionAxis(node, rank, normalizeAxis(node.attrInt("axis", 0), rank));
  int64_t bytes = f32BlockBytes(shape, partitionAxis);
  for (const Value *in : node.inputs()) bytes += f32BlockBytes(staticShape(in), partitionAxis);
  if (bytes > options.profile->sbuf.bytesPerPartition)
    return fmt::format("a block of its inputs and output needs {} bytes per partition of SBUF with axis {} on "
                       "partitions; {} has {}",
                       bytes, partitionAxis, options.profile->name, options.profile->sbuf.bytesPerPartition);
  int64_t stride = 1;
  for (int64_t i = rank; i-- > 0;) {
    if (i == partitionAxis) continue;
    if (shape[static_cast<size_t>(i)] > 1 && stride > INT16_MAX)
      return fmt::format("axis {} would step {} elements, past an access pattern's int16 stride", i, stride);
    stride *= shape[static_cast<size_t>(i)];
  }
  return "";
}

Status emitConcat(LoweringContext &ctx, const Node &node) {
  const std::vector<int64_t> shape = staticShape(node.output(0));
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t axis = normalizeAxis(node.attrInt("axis", 0), rank);
  const int64_t partitionAxis = concatPartitionAxis(node, rank, axis);
  DeviceTensor out = ctx.allocate(node.output(0), partitionAxis);
  int64_t offset = 0;
  for (const Value *in : node.inputs()) {
    TESSEL_ASSIGN_OR_RETURN(DeviceTensor s, ctx.standard(in, partitionAxis));
    // The input's region of the output: its shape at the output's free strides, from `offset`.
    std::vector<FreeDim> dstDims, srcDims;
    for (int64_t i = 0; i < rank; ++i) {
      if (i == partitionAxis) continue;
      dstDims.push_back(FreeDim{out.axes[i].freeStride, static_cast<uint32_t>(s.shape[i])});
      srcDims.push_back(FreeDim{s.axes[i].freeStride, static_cast<uint32_t>(s.shape[i])});
    }
    for (size_t k = 0; k < out.blocks.size(); ++k)
      ctx.builder().copy(out.blocks[k].pattern(offset * out.axes[axis].freeStride, dstDims),
                         s.blocks[k].pattern(0, srcDims));
    offset += s.shape[axis];
  }
  ctx.define(node.output(0), out);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> shapeLowerings() {
  std::vector<OpLowering> v;
  for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) v.push_back({"", op, checkView, emitReshape});
  v.push_back({"", "Transpose", checkTranspose, emitTranspose});
  v.push_back({"", "Identity", checkView, emitIdentity});
  v.push_back({"", "Slice", checkSlice, emitSlice});
  v.push_back({"", "Split", checkSplit, emitSplit});
  v.push_back({"", "Gather", checkGather, emitGather});
  v.push_back({"", "Concat", checkConcat, emitConcat});
  return v;
}

}  // namespace tessel::nc::compiler
