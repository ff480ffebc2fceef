// Pooling (ONNX MaxPool, AveragePool, GlobalAveragePool and their tessel-domain forms with
// channels_last = 0) on the accelerator's vector engines, with X and Y in standard form: channels on
// partitions, N*H*W row-major on the free dim.
//
// A window pool is a reduction over the taps of the kernel, each tap a strided view of X: for a chunk
// of output positions, acc = op(acc, window of tap) per tap (DVE or POOL). Padding needs no padded
// copy of X: tap (kh, kw) only touches the rectangle of outputs whose window lies inside X, which is
// exact for max (padding never wins) and for sums (padding adds zeros); MaxPool's ceil_mode is more
// padding at the end. AveragePool then divides by
// the kernel size (count_include_pad = 1, or no padding) or by the number of taps inside X, which is
// rows-inside(oh) * cols-inside(ow): a constant [OH, OW] table of reciprocals, broadcast over the
// partitions. GlobalAveragePool reduces each image's H*W elements of every partition and scales.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "targets/nc/compiler/lowering.h"
#include "targets/nc/compiler/spatial_windows.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::compiler {
namespace {

using kernels::ceilDiv;
using kernels::Span;
using kernels::splitRange;
using tile::HbmView;
using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

/// Output positions per chunk (elements per partition of one instruction): large enough to amortise
/// the fixed cost of an instruction, small enough that the next op can start on early chunks.
constexpr int64_t kPoolChunk = 1024;
/// Slots of the AveragePool accumulator ring.
constexpr int64_t kAccSlots = 3;

struct PoolShape {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t KH = 0, KW = 0, OH = 0, OW = 0;
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;

  bool padded() const { return padTop || padLeft || padBottom || padRight; }
};


/// Reads a window pool's geometry, or says why this file does not lower it.
std::string readPoolShape(const Node &node, PoolShape &s) {
  const std::vector<int64_t> x = staticShape(node.input(0)), y = staticShape(node.output(0));
  if (x.size() != 4 || y.size() != 4) return "not a 2-D pool";
  const std::vector<int64_t> kernel = node.attrInts("kernel_shape");
  const std::vector<int64_t> strides = node.attrInts("strides", {1, 1});
  const std::vector<int64_t> pads = node.attrInts("pads", {0, 0, 0, 0});
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4) return "kernel_shape, strides or pads not 2-D";
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.KH = kernel[0], s.KW = kernel[1];
  s.strideH = strides[0], s.strideW = strides[1];
  s.padTop = pads[0], s.padLeft = pads[1], s.padBottom = pads[2], s.padRight = pads[3];
  s.OH = y[2], s.OW = y[3];
  if (node.attrInt("ceil_mode", 0) != 0) {
    // ceil_mode keeps a last window that runs past the padded end when it starts inside X or the
    // leading pad: for a max that is padding the end further (padding never wins), as far as the last
    // window reaches. Not for AveragePool, whose divisor would count that padding differently.
    if (node.opType() != "MaxPool") return "ceil_mode = 1 (MaxPool only)";
    auto ceilOutputs = [](int64_t size, int64_t padded, int64_t kernel, int64_t stride, int64_t padBegin) {
      int64_t out = ceilDiv(padded - kernel, stride) + 1;
      return (out - 1) * stride >= size + padBegin ? out - 1 : out;
    };
    if (s.OH != ceilOutputs(s.H, s.H + s.padTop + s.padBottom, s.KH, s.strideH, s.padTop) ||
        s.OW != ceilOutputs(s.W, s.W + s.padLeft + s.padRight, s.KW, s.strideW, s.padLeft))
      return fmt::format("Y's shape [{}] does not follow from X and the attributes (ceil_mode)", fmt::join(y, ","));
    s.padBottom = std::max(s.padBottom, (s.OH - 1) * s.strideH + s.KH - s.H - s.padTop);
    s.padRight = std::max(s.padRight, (s.OW - 1) * s.strideW + s.KW - s.W - s.padLeft);
  }
  // A window wholly in the padding has no element to pool (the reference reports it).
  if (s.padTop >= s.KH || s.padBottom >= s.KH || s.padLeft >= s.KW || s.padRight >= s.KW)
    return "a pad as large as the window leaves windows with no element";
  const int64_t oh = (s.H + s.padTop + s.padBottom - s.KH) / s.strideH + 1;
  const int64_t ow = (s.W + s.padLeft + s.padRight - s.KW) / s.strideW + 1;
  if (oh != s.OH || ow != s.OW || y[0] != s.N || y[1] != s.C)
    return fmt::format("Y's shape [{}] does not follow from X and the attributes", fmt::join(y, ","));
  return "";
}

