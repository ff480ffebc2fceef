// Resize (opset 11+, nearest or linear) of the two spatial axes of [N, C, H, W] on the accelerator's
// vector engines, with channels on partitions as the convolutions around it keep them.
//
// Each axis resamples by two taps per output coordinate (ops/resize_geometry.h, the reference's
// taps): out[o] = w0 * in[i0] + w1 * in[i1]. Along an axis upscaled by an integer factor s, the
// outputs o = s * k + r of one residue r share their weights and step their input index by one per
// k, except where the edge clamps: so the outputs fall into a few strided runs, each one to three
// DVE/ACT instructions over every row at once (a copy or a scaled copy for nearest, scaled copy,
// scaled temporary and sum for linear). The columns are resampled first (X -> T [N, H, OW]), then
// the rows (T -> Y); an axis that keeps its coordinates is skipped.
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "ops/resize_geometry.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/isa/tile_rules.h"

namespace tessel::nc::compiler {
namespace {

using tile::KernelBuilder;
using tile::TileView;

/// At most this many runs per axis: a ratio that scatters its taps (not an integer factor) would take
/// a few instructions per output row or column.
constexpr size_t kMaxRuns = 64;

/// Outputs o = first, first + step, ... (count of them) whose taps are index0 = i0 + k, index1 =
/// index0 + gap and weights w0, w1.
struct TapRun {
  int64_t first = 0, step = 1, count = 0;
  int64_t i0 = 0, gap = 0;
  float w0 = 1, w1 = 0;
};

/// The taps grouped into runs, each residue modulo `step` (the integer upscaling factor, else 1) on
/// its own.
std::vector<TapRun> tapRuns(const ResizeTwoTaps &taps, int64_t step) {
  std::vector<TapRun> runs;
  const int64_t out = static_cast<int64_t>(taps.index0.size());
  for (int64_t r = 0; r < step && r < out; ++r) {
    for (int64_t o = r; o < out; o += step) {
      const size_t i = static_cast<size_t>(o);
      if (!runs.empty()) {
        TapRun &run = runs.back();
        const size_t last = static_cast<size_t>(run.first + (run.count - 1) * run.step);
        if (run.step == step && o == run.first + run.count * step && taps.index0[i] == taps.index0[last] + 1 &&
            taps.index1[i] - taps.index0[i] == run.gap && taps.weight0[i] == run.w0 && taps.weight1[i] == run.w1) {
          ++run.count;
          continue;
        }
      }
      runs.push_back(TapRun{o, step, 1, taps.index0[i], taps.index1[i] - taps.index0[i], taps.weight0[i],
                            taps.weight1[i]});
    }
  }
  return runs;
}

/// The node's geometry: sizes, and the taps of H and W.
struct ResizeForm {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  ResizeTwoTaps rows, cols;
  std::vector<TapRun> rowRuns, colRuns;
  bool rowsKept = false, colsKept = false;
};

std::vector<double> constantDoubles(const Value *v) {
  std::vector<double> values;
  if (!v || !v->hasInitializer()) return values;
  for (int64_t i = 0; i < v->initializer().numel(); ++i) values.push_back(v->initializer().scalarAsDouble(i));
  return values;
}

/// Reads the node, or says why this file does not lower it.
std::string readResize(const Node &node, ResizeForm &f) {
  if (node.inputs().size() < 3) return "Resize-10's form (scales as input 1)";
  const std::string mode = node.attrString("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return fmt::format("mode {}", mode);
  const std::string coordinateMode = node.attrString("coordinate_transformation_mode", "half_pixel");
  const std::string nearestMode = node.attrString("nearest_mode", "round_prefer_floor");
  if (node.attrInt("exclude_outside", 0) != 0) return "exclude_outside = 1";
  if (node.attrInt("antialias", 0) != 0) return "antialias = 1";
  if (node.hasAttr("axes")) return "the axes attribute";
  if (node.attrString("keep_aspect_ratio_policy", "stretch") != "stretch") return "keep_aspect_ratio_policy";
  for (size_t i = 2; i < node.inputs().size(); ++i)
    if (node.input(i) && !node.input(i)->hasInitializer()) return "scales or sizes computed at run time";
  const std::vector<int64_t> x = staticShape(node.input(0)), y = staticShape(node.output(0));
  if (x.size() != 4 || y.size() != 4) return "not a 4-D [N, C, H, W] resize";
  const std::vector<double> scales = constantDoubles(node.input(2));
  if (!scales.empty() && scales.size() != 4) return "scales not of rank 4";
  if (x[0] != y[0] || x[1] != y[1] || (!scales.empty() && (scales[0] != 1 || scales[1] != 1)))
    return "resizes N or C (the device resamples H and W)";
  f.N = x[0], f.C = x[1], f.H = x[2], f.W = x[3], f.OH = y[2], f.OW = y[3];
  auto scaleOf = [&](size_t axis) {
    return scales.empty() ? static_cast<double>(y[axis]) / static_cast<double>(x[axis]) : scales[axis];
  };
  std::optional<ResizeTwoTaps> rows = resizeTwoTaps(f.H, f.OH, scaleOf(2), mode, coordinateMode, nearestMode);
  std::optional<ResizeTwoTaps> cols = resizeTwoTaps(f.W, f.OW, scaleOf(3), mode, coordinateMode, nearestMode);
  if (!rows || !cols) return fmt::format("coordinate_transformation_mode {}", coordinateMode);
  f.rows = std::move(*rows), f.cols = std::move(*cols);
  f.rowsKept = resizeKeepsAxis(f.rows, f.H), f.colsKept = resizeKeepsAxis(f.cols, f.W);
  f.rowRuns = tapRuns(f.rows, f.OH % f.H == 0 ? f.OH / f.H : 1);
  f.colRuns = tapRuns(f.cols, f.OW % f.W == 0 ? f.OW / f.W : 1);
  if (f.rowRuns.size() > kMaxRuns || f.colRuns.size() > kMaxRuns)
    return fmt::format("{}x{} -> {}x{} scatters its taps over more than {} runs per axis", f.H, f.W, f.OH, f.OW,
                       kMaxRuns);
  // The patterns' dims (resampleAxis), each an int16 stride and a uint16 count.
  const int64_t rowStep = f.OH % f.H == 0 ? f.OH / f.H : 1, colStep = f.OW % f.W == 0 ? f.OW / f.W : 1;
  const bool encodable = accessDimEncodable(f.OW, f.N * f.H) && accessDimEncodable(f.W, f.N * f.H) &&
                         accessDimEncodable(colStep, f.W) && accessDimEncodable(f.OH * f.OW, f.N) &&
                         accessDimEncodable(f.H * f.OW, f.N) && accessDimEncodable(rowStep * f.OW, f.H) &&
                         accessDimEncodable(1, f.OW);
  if (!encodable) return "sizes past the access patterns' int16 strides and uint16 counts";
  return "";
}

std::string checkResize(const Node &node, const LoweringOptions &options) {
  ResizeForm f;
  if (std::string why = readResize(node, f); !why.empty()) return why;
  if (!options.profile) return "";
  const int64_t bytes = f32BlockBytes({f.N, f.C, f.H, f.W}, 1) + f32BlockBytes({f.N, f.C, f.H, f.OW}, 1) +
                        f32BlockBytes({f.N, f.C, f.OH, f.OW}, 1);
  if (bytes <= options.profile->sbuf.bytesPerPartition) return "";
  return fmt::format("a block of its input, column-resampled and output tensors with channels on partitions needs {} "
                     "bytes per partition of SBUF; {} has {}",
                     bytes, options.profile->name, options.profile->sbuf.bytesPerPartition);
}

/// One axis of one partition block: dst[..., o, ...] = w0 * src[..., i0, ...] + w1 * src[..., i1, ...]
/// per run, the axis at stride `dstStride` / `srcStride` elements inside `outer` groups of `dstOuter`
/// / `srcOuter` elements, `inner` contiguous elements per coordinate.
void resampleAxis(KernelBuilder &b, const std::string &name, const TileView &dst, const TileView &src,
                  const std::vector<TapRun> &runs, int64_t outer, int64_t dstOuter, int64_t srcOuter, int64_t dstStride,
                  int64_t srcStride, int64_t inner) {
  auto dims = [&](int64_t outerStride, int64_t step, int64_t count) {
    return std::vector<FreeDim>{FreeDim{encodedStride(outerStride, outer), static_cast<uint32_t>(outer)},
                                FreeDim{encodedStride(step, count), static_cast<uint32_t>(count)},
                                FreeDim{1, static_cast<uint32_t>(inner)}};
  };
  for (const TapRun &run : runs) {
    const TileView out = dst.pattern(run.first * dstStride, dims(dstOuter, run.step * dstStride, run.count));
    const TileView in0 = src.pattern(run.i0 * srcStride, dims(srcOuter, srcStride, run.count));
    if (run.w1 == 0.0f) {
      if (run.w0 == 1.0f) b.copy(out, in0);
      else b.tensorScalar(out, in0, AluOp::Multiply, run.w0);
      continue;
    }
    const TileView in1 = src.pattern((run.i0 + run.gap) * srcStride, dims(srcOuter, srcStride, run.count));
    TileView second = b.sbuf(name + "/tap", DType::F32, dst.partitions(), {outer, run.count, inner});
    b.tensorScalar(out, in0, AluOp::Multiply, run.w0);
    b.tensorScalar(second, in1, AluOp::Multiply, run.w1);
    b.tensorTensor(out, out, second, AluOp::Add);
  }
}

Status emitResize(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  ResizeForm f;
  if (std::string why = readResize(node, f); !why.empty()) return ctx.unsupported(node, why);
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, ctx.standard(node.input(0), 1));
  DeviceTensor y = ctx.allocate(node.output(0), 1);
  for (size_t k = 0; k < y.blocks.size(); ++k) {
    const int64_t pc = y.blocks[k].partitions();
    const TileView in = x.blocks[k].pattern(0, {FreeDim{1, static_cast<uint32_t>(f.N * f.H * f.W)}});
    const TileView out = y.blocks[k].pattern(0, {FreeDim{1, static_cast<uint32_t>(f.N * f.OH * f.OW)}});
    // The columns: rows of W -> rows of OW (N * H of them), into T unless the rows are kept.
    TileView columns = in;
    if (!f.colsKept) {
      columns = f.rowsKept ? out : b.sbuf(node.name() + "/columns", x.dtype, pc, {f.N * f.H * f.OW});
      resampleAxis(b, node.name(), columns, in, f.colRuns, f.N * f.H, f.OW, f.W, 1, 1, 1);
    }
    // The rows: H rows of OW -> OH rows, per image.
    if (!f.rowsKept) resampleAxis(b, node.name(), out, columns, f.rowRuns, f.N, f.OH * f.OW, f.H * f.OW, f.OW, f.OW, f.OW);
    else if (f.colsKept) b.copy(out, in);
  }
  ctx.define(node.output(0), y);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> resizeLowerings() { return {OpLowering{"", "Resize", checkResize, emitResize}}; }

}  // namespace tessel::nc::compiler