/// Why X and Y, in standard form with channels on partitions (what the pool reads and writes), cannot
/// fit SBUF together: the partition's general check allows any layout, this emitter takes one.
std::string poolSbufReason(const Node &node, const LoweringOptions &options) {
  if (!options.profile) return "";
  const int64_t bytes = f32BlockBytes(staticShape(node.input(0)), 1) + f32BlockBytes(staticShape(node.output(0)), 1);
  if (bytes <= options.profile->sbuf.bytesPerPartition) return "";
  return fmt::format("a block of its input and output with channels on partitions needs {} bytes per partition of "
                     "SBUF; {} has {}",
                     bytes, options.profile->name, options.profile->sbuf.bytesPerPartition);
}

std::string checkPool(const Node &node, const LoweringOptions &options) {
  if (node.attrInt("channels_last", 0) != 0) return "channels_last = 1 (the accelerator keeps channels on partitions)";
  if (node.opType() == "GlobalAveragePool")
    return staticShape(node.input(0)).size() == 4 ? poolSbufReason(node, options) : "not a 2-D pool";
  const std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (!autoPad.empty() && autoPad != "NOTSET") return "auto_pad = " + autoPad + " (only explicit pads)";
  if (node.attrInt("storage_order", 0) != 0) return "storage_order = 1";
  for (int64_t d : node.attrInts("dilations"))
    if (d != 1) return "dilations other than 1";
  if (node.outputs().size() > 1 && node.output(1)) return "MaxPool's Indices output";
  PoolShape s;
  if (std::string why = readPoolShape(node, s); !why.empty()) return why;
  return poolSbufReason(node, options);
}

// ---- Chunks and tap rectangles ------------------------------------------------------------------------

/// The [images, rows, cols] pattern of a whole chunk in its contiguous layout: the shape the tap
/// windows have, which elementwise instructions need their operands to share.
std::vector<FreeDim> chunkDims(const OutputChunk &chunk) {
  return windowDims(chunk.images, chunk.rows * chunk.cols, chunk.rows, chunk.cols, chunk.cols, 1);
}

/// One tap's part of a chunk: the outputs whose window for that tap lies inside X, as views of the
/// chunk's accumulator layout and of X.
struct TapWindow {
  bool whole = false;  // Every output of the chunk.
  int64_t accOffset = 0;
  std::vector<FreeDim> accDims;
  int64_t xOffset = 0;
  std::vector<FreeDim> xDims;
};

std::optional<TapWindow> tapWindow(const PoolShape &s, const OutputChunk &chunk, int64_t kh, int64_t kw) {
  const Span rows = insideRange(chunk.oh0, chunk.rows, s.strideH, kh - s.padTop, s.H);
  const Span cols = insideRange(chunk.ow0, chunk.cols, s.strideW, kw - s.padLeft, s.W);
  if (rows.count == 0 || cols.count == 0) return std::nullopt;
  TapWindow t;
  t.whole = rows.count == chunk.rows && cols.count == chunk.cols;
  t.accOffset = (rows.start - chunk.oh0) * chunk.cols + (cols.start - chunk.ow0);
  t.accDims = windowDims(chunk.images, chunk.rows * chunk.cols, rows.count, chunk.cols, cols.count, 1);
  t.xOffset = (chunk.n0 * s.H + rows.start * s.strideH + kh - s.padTop) * s.W + cols.start * s.strideW + kw - s.padLeft;
  t.xDims = windowDims(chunk.images, s.H * s.W, rows.count, s.strideH * s.W, cols.count, s.strideW);
  return t;
}

/// acc[chunk] = op over the taps of X's windows. A tap covering the whole chunk initialises acc (two
/// of them in one instruction); without one, acc starts at `identity`.
void reduceTaps(KernelBuilder &b, const PoolShape &s, const OutputChunk &chunk, const TileView &acc, const TileView &x,
                AluOp op, float identity) {
  std::vector<TapWindow> whole, partial;
  for (int64_t kh = 0; kh < s.KH; ++kh)
    for (int64_t kw = 0; kw < s.KW; ++kw)
      if (std::optional<TapWindow> t = tapWindow(s, chunk, kh, kw)) (t->whole ? whole : partial).push_back(*t);
  const TileView all = acc.pattern(0, chunkDims(chunk));
  auto window = [&](const TapWindow &t) { return x.pattern(t.xOffset, t.xDims); };
  size_t used = 0;
  if (whole.size() >= 2) {
    b.tensorTensor(all, window(whole[0]), window(whole[1]), op);
    used = 2;
  } else if (whole.size() == 1) {
    b.copy(all, window(whole[0]));
    used = 1;
  } else {
    b.memset(all, identity);
  }
  for (size_t i = used; i < whole.size(); ++i) b.tensorTensor(all, all, window(whole[i]), op);
  for (const TapWindow &t : partial) {
    const TileView part = acc.pattern(t.accOffset, t.accDims);
    b.tensorTensor(part, part, window(t), op);
  }
}

// ---- Emitters ----------------------------------------------------------------------------------------------

Status emitWindowPool(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  PoolShape s;
  if (std::string reason = readPoolShape(node, s); !reason.empty()) return ctx.unsupported(node, reason);
  const int64_t P = ctx.profile().partitions;
  const bool isMax = node.opType() == "MaxPool";
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, ctx.standard(node.input(0), 1));
  DeviceTensor out = ctx.allocate(node.output(0), 1);
  const std::vector<OutputChunk> chunks = splitOutput(s.N, s.OH, s.OW, kPoolChunk);

  // AveragePool's divisor: the kernel size, or per output the number of taps inside X.
  const bool perOutputCount = !isMax && s.padded() && node.attrInt("count_include_pad", 0) == 0;
  std::optional<TileView> reciprocals;
  if (perOutputCount) {
    std::vector<float> values(static_cast<size_t>(s.OH * s.OW));
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const int64_t rows = insideRange(0, s.KH, 1, oh * s.strideH - s.padTop, s.H).count;
        const int64_t cols = insideRange(0, s.KW, 1, ow * s.strideW - s.padLeft, s.W).count;
        values[static_cast<size_t>(oh * s.OW + ow)] = 1.0f / static_cast<float>(std::max<int64_t>(1, rows * cols));
      }
    const int64_t partitions = std::min(P, s.C);
    const HbmView hbm = ctx.constantHbm(node.name() + "/reciprocal_count", DType::F32, {s.OH * s.OW}, std::move(values));
    TileView tile = b.sbuf(node.name() + "/reciprocal_count", DType::F32, partitions, {s.OH * s.OW});
    b.load(tile, hbm.pattern(0, {FreeDim{0, static_cast<uint32_t>(partitions)},
                                 FreeDim{1, static_cast<uint32_t>(s.OH * s.OW)}}));
    reciprocals = tile;
  }
  TileRing accRing(MemSpace::SBUF, node.name() + "/acc", DType::F32, std::min(P, s.C), {kPoolChunk}, kAccSlots);

  for (const Span &ch : splitRange(s.C, P)) {
    const TileView input = x.partitions(ch.start, ch.count);
    for (const OutputChunk &chunk : chunks) {
      const TileView dst = out.partitions(ch.start, ch.count).cols(chunk.offset(s.OH, s.OW), chunk.size());
      if (isMax) {
        // Max is exact in any dtype: reduce straight into Y.
        reduceTaps(b, s, chunk, dst, input, AluOp::Maximum, -std::numeric_limits<float>::infinity());
        continue;
      }
      const TileView acc = accRing.next(b).partitionSlice(0, ch.count).cols(0, chunk.size());
      reduceTaps(b, s, chunk, acc, input, AluOp::Add, 0.0f);
      if (reciprocals) {
        TileView divisor = reciprocals->partitionSlice(0, ch.count)
                               .pattern(chunk.oh0 * s.OW + chunk.ow0,
                                        windowDims(chunk.images, 0, chunk.rows, s.OW, chunk.cols, 1));
        b.tensorTensor(dst.pattern(0, chunkDims(chunk)), acc.pattern(0, chunkDims(chunk)), divisor, AluOp::Multiply);
      } else {
        b.tensorScalar(dst, acc, AluOp::Multiply, 1.0f / static_cast<float>(s.KH * s.KW));
      }
    }
  }
  ctx.define(node.output(0), out);
  return Status::success();
}

/// Y[n, c] = mean of X[n, c, :, :]: a free-axis sum per image, then a scale.
Status emitGlobalAveragePool(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  const std::vector<int64_t> shape = staticShape(node.input(0));
  const int64_t N = shape[0], C = shape[1], plane = shape[2] * shape[3];
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, ctx.standard(node.input(0), 1));
  DeviceTensor out = ctx.allocate(node.output(0), 1);
  for (const Span &ch : splitRange(C, ctx.profile().partitions)) {
    const TileView dst = out.partitions(ch.start, ch.count).cols(0, N);
    const TileView images = x.partitions(ch.start, ch.count)
                                .pattern(0, {FreeDim{plane, static_cast<uint32_t>(N)}, FreeDim{1, static_cast<uint32_t>(plane)}});
    b.reduce(dst, images, AluOp::Add);
    b.tensorScalar(dst, dst, AluOp::Multiply, 1.0f / static_cast<float>(plane));
  }
  ctx.define(node.output(0), out);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> poolLowerings() {
  std::vector<OpLowering> v;
  for (const char *domain : {"", "tessel"}) {
    v.push_back(OpLowering{domain, "MaxPool", checkPool, emitWindowPool});
    v.push_back(OpLowering{domain, "AveragePool", checkPool, emitWindowPool});
    v.push_back(OpLowering{domain, "GlobalAveragePool", checkPool, emitGlobalAveragePool});
  }
  return v;
}

}  // namespace tessel::nc::compiler
