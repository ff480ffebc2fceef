// 2-D convolutions (ONNX Conv, tessel FusedConv) on the accelerator, with X, Z and Y in standard form
// with their channels on partitions ([N, C, H, W]: C on partitions, N*H*W row-major on the free dim).
//
// Dense convolutions are implicit GEMMs on the tensor engine. Contraction runs over input channels on
// partitions, the stationary operand is the [Cin tile, Cout tile] weight slice of one tap, and the
// moving operand is the input window of that tap for a chunk of output positions (<= one PSUM bank):
// a strided view of X, or of a zero-padded copy of X when the conv pads. So every tap is one matmul
// with no im2col buffer:
//
//   for output chunk (whole images, or rows of one image, <= 512 positions):
//     for Cout tile (<= 128, the stationary free dim = output partitions):
//       psum = sum over Cin tiles x taps of W[tap][Cin tile, Cout tile]^T @ Xwindow[Cin tile, chunk]
//       Y[Cout tile, chunk] = act(psum + bias + Z)                  (epilogue.h, on the eviction)
//
// The weights go to HBM as [Cin][Cout tile][tap][Cout in tile], so one DMA per Cin tile brings all of
// a layer's taps with one long contiguous run per partition, and each stationary is a contiguous slice.
//
// Stems (few input channels: C * KH <= 128) would waste the array on K = C. They fold (kh, c) into
// the contraction instead: partition kh * C + c of a "folded" tile holds, for each output row, the
// input row that tap row kh reads, loaded straight from X in HBM by DMA; then each output chunk is KW
// matmuls with K = C * KH (ResNet's 3-channel 7x7/2 stem: 7 matmuls of K = 21 instead of 49 of K = 3).
// Tap rows that fall into the padding must read zeros. DMAs and compute ops can only start at aligned
// partitions (T6), so a row whose valid tap rows are a prefix [0, k] of kh (the bottom edge) is
// loaded into partitions [0, (k + 1) * C) of a zeroed row; the top edge, where the valid rows are a
// suffix of kh, uses a tile and weights with kh reversed, where they become a prefix again.
//
// Depthwise convolutions (group == C == M) need no contraction: per channel (partition) the output is
// a weighted sum of the taps' windows. With the casts (conv_forms.h) each tap is a matmul whose
// stationary is diag(W[:, tap]), accumulating in PSUM as a dense convolution's taps do. In f32 it is a
// stencil on ACT (product by a per-partition scale) and DVE/POOL (accumulation); padding needs no copy
// there: each tap only touches the rectangle of outputs whose window lies inside X, which is exact
// because padded zeros add nothing.
//
// Blocks of at most 64 channels fold column taps into the contraction: R copies of the padded input
// stacked on the partitions, copy r shifted by r columns, so one matmul sums R taps of a row
// (foldedColumnTaps decides by the cost functions).
//
// A convolution whose every reader is a convolution that rounds it to the PE dtype stores Y in that
// dtype straight from the eviction (readersTakeMatmulDtype), so no reader spends a cast pass on it;
// when its only reader pads, Y goes straight into that reader's zero-padded input (paddedReader,
// allocatePaddedInput), replicas' room included, so no copy runs between the two.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "targets/nc/compiler/conv_forms.h"
#include "targets/nc/compiler/epilogue.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/compiler/spatial_windows.h"
#include "targets/nc/isa/instruction_cost.h"
#include "targets/nc/isa/ports.h"
#include "targets/nc/machine/cost.h"
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

/// PSUM accumulators in flight per convolution: PE fills the next ones while earlier ones drain.
constexpr int64_t kPsumSlots = 4;
/// Output positions per depthwise chunk (elements per partition of one stencil instruction).
constexpr int64_t kStencilChunk = 2048;
/// Slots of the depthwise accumulator and product rings.
constexpr int64_t kStencilSlots = 3;
/// Elements per partition of one piece of the padded copy, so the copy pipelines with its producer.
constexpr int64_t kCopyPieceElements = 2048;
/// Slots of the folded-stem row-band ring: one band multiplied while the next ones load.
constexpr int64_t kBandSlots = 3;

/// The geometry of a 2-D convolution. W is [M, C / group, KH, KW]; pads are [top, left, bottom, right].
struct ConvShape {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t M = 0, KH = 0, KW = 0;
  int64_t OH = 0, OW = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t group = 1;

  int64_t taps() const { return KH * KW; }
  bool padded() const { return padTop || padLeft || padBottom || padRight; }
  bool depthwise() const { return group > 1 && group == C && M == C; }
};


/// Reads the geometry of `node`, or says why it is not a 2-D convolution this file lowers.
std::string readConvShape(const Node &node, ConvShape &s) {
  const std::vector<int64_t> x = staticShape(node.input(0)), w = staticShape(node.input(1)), y = staticShape(node.output(0));
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return "not a 2-D convolution";
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.M = w[0], s.KH = w[2], s.KW = w[3];
  s.OH = y[2], s.OW = y[3];
  s.group = node.attrInt("group", 1);
  const std::vector<int64_t> strides = node.attrInts("strides", {1, 1});
  const std::vector<int64_t> dilations = node.attrInts("dilations", {1, 1});
  const std::vector<int64_t> pads = node.attrInts("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) return "strides, dilations or pads not 2-D";
  s.strideH = strides[0], s.strideW = strides[1];
  s.dilationH = dilations[0], s.dilationW = dilations[1];
  s.padTop = pads[0], s.padLeft = pads[1], s.padBottom = pads[2], s.padRight = pads[3];
  if (s.group < 1 || s.C % s.group != 0 || w[1] != s.C / s.group) return "W does not match X's channels and group";
  const int64_t oh = (s.H + s.padTop + s.padBottom - s.dilationH * (s.KH - 1) - 1) / s.strideH + 1;
  const int64_t ow = (s.W + s.padLeft + s.padRight - s.dilationW * (s.KW - 1) - 1) / s.strideW + 1;
  if (oh != s.OH || ow != s.OW || y[1] != s.M || y[0] != s.N)
    return fmt::format("Y's shape [{}] does not follow from X, W and the attributes", fmt::join(y, ","));
  return "";
}

bool isPresent(const Value *value) { return value != nullptr; }

/// Conv or tessel FusedConv: the nodes readConvShape reads.
bool isConvNode(const Node &node) {
  return (node.domain().empty() && node.opType() == "Conv") || (node.domain() == "tessel" && node.opType() == "FusedConv");
}

std::string checkConv(const Node &node, const LoweringOptions &) {
  if (node.attrInt("channels_last", 0) != 0) return "channels_last = 1 (the accelerator keeps channels on partitions)";
  const std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (!autoPad.empty() && autoPad != "NOTSET") return "auto_pad = " + autoPad + " (only explicit pads)";
  if (!isPresent(node.input(1)) || !node.input(1)->hasInitializer()) return "W is not a constant";
  if (isPresent(node.input(2)) && !node.input(2)->hasInitializer()) return "B is not a constant";
  ConvShape s;
  if (std::string reason = readConvShape(node, s); !reason.empty()) return reason;
  if (s.group != 1 && !s.depthwise())
    return fmt::format("group = {} is neither 1 nor depthwise (group == C == M)", s.group);
  return epilogueUnsupportedReason(node);
}

// ---- Output chunks and windows --------------------------------------------------------------------

// ---- Operands shared by the three forms --------------------------------------------------------------

/// Y, its bias and residual, and the epilogue: what every output chunk's eviction needs.
struct ConvOutput {
  DeviceTensor out;
  std::vector<TileView> bias;  // [P, 1] per block of 128 output channels; empty without B.
  std::optional<DeviceTensor> residual;
  Epilogue epilogue;
};

/// Y's channels [c0, c0 + count) at the positions of `chunk`: contiguous in the standard form, rows of
/// the padded image when Y is stored as its reader's padded input (allocatePaddedInput).
TileView outputView(const ConvShape &s, const DeviceTensor &out, int64_t c0, int64_t count, const OutputChunk &chunk) {
  const TileView block = out.partitions(c0, count);
  if (out.isStandard(1)) return block.cols(chunk.offset(s.OH, s.OW), chunk.size());
  const int64_t image = out.axes[0].freeStride, row = out.axes[2].freeStride;
  return block.pattern(out.freeBase + chunk.n0 * image + chunk.oh0 * row + chunk.ow0,
                       windowDims(chunk.images, image, chunk.rows, row, chunk.cols, 1));
}

/// The eviction of a chunk of whole rows of one image into banded Y (no residual): each band that
/// holds some of the rows, as its own or as a halo, takes them, moved from the PSUM partitions to the
/// band's. The bias is repeated on every band's partitions (bandedValues).
void evictIntoBands(LoweringContext &ctx, const ConvOutput &o, int64_t c0, int64_t count, const OutputChunk &chunk,
                    const TileView &src) {
  const RowBands &bands = o.out.bands;
  const int64_t rowPitch = o.out.axes[2].freeStride;
  for (int64_t band = 0; band < bands.count; ++band) {
    const int64_t firstRow = band * bands.rows - bands.top;  // The row in tile row 0.
    const int64_t begin = std::max(chunk.oh0, firstRow), end = std::min(chunk.oh0 + chunk.rows, firstRow + bands.tileRows);
    if (begin >= end) continue;
    const int64_t partition = band * bands.stride + c0;
    std::optional<TileView> bias;
    if (!o.bias.empty()) bias = o.bias[0].partitionSlice(partition, count);
    const TileView dst = o.out.blocks[0].partitionSlice(partition, count)
                             .pattern(o.out.freeBase + (begin - band * bands.rows) * rowPitch,
                                      windowDims(1, 0, end - begin, rowPitch, chunk.cols, 1));
    emitEpilogue(ctx, dst, src.pattern((begin - chunk.oh0) * chunk.cols, windowDims(1, 0, end - begin, chunk.cols, chunk.cols, 1)),
                 bias, std::nullopt, o.epilogue);
  }
}

/// Y[channels [c0, c0 + count), chunk] = act(src + bias + Z): the eviction of one chunk.
void evictChunk(LoweringContext &ctx, const ConvShape &s, const ConvOutput &o, int64_t c0, int64_t count,
                const OutputChunk &chunk, const TileView &src) {
  if (o.out.bands.count > 0) return evictIntoBands(ctx, o, c0, count, chunk, src);
  const int64_t P = ctx.profile().partitions;
  const int64_t offset = chunk.offset(s.OH, s.OW), size = chunk.size();
  std::optional<TileView> bias, residual;
  if (!o.bias.empty()) bias = o.bias[static_cast<size_t>(c0 / P)].partitionSlice(c0 % P, count);
  if (o.residual) residual = o.residual->partitions(c0, count).cols(offset, size);
  if (o.out.isStandard(1)) return emitEpilogue(ctx, outputView(s, o.out, c0, count, chunk), src, bias, residual, o.epilogue);
  // Rows of a padded image: the contiguous operands take the same [images][rows][cols] shape.
  const std::vector<FreeDim> dims = windowDims(chunk.images, chunk.rows * chunk.cols, chunk.rows, chunk.cols, chunk.cols, 1);
  if (residual) residual = residual->pattern(0, dims);
  emitEpilogue(ctx, outputView(s, o.out, c0, count, chunk), src.pattern(0, dims), bias, residual, o.epilogue);
}

// ---- Dense: implicit GEMM ---------------------------------------------------------------------------

/// Sets the padding of an [N, Hp, Wp] padded tile to zero: per image the head (top rows and the first
/// left pad), the gaps between rows (right pad then next left pad, contiguous) and the tail.
void zeroPadding(KernelBuilder &b, const TileView &tile, const ConvShape &s) {
  const int64_t Wp = s.W + s.padLeft + s.padRight, image = (s.H + s.padTop + s.padBottom) * Wp;
  auto zero = [&](int64_t offset, std::vector<FreeDim> dims) {
    if (s.N > 1) dims.insert(dims.begin(), FreeDim{image, static_cast<uint32_t>(s.N)});
    b.memset(tile.pattern(offset, dims), 0.0f);
  };
  const int64_t head = s.padTop * Wp + s.padLeft, gap = s.padLeft + s.padRight;
  const int64_t tailStart = (s.padTop + s.H - 1) * Wp + s.padLeft + s.W;
  if (head > 0) zero(0, {FreeDim{1, static_cast<uint32_t>(head)}});
  if (gap > 0 && s.H > 1)
    zero(s.padTop * Wp + s.padLeft + s.W, {FreeDim{Wp, static_cast<uint32_t>(s.H - 1)}, FreeDim{1, static_cast<uint32_t>(gap)}});
  if (image > tailStart) zero(tailStart, {FreeDim{1, static_cast<uint32_t>(image - tailStart)}});
}

/// X's channels `src` into `padded` ([N, Hp, Wp], cast to its dtype on the way) with zero padding. The
/// copy goes in row bands so that each band can start as soon as the producer has written those rows.
void fillPadded(KernelBuilder &b, const TileView &padded, const ConvShape &s, const TileView &src) {
  const int64_t Wp = s.W + s.padLeft + s.padRight, Hp = s.H + s.padTop + s.padBottom;
  zeroPadding(b, padded, s);
  for (int64_t n = 0; n < s.N; ++n)
    for (const Span &r : splitRange(s.H, std::max<int64_t>(1, kCopyPieceElements / s.W))) {
      const auto rows = static_cast<uint32_t>(r.count), width = static_cast<uint32_t>(s.W);
      b.copy(padded.pattern((n * Hp + s.padTop + r.start) * Wp + s.padLeft, {FreeDim{Wp, rows}, FreeDim{1, width}}),
             src.pattern((n * s.H + r.start) * s.W, {FreeDim{s.W, rows}, FreeDim{1, width}}));
    }
}

/// The matmul operand form of X's channels `cin`: a zero-padded copy (fillPadded) when the conv pads,
/// else X itself.
TileView denseInput(KernelBuilder &b, const Node &node, const ConvShape &s, const DeviceTensor &x, const Span &cin,
                    DType dtype) {
  if (!s.padded()) return x.partitions(cin.start, cin.count);
  const int64_t Wp = s.W + s.padLeft + s.padRight, Hp = s.H + s.padTop + s.padBottom;
  TileView padded = b.sbuf(node.name() + "/xpad", dtype, cin.count, {s.N * Hp * Wp});
  fillPadded(b, padded, s, x.partitions(cin.start, cin.count));
  return padded;
}

/// W [M, C, KH, KW] as [C][Cout tile][tap][Cout in tile]: row ci holds every tap of every output channel.
std::vector<float> packDenseWeights(const std::vector<float> &w, const ConvShape &s, const std::vector<Span> &coutTiles) {
  const int64_t taps = s.taps();
  std::vector<float> packed(static_cast<size_t>(s.C * taps * s.M));
  for (const Span &co : coutTiles)
    for (int64_t m = 0; m < co.count; ++m)
      for (int64_t c = 0; c < s.C; ++c)
        for (int64_t t = 0; t < taps; ++t)
          packed[static_cast<size_t>(c * taps * s.M + co.start * taps + t * co.count + m)] =
              w[static_cast<size_t>(((co.start + m) * s.C + c) * taps + t)];
  return packed;
}

/// How a block of c channels is stacked on the partitions for a depthwise convolution on the PE:
/// `replicas` copies of the padded image, `stride` partitions apart (partitions() of them in all).
struct ReplicaStack {
  int64_t replicas = 1, stride = 0, channels = 0;
  int64_t partitions() const { return (replicas - 1) * stride + channels; }
  /// Partitions between replicas that no copy writes (the stationary's zero rows meet them).
  bool hasGaps() const { return replicas > 1 && stride > channels; }
};

/// Y stored as the padded input of the convolution `reader` (shape r) reads: per block of 128 channels
/// a tile with room for the reader's replicas (`stack`), zero padding already set, Y in the interior
/// of the first block of partitions. The replicas are copies of that block, padding included, made by
/// the reader; only the partitions between them, when there are any, are zeroed here.
DeviceTensor allocatePaddedInput(KernelBuilder &b, const std::string &name, const ConvShape &r, DType dtype,
                                 const std::function<ReplicaStack(int64_t)> &stack) {
  const int64_t Wp = r.W + r.padLeft + r.padRight, Hp = r.H + r.padTop + r.padBottom;
  DeviceTensor t;
  t.shape = {r.N, r.C, r.H, r.W};
  t.dtype = dtype;
  t.axes = {AxisPlacement{0, Hp * Wp}, AxisPlacement{1, 0}, AxisPlacement{0, Wp}, AxisPlacement{0, 1}};
  t.freeBase = r.padTop * Wp + r.padLeft;
  t.freeSize = r.N * Hp * Wp;
  for (const Span &ch : splitRange(r.C, b.profile().partitions)) {
    const ReplicaStack replicas = stack(ch.count);
    TileView tile = b.sbuf(fmt::format("{}#{}", name, ch.start / b.profile().partitions), dtype, replicas.partitions(),
                           {t.freeSize});
    if (replicas.hasGaps()) {
      b.memset(tile, 0.0f);
    } else {
      zeroPadding(b, tile.partitionSlice(0, ch.count), r);
    }
    t.blocks.push_back(tile);
  }
  return t;
}

/// Whether `x` is stored as the padded input of a convolution of shape s (allocatePaddedInput), in
/// `dtype`, with `partitions` partitions in block `block`.
bool isPaddedInput(const DeviceTensor &x, const ConvShape &s, DType dtype, size_t block, int64_t partitions) {
  const int64_t Wp = s.W + s.padLeft + s.padRight, Hp = s.H + s.padTop + s.padBottom;
  if (!s.padded() || x.rank() != 4 || x.dtype != dtype || x.partitionBase != 0 || x.shape[0] != s.N || x.shape[1] != s.C ||
      x.shape[2] != s.H || x.shape[3] != s.W || x.freeBase != s.padTop * Wp + s.padLeft || x.freeSize != s.N * Hp * Wp)
    return false;
  const int64_t strides[4][2] = {{0, Hp * Wp}, {1, 0}, {0, Wp}, {0, 1}};
  for (int64_t i = 0; i < 4; ++i)
    if (x.axes[i].partitionStride != strides[i][0] || x.axes[i].freeStride != strides[i][1]) return false;
  return block < x.blocks.size() && x.blocks[block].partitions() == partitions;
}

/// X as the padded input its producer stored for this convolution (allocatePaddedInput), if it did.
std::optional<DeviceTensor> storedPaddedInput(LoweringContext &ctx, const Node &node, const ConvShape &s) {
  if (!s.padded() || ctx.isUnloadedInput(node.input(0))) return std::nullopt;
  Expected<DeviceTensor> x = ctx.activation(node.input(0));
  if (!x.ok() || x->isStandard(1)) return std::nullopt;
  return *x;
}

Status emitDenseConv(LoweringContext &ctx, const Node &node, const ConvShape &s, const ConvOutput &o) {
  KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions, bank = ctx.profile().psum.bankFp32Elements;
  const DType dtype = ctx.matmulDtype();
  const std::vector<Span> cinTiles = splitRange(s.C, P), coutTiles = splitRange(s.M, P);

  // X as its producer stored it padded, or in the activation dtype when it is copied into a padded
  // tile anyway (the copy casts), else already cast for the PE.
  const std::optional<DeviceTensor> stored = storedPaddedInput(ctx, node, s);
  std::optional<DeviceTensor> x;
  std::vector<TileView> inputs;
  for (size_t i = 0; i < cinTiles.size(); ++i) {
    if (stored && isPaddedInput(*stored, s, dtype, i, cinTiles[i].count)) {
      inputs.push_back(stored->blocks[i]);
      continue;
    }
    if (!x) {
      Expected<DeviceTensor> e = s.padded() ? ctx.standard(node.input(0), 1) : ctx.standardAs(node.input(0), 1, dtype);
      if (!e.ok()) return e.diag();
      x = *e;
    }
    inputs.push_back(denseInput(b, node, s, *x, cinTiles[i], dtype));
  }
  const int64_t Wi = s.padded() ? s.W + s.padLeft + s.padRight : s.W;
  const int64_t imageSize = (s.padded() ? s.H + s.padTop + s.padBottom : s.H) * Wi;

  const HbmView wHbm = ctx.constantHbm(node.name() + "/w", dtype, {s.C, s.taps() * s.M},
                                       packDenseWeights(ctx.constantFloats(node.input(1)), s, coutTiles));
  std::vector<TileView> weights;
  for (const Span &ci : cinTiles) {
    TileView tile = b.sbuf(node.name() + "/w", dtype, ci.count, {s.taps() * s.M});
    b.load(tile, wHbm.rows(ci.start, ci.count));
    weights.push_back(tile);
  }

  TileRing accRing(MemSpace::PSUM, node.name() + "/acc", DType::F32, std::min(P, s.M), {bank}, kPsumSlots);
  for (const OutputChunk &chunk : splitOutput(s.N, s.OH, s.OW, bank)) {
    for (const Span &co : coutTiles) {
      TileView acc = accRing.next(b).partitionSlice(0, co.count).cols(0, chunk.size());
      bool first = true;
      for (size_t i = 0; i < cinTiles.size(); ++i)
        for (int64_t kh = 0; kh < s.KH; ++kh)
          for (int64_t kw = 0; kw < s.KW; ++kw) {
            const int64_t offset = chunk.n0 * imageSize + (chunk.oh0 * s.strideH + kh * s.dilationH) * Wi +
                                   chunk.ow0 * s.strideW + kw * s.dilationW;
            TileView moving = inputs[i].pattern(offset, windowDims(chunk.images, imageSize, chunk.rows, s.strideH * Wi,
                                                                   chunk.cols, s.strideW));
            const int64_t tap = kh * s.KW + kw;
            TileView stationary = weights[i].cols(co.start * s.taps() + tap * co.count, co.count);
            b.matmul(acc, stationary, moving, /*accumulate=*/!first);
            first = false;
          }
      evictChunk(ctx, s, o, co.start, co.count, chunk, acc);
    }
  }
  return Status::success();
}

// ---- Stems: (kh, c) folded into the contraction ---------------------------------------------------------

/// The tap rows kh of output row oh that read inside X: [first, last]; first > last when none do.
std::pair<int64_t, int64_t> validTapRows(const ConvShape &s, int64_t oh) {
  const int64_t base = oh * s.strideH - s.padTop;  // Input row of kh = 0.
  const int64_t first = base >= 0 ? 0 : ceilDiv(-base, s.dilationH);
  const int64_t last = base > s.H - 1 ? -1 : std::min(s.KH - 1, (s.H - 1 - base) / s.dilationH);
  return {first, last};
}

/// Whether the folded form applies: few enough (c, kh) pairs for the partitions, and every output
/// row's valid tap rows a prefix or a suffix of kh (true unless the image is shorter than the kernel).
bool foldable(const ConvShape &s, int64_t partitions) {
  if (s.group != 1 || s.KH < 2 || s.C * s.KH > partitions) return false;
  for (int64_t oh = 0; oh < s.OH; ++oh) {
    auto [first, last] = validTapRows(s, oh);
    if (first > last || (first > 0 && last < s.KH - 1)) return false;
  }
  return true;
}

/// Bytes per partition of one block of [N, channels, rows, cols] with channels on partitions, in f32
/// (the widest dtype an emitter stores it in).
int64_t channelBlockBytes(int64_t N, int64_t rows, int64_t cols) { return N * rows * cols * dtypeSizeBytes(DType::F32); }

/// Why a block of each of the convolution's SBUF-resident tensors cannot fit the profile's SBUF
/// together: X (unless the folded stem streams it from HBM), Y and the residual Z, each at the largest
/// form emitConv may store it in (channels on partitions, padded for a padded reader; row bands are
/// smaller).
std::string convSbufReason(const Node &node, const LoweringOptions &options) {
  ConvShape s;
  if (!options.profile || !readConvShape(node, s).empty()) return "";
  int64_t bytes = 0;
  if (!foldable(s, options.profile->partitions))
    bytes += channelBlockBytes(s.N, s.H + s.padTop + s.padBottom, s.W + s.padLeft + s.padRight);
  ConvShape r;
  const Value *y = node.output(0);
  const bool paddedForReader = y->uses().size() == 1 && isConvNode(*y->uses().front().user) &&
                               readConvShape(*y->uses().front().user, r).empty();
  bytes += paddedForReader ? channelBlockBytes(r.N, r.H + r.padTop + r.padBottom, r.W + r.padLeft + r.padRight)
                           : channelBlockBytes(s.N, s.OH, s.OW);
  if (isPresent(node.input(3))) bytes += channelBlockBytes(s.N, s.OH, s.OW);
  const int64_t sbuf = options.profile->sbuf.bytesPerPartition;
  if (bytes <= sbuf) return "";
  return fmt::format("a block of its input, output and residual with channels on partitions needs up to {} bytes per "
                     "partition of SBUF; {} has {}",
                     bytes, options.profile->name, sbuf);
}

std::string checkConvOnDevice(const Node &node, const LoweringOptions &options) {
  if (std::string why = checkConv(node, options); !why.empty()) return why;
  return convSbufReason(node, options);
}

/// W as [(kh, c)][Cout tile][kw][Cout in tile] with partition kh * C + c, or (KH - 1 - kh) * C + c
/// when `reversed`.
std::vector<float> packFoldedWeights(const std::vector<float> &w, const ConvShape &s, const std::vector<Span> &coutTiles,
                                     bool reversed) {
  const int64_t row = s.KW * s.M;
  std::vector<float> packed(static_cast<size_t>(s.C * s.KH * row));
  for (const Span &co : coutTiles)
    for (int64_t m = 0; m < co.count; ++m)
      for (int64_t c = 0; c < s.C; ++c)
        for (int64_t kh = 0; kh < s.KH; ++kh)
          for (int64_t kw = 0; kw < s.KW; ++kw) {
            const int64_t p = (reversed ? s.KH - 1 - kh : kh) * s.C + c;
            packed[static_cast<size_t>(p * row + co.start * s.KW + kw * co.count + m)] =
                w[static_cast<size_t>((((co.start + m) * s.C + c) * s.KH + kh) * s.KW + kw)];
          }
  return packed;
}

class FoldedConv {
 public:
  FoldedConv(LoweringContext &ctx, const Node &node, const ConvShape &s, const ConvOutput &o, HbmView x)
      : ctx_(ctx), b_(ctx.builder()), node_(node), s_(s), o_(o), x_(std::move(x)), K_(s.C * s.KH),
        Wp_(s.W + s.padLeft + s.padRight), bank_(ctx.profile().psum.bankFp32Elements),
        coutTiles_(splitRange(s.M, ctx.profile().partitions)),
        accRing_(MemSpace::PSUM, node.name() + "/acc", DType::F32, std::min(ctx.profile().partitions, s.M), {bank_},
                 kPsumSlots) {}

  void emit() {
    if (std::optional<std::vector<bool>> reversed = bandsReversed()) return emitOnBands(*reversed);
    const std::vector<float> w = ctx_.constantFloats(node_.input(1));
    int64_t top = 0, bottom = s_.OH;  // Rows [0, top) lack leading tap rows, [bottom, OH) trailing ones.
    while (top < s_.OH && validTapRows(s_, top).first > 0) ++top;
    while (bottom > top && validTapRows(s_, bottom - 1).second < s_.KH - 1) --bottom;
    const TileView weights = loadWeights(w, /*reversed=*/false);
    const std::optional<TileView> reversedWeights =
        top > 0 ? std::optional<TileView>(loadWeights(w, /*reversed=*/true)) : std::nullopt;

    // Bands of output rows whose DMA moves about kDmaChunkTargetBytes per partition, in whole chunks.
    const int64_t chunkRows = std::max<int64_t>(1, std::min(s_.OH, bank_ / s_.OW));
    const int64_t rowBytes = s_.W * dtypeSizeBytes(x_.dtype());
    const int64_t bandRows = chunkRows * std::max<int64_t>(1, kernels::kDmaChunkTargetBytes / (chunkRows * rowBytes));
    TileRing bandRing(MemSpace::SBUF, node_.name() + "/xfold", ctx_.matmulDtype(), K_, {bandRows * Wp_}, kBandSlots);

    for (int64_t n = 0; n < s_.N; ++n) {
      if (top > 0) {
        TileView tile = b_.sbuf(node_.name() + "/xfold_top", ctx_.matmulDtype(), K_, {top * Wp_});
        b_.memset(tile, 0.0f);
        for (int64_t oh = 0; oh < top; ++oh) loadEdgeRow(tile, n, oh, 0, /*reversed=*/true);
        multiply(tile, *reversedWeights, n, 0, top);
      }
      for (const Span &band : splitRange(s_.OH - top, bandRows)) {
        const int64_t r0 = top + band.start, r1 = r0 + band.count;
        TileView tile = bandRing.next(b_);
        const int64_t inner = std::min(r1, bottom) - r0;
        if (inner > 0) loadInnerRows(tile, n, r0, inner);
        for (int64_t oh = std::max(r0, bottom); oh < r1; ++oh) {
          b_.memset(tile.pattern((oh - r0) * Wp_, {FreeDim{1, static_cast<uint32_t>(Wp_)}}), 0.0f);
          loadEdgeRow(tile, n, oh, r0, /*reversed=*/false);
        }
        multiply(tile, weights, n, r0, r1);
      }
    }
  }

 private:
  /// Partitions from one band's folded rows to the next: a quadrant, where a DMA may start.
  static constexpr int64_t kFoldedBandStride = 32;

  /// Output row of tile row j of band `band` when Y is banded.
  int64_t bandRow(int64_t band, int64_t j) const { return band * o_.out.bands.rows - o_.out.bands.top + j; }

  /// When Y is banded (its reader's padded input) and the stem can compute on the same bands: per
  /// band whether its (kh, c) rows go in reversed kh order, which makes the valid tap rows of its
  /// top-edge rows a prefix, as a DMA must start at a band's first partition. nullopt when a band has
  /// both edges, or the bands' folded rows do not fit the partitions.
  std::optional<std::vector<bool>> bandsReversed() const {
    const RowBands &bands = o_.out.bands;
    const int64_t P = ctx_.profile().partitions;
    if (bands.count == 0 || s_.N != 1 || K_ > kFoldedBandStride || (bands.count - 1) * kFoldedBandStride + K_ > P ||
        s_.M > bands.stride || s_.OW > bank_)
      return std::nullopt;
    std::vector<bool> reversed(static_cast<size_t>(bands.count), false);
    for (int64_t band = 0; band < bands.count; ++band) {
      bool topEdge = false, bottomEdge = false;
      for (int64_t j = 0; j < bands.tileRows; ++j) {
        const int64_t oh = bandRow(band, j);
        if (oh < 0 || oh >= s_.OH) continue;
        auto [first, last] = validTapRows(s_, oh);
        topEdge |= first > 0;
        bottomEdge |= last < s_.KH - 1;
      }
      if (topEdge && bottomEdge) return std::nullopt;
      reversed[static_cast<size_t>(band)] = topEdge;
    }
    return reversed;
  }

  /// The stem on Y's bands: band b's folded rows on partitions [32 b, 32 b + K), so one matmul per
  /// column tap covers every band with a block-diagonal stationary and its eviction writes all bands'
  /// rows (halos included) at once. Tile rows outside the image compute from zero rows and are zeroed
  /// again after their eviction.
  void emitOnBands(const std::vector<bool> &reversed) {
    const RowBands &bands = o_.out.bands;
    const int64_t Sf = kFoldedBandStride, K = (bands.count - 1) * Sf + K_, P = bands.count * bands.stride;
    const DType dtype = ctx_.matmulDtype();
    const std::vector<float> w = ctx_.constantFloats(node_.input(1));
    std::vector<float> packed(static_cast<size_t>(K * s_.KW * P), 0.0f);
    for (int64_t band = 0; band < bands.count; ++band)
      for (int64_t m = 0; m < s_.M; ++m)
        for (int64_t c = 0; c < s_.C; ++c)
          for (int64_t kh = 0; kh < s_.KH; ++kh)
            for (int64_t kw = 0; kw < s_.KW; ++kw) {
              const int64_t row = band * Sf + (reversed[static_cast<size_t>(band)] ? s_.KH - 1 - kh : kh) * s_.C + c;
              packed[static_cast<size_t>(row * s_.KW * P + kw * P + band * bands.stride + m)] =
                  w[static_cast<size_t>(((m * s_.C + c) * s_.KH + kh) * s_.KW + kw)];
            }
    const HbmView wHbm = ctx_.constantHbm(node_.name() + "/w_bands", dtype, {K, s_.KW * P}, packed);
    TileView weights = b_.sbuf(node_.name() + "/w", dtype, K, {s_.KW * P});
    b_.load(weights, wHbm);

    const int64_t chunkRows = std::max<int64_t>(1, bank_ / s_.OW);
    const int64_t rowBytes = s_.W * dtypeSizeBytes(x_.dtype());
    const int64_t sliceRows = chunkRows * std::max<int64_t>(1, kernels::kDmaChunkTargetBytes / (chunkRows * rowBytes));
    TileRing sliceRing(MemSpace::SBUF, node_.name() + "/xfold", dtype, K, {sliceRows * Wp_}, kBandSlots);
    TileRing accRing(MemSpace::PSUM, node_.name() + "/acc", DType::F32, P, {bank_}, kPsumSlots);
    const int64_t rowPitch = o_.out.axes[2].freeStride;
    for (const Span &slice : splitRange(bands.tileRows, sliceRows)) {
      // Zeros where no DMA writes: the pad columns, invalid tap rows, the partitions between bands.
      TileView tile = sliceRing.next(b_);
      b_.memset(tile, 0.0f);
      for (int64_t band = 0; band < bands.count; ++band) loadBandRows(tile, band, slice, reversed[static_cast<size_t>(band)]);
      for (const Span &chunk : splitRange(slice.count, chunkRows)) {
        TileView acc = accRing.next(b_).cols(0, chunk.count * s_.OW);
        for (int64_t kw = 0; kw < s_.KW; ++kw) {
          TileView moving = tile.pattern(chunk.start * Wp_ + kw * s_.dilationW,
                                         windowDims(1, 0, chunk.count, Wp_, s_.OW, s_.strideW));
          b_.matmul(acc, weights.cols(kw * P, P), moving, /*accumulate=*/kw > 0);
        }
        const int64_t j0 = slice.start + chunk.start;
        std::optional<TileView> bias;
        if (!o_.bias.empty()) bias = o_.bias[0];
        emitEpilogue(ctx_,
                     o_.out.blocks[0].pattern(o_.out.freeBase + (j0 - bands.top) * rowPitch,
                                              windowDims(1, 0, chunk.count, rowPitch, s_.OW, 1)),
                     acc.pattern(0, windowDims(1, 0, chunk.count, s_.OW, s_.OW, 1)), bias, std::nullopt, o_.epilogue);
        for (int64_t band = 0; band < bands.count; ++band)
          for (int64_t j = j0; j < j0 + chunk.count; ++j)
            if (bandRow(band, j) < 0 || bandRow(band, j) >= s_.OH)
              b_.memset(o_.out.blocks[0].partitionSlice(band * bands.stride, bands.stride)
                            .pattern(j * rowPitch, {FreeDim{1, static_cast<uint32_t>(rowPitch)}}),
                        0.0f);
      }
    }
  }

  /// Band `band`'s folded rows for tile rows `slice` into `tile` (zeroed), from partition 32 * band:
  /// per output row its valid tap rows, a prefix in the band's kh order; the rows whose taps are all
  /// valid in one DMA.
  void loadBandRows(const TileView &tile, int64_t band, const Span &slice, bool reversed) {
    const TileView rows = tile.partitionSlice(band * kFoldedBandStride, K_);
    const int64_t step = (reversed ? -1 : 1) * s_.dilationH * s_.W;
    const auto width = static_cast<uint32_t>(s_.W);
    int64_t j = slice.start;
    while (j < slice.start + slice.count) {
      const int64_t oh = bandRow(band, j);
      if (oh < 0 || oh >= s_.OH) {
        ++j;
        continue;
      }
      auto [first, last] = validTapRows(s_, oh);
      if (first == 0 && last == s_.KH - 1) {
        int64_t count = 1;  // The run of rows with every tap valid.
        while (j + count < slice.start + slice.count && bandRow(band, j + count) < s_.OH &&
               validTapRows(s_, bandRow(band, j + count)) == std::pair<int64_t, int64_t>{0, s_.KH - 1})
          ++count;
        const int64_t kh0 = reversed ? s_.KH - 1 : 0;
        HbmView src = x_.pattern(xOffset(0, oh * s_.strideH + kh0 * s_.dilationH - s_.padTop),
                                 {FreeDim{step, static_cast<uint32_t>(s_.KH)}, FreeDim{s_.H * s_.W, static_cast<uint32_t>(s_.C)},
                                  FreeDim{s_.strideH * s_.W, static_cast<uint32_t>(count)}, FreeDim{1, width}});
        b_.load(rows.pattern((j - slice.start) * Wp_ + s_.padLeft, {FreeDim{Wp_, static_cast<uint32_t>(count)}, FreeDim{1, width}}),
                src);
        j += count;
        continue;
      }
      const int64_t valid = last - first + 1, kh0 = reversed ? last : first;
      HbmView src = x_.pattern(xOffset(0, oh * s_.strideH + kh0 * s_.dilationH - s_.padTop),
                               {FreeDim{step, static_cast<uint32_t>(valid)}, FreeDim{s_.H * s_.W, static_cast<uint32_t>(s_.C)},
                                FreeDim{1, width}});
      b_.load(rows.partitionSlice(0, valid * s_.C).pattern((j - slice.start) * Wp_ + s_.padLeft, {FreeDim{1, width}}), src);
      ++j;
    }
  }

  TileView loadWeights(const std::vector<float> &w, bool reversed) {
    const DType dtype = ctx_.matmulDtype();
    const HbmView hbm = ctx_.constantHbm(node_.name() + (reversed ? "/w_reversed" : "/w"), dtype, {K_, s_.KW * s_.M},
                                         packFoldedWeights(w, s_, coutTiles_, reversed));
    TileView tile = b_.sbuf(node_.name() + "/w", dtype, K_, {s_.KW * s_.M});
    b_.load(tile, hbm);
    return tile;
  }

  /// Offset in X (HBM, row-major) of channel 0, row `row` of image n.
  int64_t xOffset(int64_t n, int64_t row) const { return (n * s_.C * s_.H + row) * s_.W; }

  /// Output rows [r0, r0 + count), all of whose tap rows are inside X, into band rows [0, count) with
  /// one DMA: partition kh * C + c, row oh, column pad + w <- X[n, c, oh * s + kh * d - pad, w]. The
  /// pad columns are zeroed first.
  void loadInnerRows(const TileView &tile, int64_t n, int64_t r0, int64_t count) {
    const auto rows = static_cast<uint32_t>(count), width = static_cast<uint32_t>(s_.W);
    if (s_.padLeft > 0)
      b_.memset(tile.pattern(0, {FreeDim{Wp_, rows}, FreeDim{1, static_cast<uint32_t>(s_.padLeft)}}), 0.0f);
    if (s_.padRight > 0)
      b_.memset(tile.pattern(s_.padLeft + s_.W, {FreeDim{Wp_, rows}, FreeDim{1, static_cast<uint32_t>(s_.padRight)}}),
                0.0f);
    HbmView src = x_.pattern(xOffset(n, r0 * s_.strideH - s_.padTop),
                             {FreeDim{s_.dilationH * s_.W, static_cast<uint32_t>(s_.KH)},
                              FreeDim{s_.H * s_.W, static_cast<uint32_t>(s_.C)}, FreeDim{s_.strideH * s_.W, rows},
                              FreeDim{1, width}});
    b_.load(tile.pattern(s_.padLeft, {FreeDim{Wp_, rows}, FreeDim{1, width}}), src);
  }

  /// One edge row into band row oh - r0 of a zeroed row: only its valid tap rows, which are the
  /// leading partitions (kh ascending at the bottom edge, descending in the reversed top tile).
  void loadEdgeRow(const TileView &tile, int64_t n, int64_t oh, int64_t r0, bool reversed) {
    auto [first, last] = validTapRows(s_, oh);
    const int64_t count = last - first + 1;
    const int64_t kh0 = reversed ? last : first;  // Tap row of partition block 0.
    const int64_t step = (reversed ? -1 : 1) * s_.dilationH * s_.W;
    HbmView src = x_.pattern(xOffset(n, oh * s_.strideH + kh0 * s_.dilationH - s_.padTop),
                             {FreeDim{step, static_cast<uint32_t>(count)}, FreeDim{s_.H * s_.W, static_cast<uint32_t>(s_.C)},
                              FreeDim{1, static_cast<uint32_t>(s_.W)}});
    b_.load(tile.partitionSlice(0, count * s_.C).pattern((oh - r0) * Wp_ + s_.padLeft,
                                                         {FreeDim{1, static_cast<uint32_t>(s_.W)}}),
            src);
  }

  /// KW matmuls of K = C * KH per chunk of output rows [r0, r1) held in `tile` from row r0.
  void multiply(const TileView &tile, const TileView &weights, int64_t n, int64_t r0, int64_t r1) {
    std::vector<OutputChunk> chunks;
    splitRows(n, r0, r1, s_.OW, bank_, chunks);
    for (const OutputChunk &chunk : chunks)
      for (const Span &co : coutTiles_) {
        TileView acc = accRing_.next(b_).partitionSlice(0, co.count).cols(0, chunk.size());
        for (int64_t kw = 0; kw < s_.KW; ++kw) {
          TileView moving = tile.pattern((chunk.oh0 - r0) * Wp_ + chunk.ow0 * s_.strideW + kw * s_.dilationW,
                                         windowDims(1, 0, chunk.rows, Wp_, chunk.cols, s_.strideW));
          TileView stationary = weights.cols(co.start * s_.KW + kw * co.count, co.count);
          b_.matmul(acc, stationary, moving, /*accumulate=*/kw > 0);
        }
        evictChunk(ctx_, s_, o_, co.start, co.count, chunk, acc);
      }
  }

  LoweringContext &ctx_;
  KernelBuilder &b_;
  const Node &node_;
  const ConvShape &s_;
  const ConvOutput &o_;
  HbmView x_;
  int64_t K_, Wp_, bank_;
  std::vector<Span> coutTiles_;
  TileRing accRing_;
};

// ---- Depthwise: per-channel stencil ----------------------------------------------------------------------

/// The outputs of `chunk` whose window for tap (kh, kw) lies inside X: rows [row0, row0 + rows) and
/// columns [col0, col0 + cols) (rows or cols 0 when none).
struct TapRect {
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
};

TapRect tapRect(const ConvShape &s, const OutputChunk &chunk, int64_t kh, int64_t kw) {
  const Span rows = insideRange(chunk.oh0, chunk.rows, s.strideH, kh * s.dilationH - s.padTop, s.H);
  const Span cols = insideRange(chunk.ow0, chunk.cols, s.strideW, kw * s.dilationW - s.padLeft, s.W);
  return {rows.start, rows.count, cols.start, cols.count};
}

Status emitDepthwiseConv(LoweringContext &ctx, const Node &node, const ConvShape &s, const ConvOutput &o) {
  KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, ctx.standard(node.input(0), 1));
  // W [C, 1, KH, KW] is already [C, taps]: one per-partition scale column per tap.
  const HbmView wHbm = ctx.constantHbm(node.name() + "/w", DType::F32, {s.C, s.taps()}, ctx.constantFloats(node.input(1)));
  TileRing accRing(MemSpace::SBUF, node.name() + "/acc", DType::F32, std::min(P, s.C), {kStencilChunk}, kStencilSlots);
  TileRing productRing(MemSpace::SBUF, node.name() + "/product", DType::F32, std::min(P, s.C), {kStencilChunk},
                       kStencilSlots);
  const std::vector<OutputChunk> chunks = splitOutput(s.N, s.OH, s.OW, kStencilChunk);

  for (const Span &ch : splitRange(s.C, P)) {
    TileView weights = b.sbuf(node.name() + "/w", DType::F32, ch.count, {s.taps()});
    b.load(weights, wHbm.rows(ch.start, ch.count));
    const TileView input = x.partitions(ch.start, ch.count);
    for (const OutputChunk &chunk : chunks) {
      const TileView acc = accRing.next(b).partitionSlice(0, ch.count);
      const int64_t imageSize = chunk.rows * chunk.cols;  // Of the chunk's layout in acc.
      // One tap whose window is inside X for the whole chunk initialises acc; without one, zeros do.
      std::optional<int64_t> fullTap;
      for (int64_t t = 0; t < s.taps() && !fullTap; ++t) {
        TapRect r = tapRect(s, chunk, t / s.KW, t % s.KW);
        if (r.rows == chunk.rows && r.cols == chunk.cols) fullTap = t;
      }
      if (!fullTap) b.memset(acc.cols(0, chunk.size()), 0.0f);
      std::vector<int64_t> order;  // The initialising tap first.
      if (fullTap) order.push_back(*fullTap);
      for (int64_t t = 0; t < s.taps(); ++t)
        if (t != fullTap) order.push_back(t);
      for (int64_t t : order) {
        const int64_t kh = t / s.KW, kw = t % s.KW;
        const TapRect r = tapRect(s, chunk, kh, kw);
        if (r.rows == 0 || r.cols == 0) continue;
        const TileView window = input.pattern(
            (chunk.n0 * s.H + r.row0 * s.strideH + kh * s.dilationH - s.padTop) * s.W + r.col0 * s.strideW +
                kw * s.dilationW - s.padLeft,
            windowDims(chunk.images, s.H * s.W, r.rows, s.strideH * s.W, r.cols, s.strideW));
        const int64_t accOffset = (r.row0 - chunk.oh0) * chunk.cols + (r.col0 - chunk.ow0);
        const std::vector<FreeDim> accDims = windowDims(chunk.images, imageSize, r.rows, chunk.cols, r.cols, 1);
        const TileView scale = weights.cols(t, 1);
        if (fullTap == t) {
          b.activation(acc.pattern(accOffset, accDims), window, ActFunc::Copy, kernels::activationArgs(scale));
          continue;
        }
        const TileView product = productRing.next(b).partitionSlice(0, ch.count).pattern(accOffset, accDims);
        b.activation(product, window, ActFunc::Copy, kernels::activationArgs(scale));
        const TileView sum = acc.pattern(accOffset, accDims);
        b.tensorTensor(sum, sum, product, AluOp::Add);
      }
      evictChunk(ctx, s, o, ch.start, ch.count, chunk, acc.cols(0, chunk.size()));
    }
  }
  return Status::success();
}

/// diagonal = eye * scale (a per-partition [P, 1] weight), rounded to diagonal's dtype on the write:
/// ACT, DVE and POOL in turn by `tap`, so that a layer's diagonals, 128 elements per partition each
/// and made while the weights arrive, load no engine that also evicts.
void emitDiagonal(KernelBuilder &b, const TileView &diagonal, const TileView &eye, const TileView &scale, int64_t tap) {
  switch (tap % 3) {
    case 0: b.activation(diagonal, eye, ActFunc::Copy, kernels::activationArgs(scale)); break;
    case 1: b.tensorScalar(diagonal, eye, AluOp::Multiply, scale, AluOp::None, 0.0f, Engine::DVE); break;
    default: b.tensorScalar(diagonal, eye, AluOp::Multiply, scale, AluOp::None, 0.0f, Engine::POOL); break;
  }
}

/// The column taps of an unfolded depthwise block whose diagonals ACT makes, one instruction each; POOL
/// makes the other columns' in one instruction for the whole block (its start cost paid once). Where
/// POOL shares DVE's SBUF port (nc-v2), which the evictions' clamps keep busy, ACT makes them all
/// (MobileNetV2 on nc-v2: 190.2 -> 178.0 us; two columns on ACT: 180.3); elsewhere ACT takes all but
/// the last column (nc-v3: 184.8 -> 184.7; all on ACT: 186.8, which loads ACT's evictions).
int64_t actDiagonalColumns(const MachineProfile &profile, int64_t KW) {
  return hasPortConflict(profile, "dve", "pool", "sbuf") ? KW : std::max<int64_t>(1, KW - 1);
}

/// diagonals[:, t * c + j] = eye[:, j] * weights[:, t] for the KH x KW taps t of an unfolded block of c
/// channels (eye [c, c], weights [c, taps] f32, diagonals [c, taps * c]), rounded to diagonals' dtype.
void emitDiagonals(KernelBuilder &b, const TileView &diagonals, const TileView &eye, const TileView &weights,
                   int64_t KH, int64_t KW) {
  const int64_t c = eye.partitions(), actColumns = actDiagonalColumns(b.profile(), KW);
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < actColumns; ++kw) {
      const int64_t t = kh * KW + kw;
      b.activation(diagonals.cols(t * c, c), eye, ActFunc::Copy, kernels::activationArgs(weights.cols(t, 1)));
    }
  if (actColumns == KW) return;
  const auto rows = static_cast<uint32_t>(KH), columns = static_cast<uint32_t>(KW - actColumns);
  const auto width = static_cast<uint32_t>(c);
  b.tensorTensor(diagonals.pattern(actColumns * c, {FreeDim{KW * c, rows}, FreeDim{c, columns}, FreeDim{1, width}}),
                 eye.pattern(0, {FreeDim{0, rows}, FreeDim{0, columns}, FreeDim{1, width}}),
                 weights.pattern(actColumns, {FreeDim{KW, rows}, FreeDim{1, columns}, FreeDim{0, width}}),
                 AluOp::Multiply, Engine::POOL);
}

/// Depthwise W [C, 1, KH, KW] as [partition][block][tap] with channel block * P + partition, zero past
/// C: one contiguous run per partition for all blocks.
std::vector<float> packDepthwiseWeights(const std::vector<float> &w, const ConvShape &s, int64_t P) {
  const int64_t rows = std::min(P, s.C), blocks = ceilDiv(s.C, P), taps = s.taps();
  std::vector<float> packed(static_cast<size_t>(rows * blocks * taps), 0.0f);
  for (int64_t c = 0; c < s.C; ++c)
    std::copy_n(w.begin() + c * taps, taps, packed.begin() + ((c % P) * blocks + c / P) * taps);
  return packed;
}

/// Partitions from one replica's start to the next for a block of c channels: the aligned starts a
/// c-partition operand may have (T6: multiples of 32 up to 32 partitions, of 64 up to 64). Vector
/// engines may move a quadrant (<= 32 partitions) or a half (<= 64) to another one (section 4.2), which
/// is how the replicas are made.
int64_t replicaStride(int64_t c) { return c <= 32 ? 32 : c <= 64 ? 64 : 128; }

/// The column taps one depthwise matmul covers for a block of c channels: R replicas of the padded
/// input stacked on the partitions, replica r shifted by r column taps, so that a matmul of K = R
/// blocks sums R taps. 1 (no replicas) when the PE time it saves is less than the copies cost: each
/// replica is one more pass over the padded image, on ACT's clock.
int64_t foldedColumnTaps(const MachineProfile &profile, const ConvShape &s, int64_t c, DType dtype) {
  const int64_t replicas = std::min(s.KW, profile.partitions / replicaStride(c));
  if (!s.padded() || replicas < 2) return 1;
  double savedNs = 0;
  for (const OutputChunk &chunk : splitOutput(s.N, s.OH, s.OW, profile.psum.bankFp32Elements)) {
    const MatmulShape shape{c, c, chunk.size(), peDtypeOf(dtype)};
    const int64_t saved = s.KH * (s.KW - ceilDiv(s.KW, replicas));
    savedNs += static_cast<double>(saved) * cyclesToNs(profile, Engine::PE, static_cast<double>(costMatmulCycles(profile, shape)));
  }
  const int64_t paddedSize = s.N * (s.H + s.padTop + s.padBottom) * (s.W + s.padLeft + s.padRight);
  const double copyNs = static_cast<double>(replicas - 1) *
                        cyclesToNs(profile, Engine::ACT, static_cast<double>(costActivationCycles(profile, paddedSize, false)));
  return savedNs > copyNs ? replicas : 1;
}

/// The replica stack of a block of c channels of a depthwise convolution on the PE.
ReplicaStack replicaStackFor(const MachineProfile &profile, const ConvShape &s, int64_t c, DType dtype) {
  const int64_t replicas = foldedColumnTaps(profile, s, c, dtype);
  return ReplicaStack{replicas, replicas > 1 ? replicaStride(c) : c, c};
}

/// Depthwise on the PE: tap t is a matmul with stationary diag(W[:, t]) over the channel block, so the
/// taps accumulate in PSUM like a dense convolution's and the vector engines only evict. The
/// diagonals are made on chip: an identity times each tap's per-partition weight, rounded to the
/// matmul dtype on the way (emitDiagonal). A block of at most 64 channels would leave most of the
/// array idle: it folds R column taps into one matmul (foldedColumnTaps), its stationary then stacking
/// diag(W[:, (kh, kw0 + r)]) for r < R on the replicas' partitions, with zero rows between them.
Status emitDepthwiseConvOnPe(LoweringContext &ctx, const Node &node, const ConvShape &s, const ConvOutput &o) {
  KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions, bank = ctx.profile().psum.bankFp32Elements;
  const DType dtype = ctx.matmulDtype();
  const std::optional<DeviceTensor> stored = storedPaddedInput(ctx, node, s);
  std::optional<DeviceTensor> x;
  const int64_t Wi = s.padded() ? s.W + s.padLeft + s.padRight : s.W;
  const int64_t imageSize = (s.padded() ? s.H + s.padTop + s.padBottom : s.H) * Wi;
  const TileView identity = ctx.identity(dtype);
  TileRing accRing(MemSpace::PSUM, node.name() + "/acc", DType::F32, std::min(P, s.C), {bank}, kPsumSlots);
  const std::vector<Span> channelTiles = splitRange(s.C, P);
  const HbmView wHbm = ctx.constantHbm(node.name() + "/w", DType::F32,
                                       {std::min(P, s.C), s.taps() * static_cast<int64_t>(channelTiles.size())},
                                       packDepthwiseWeights(ctx.constantFloats(node.input(1)), s, P));
  // Every block's taps in one DMA (a block's alone are 36 bytes per partition, one DMA chunk each);
  // blocks with replicas load their own copies instead.
  std::vector<ReplicaStack> stacks;
  for (const Span &ch : channelTiles) stacks.push_back(replicaStackFor(ctx.profile(), s, ch.count, dtype));
  std::optional<TileView> allWeights;
  if (std::any_of(stacks.begin(), stacks.end(), [](const ReplicaStack &r) { return r.replicas == 1; })) {
    allWeights = b.sbuf(node.name() + "/w", DType::F32, std::min(P, s.C),
                        {s.taps() * static_cast<int64_t>(channelTiles.size())});
    b.load(*allWeights, wHbm);
  }
  for (size_t i = 0; i < channelTiles.size(); ++i) {
    const Span &ch = channelTiles[i];
    const ReplicaStack &stack = stacks[i];
    const int64_t c = ch.count, replicas = stack.replicas, stride = stack.stride;
    const int64_t groupsPerRow = ceilDiv(s.KW, replicas), groups = s.KH * groupsPerRow;
    auto span = [&](int64_t count) { return (count - 1) * stride + c; };  // Partitions of `count` replicas.
    const int64_t partitions = stack.partitions();
    const bool padded = stored && isPaddedInput(*stored, s, dtype, i, partitions);
    if (!padded && !x) {
      Expected<DeviceTensor> e = s.padded() ? ctx.standard(node.input(0), 1) : ctx.standardAs(node.input(0), 1, dtype);
      if (!e.ok()) return e.diag();
      x = *e;
    }

    // Per group (kh, kw0): the stacked diagonals of its taps, zero where no replica's channels are.
    TileView weights;
    if (replicas == 1) {
      weights = allWeights->partitionSlice(0, c).cols(static_cast<int64_t>(i) * s.taps(), s.taps());
    } else {
      weights = b.sbuf(node.name() + "/w_replicas", DType::F32, partitions, {s.taps()});
      for (int64_t r = 0; r < replicas; ++r)
        b.load(weights.partitionSlice(r * stride, c), wHbm.rows(0, c).cols(static_cast<int64_t>(i) * s.taps(), s.taps()));
    }
    TileView diagonals = b.sbuf(node.name() + "/diag", dtype, partitions, {groups * c});
    if (stack.hasGaps()) b.memset(diagonals, 0.0f);
    if (replicas == 1) {
      emitDiagonals(b, diagonals, identity.partitionSlice(0, c).cols(0, c), weights, s.KH, s.KW);
    } else {
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t kh = g / groupsPerRow, kw0 = (g % groupsPerRow) * replicas;
        for (int64_t r = 0; r < replicas && kw0 + r < s.KW; ++r) {
          const int64_t t = kh * s.KW + kw0 + r;
          emitDiagonal(b, diagonals.partitionSlice(r * stride, c).cols(g * c, c),
                       identity.partitionSlice(r * stride, c).cols(r * stride, c),
                       weights.partitionSlice(r * stride, c).cols(t, 1), t);
        }
      }
    }

    TileView input;
    if (padded) {
      input = stored->blocks[i];
    } else if (replicas == 1) {
      input = denseInput(b, node, s, *x, ch, dtype);
    } else {
      input = b.sbuf(node.name() + "/xpad", dtype, partitions, {s.N * imageSize});
      if (stack.hasGaps()) b.memset(input, 0.0f);  // The rows between replicas meet zero stationary rows.
      fillPadded(b, input.partitionSlice(0, c), s, x->partitions(ch.start, c));
    }
    if (replicas > 1) {
      // Replica r holds the padded image from element r * dilationW on: reading it where tap
      // (kh, kw0) reads replica 0 gives tap (kh, kw0 + r)'s window.
      for (int64_t r = 1; r < replicas; ++r) {
        const int64_t shift = r * s.dilationW, length = s.N * imageSize - shift;
        for (const Span &piece : splitRange(length, kCopyPieceElements))
          b.copy(input.partitionSlice(r * stride, c).cols(piece.start, piece.count),
                 input.partitionSlice(0, c).cols(shift + piece.start, piece.count));
      }
    }
    for (const OutputChunk &chunk : splitOutput(s.N, s.OH, s.OW, bank)) {
      TileView acc = accRing.next(b).partitionSlice(0, c).cols(0, chunk.size());
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t kh = g / groupsPerRow, kw0 = (g % groupsPerRow) * replicas;
        const int64_t k = span(std::min(replicas, s.KW - kw0));
        const int64_t offset = chunk.n0 * imageSize + (chunk.oh0 * s.strideH + kh * s.dilationH) * Wi +
                               chunk.ow0 * s.strideW + kw0 * s.dilationW;
        TileView moving = input.partitionSlice(0, k).pattern(
            offset, windowDims(chunk.images, imageSize, chunk.rows, s.strideH * Wi, chunk.cols, s.strideW));
        b.matmul(acc, diagonals.partitionSlice(0, k).cols(g * c, c), moving, /*accumulate=*/g > 0);
      }
      evictChunk(ctx, s, o, ch.start, c, chunk, acc);
    }
  }
  return Status::success();
}

// ---- Row bands: few channels stacked by rows (RowBands) ---------------------------------------------------

/// Whether the convolution is 1x1 over one image with stride 1 and no padding: each output row reads
/// only its own input row, so rows may be split into bands freely.
bool isPointwise(const ConvShape &s) {
  return s.group == 1 && s.N == 1 && s.KH == 1 && s.KW == 1 && s.strideH == 1 && s.strideW == 1 && !s.padded();
}

/// The row bands a depthwise convolution of shape r on the PE reads its padded input in: one image of
/// at most half the partitions' channels (MobileNetV2's 16- and 32-channel layers at 112x112), as
/// P / replicaStride(C) bands of OH / count output rows, each band's tile holding the padded rows its
/// outputs read (halos included). Per tap one matmul then covers all bands with the whole array, and
/// every instruction's free size is a count-th of the image's; it beats the column-tap replicas
/// (foldedColumnTaps) at every size, having no copies to make and fewer matmul columns.
std::optional<RowBands> paddedBands(const ConvShape &r, const MachineProfile &profile) {
  const int64_t stride = replicaStride(r.C), count = profile.partitions / stride;
  if (!r.depthwise() || r.N != 1 || !r.padded() || 2 * r.C > profile.partitions || count < 2 || r.OH % count != 0 ||
      r.OW > profile.psum.bankFp32Elements)
    return std::nullopt;
  const int64_t outRows = r.OH / count;
  const RowBands bands{count, stride, outRows * r.strideH, r.padTop,
                       (outRows - 1) * r.strideH + (r.KH - 1) * r.dilationH + 1};
  if (bands.count * bands.rows != r.H) return std::nullopt;  // Every input row owned by one band.
  return bands;
}

/// Per-channel values (a bias) repeated on every band's partitions, zero between bands.
std::vector<float> bandedValues(const std::vector<float> &values, const RowBands &bands) {
  std::vector<float> out(static_cast<size_t>(bands.count * bands.stride), 0.0f);
  for (int64_t band = 0; band < bands.count; ++band)
    std::copy(values.begin(), values.end(), out.begin() + band * bands.stride);
  return out;
}

/// Y [1, C, H, W] stored in `bands`, each row padded by padLeft and padRight columns; what no band's
/// rows fill (pad columns, rows outside the image, partitions between bands' channels) is zeroed.
DeviceTensor allocateBanded(KernelBuilder &b, const std::string &name, int64_t C, int64_t H, int64_t W, int64_t padLeft,
                            int64_t padRight, DType dtype, const RowBands &bands) {
  const int64_t Wp = W + padLeft + padRight;
  DeviceTensor t;
  t.shape = {1, C, H, W};
  t.dtype = dtype;
  t.axes = {AxisPlacement{0, bands.tileRows * Wp}, AxisPlacement{1, 0}, AxisPlacement{0, Wp}, AxisPlacement{0, 1}};
  t.freeBase = bands.top * Wp + padLeft;
  t.freeSize = bands.tileRows * Wp;
  t.bands = bands;
  TileView tile = b.sbuf(name, dtype, bands.count * bands.stride, {t.freeSize});
  t.blocks.push_back(tile);
  if (bands.stride > C) {
    b.memset(tile, 0.0f);
    return t;
  }
  const auto tileRows = static_cast<uint32_t>(bands.tileRows);
  if (padLeft > 0) b.memset(tile.pattern(0, {FreeDim{Wp, tileRows}, FreeDim{1, static_cast<uint32_t>(padLeft)}}), 0.0f);
  if (padRight > 0)
    b.memset(tile.pattern(padLeft + W, {FreeDim{Wp, tileRows}, FreeDim{1, static_cast<uint32_t>(padRight)}}), 0.0f);
  for (int64_t band = 0; band < bands.count; ++band) {
    const int64_t firstRow = band * bands.rows - bands.top;  // The row in tile row 0.
    const int64_t above = std::clamp<int64_t>(-firstRow, 0, bands.tileRows);
    const int64_t below = std::clamp<int64_t>(firstRow + bands.tileRows - H, 0, bands.tileRows);
    const TileView rows = tile.partitionSlice(band * bands.stride, bands.stride);
    if (above > 0) b.memset(rows.pattern(0, {FreeDim{1, static_cast<uint32_t>(above * Wp)}}), 0.0f);
    if (below > 0)
      b.memset(rows.pattern((bands.tileRows - below) * Wp, {FreeDim{1, static_cast<uint32_t>(below * Wp)}}), 0.0f);
  }
  return t;
}

/// X as banded by its producer, when this convolution computes on those bands: a depthwise one on the
/// PE whose paddedBands they are, or a pointwise one whose input channels fit a band.
std::optional<DeviceTensor> bandedInput(LoweringContext &ctx, const Node &node, const ConvShape &s) {
  if (ctx.isUnloadedInput(node.input(0))) return std::nullopt;
  Expected<DeviceTensor> x = ctx.activation(node.input(0));
  if (!x.ok() || x->bands.count == 0 || x->dtype != ctx.matmulDtype()) return std::nullopt;
  const RowBands &bands = x->bands;
  const int64_t Wp = s.W + s.padLeft + s.padRight;
  if (x->axes[2].freeStride != Wp || x->freeBase != bands.top * Wp + s.padLeft) return std::nullopt;
  if (s.depthwise()) {
    const std::optional<RowBands> wanted = paddedBands(s, ctx.profile());
    return depthwiseOnPe(node, ctx.options()) && wanted && *wanted == bands ? x.value() : std::optional<DeviceTensor>();
  }
  const bool plain = bands.top == 0 && bands.tileRows == bands.rows;
  return isPointwise(s) && plain && s.C <= bands.stride ? x.value() : std::optional<DeviceTensor>();
}

/// The bands Y is stored in when this convolution computes on bands and Y's only reader is a pointwise
/// convolution that can take them (Y's channels fit a band; no residual, which is standard): the same
/// bands, as Y's plain rows.
std::optional<RowBands> plainBandsOf(LoweringContext &ctx, const Node &node, const ConvShape &s) {
  const Value *y = node.output(0);
  if (isPresent(node.input(3)) || y->uses().size() != 1) return std::nullopt;
  ConvShape r;
  const Node &reader = *y->uses().front().user;
  if (!isConvNode(reader) || !readConvShape(reader, r).empty() || !isPointwise(r)) return std::nullopt;
  const std::optional<DeviceTensor> x = bandedInput(ctx, node, s);
  if (!x || s.M > x->bands.stride || s.OH % x->bands.count != 0) return std::nullopt;
  const int64_t rows = s.OH / x->bands.count;
  return RowBands{x->bands.count, x->bands.stride, rows, 0, rows};
}

/// The eviction of a chunk computed on bands (band-relative output rows, band b's channels on PSUM
/// partitions from b * stride): one instruction when Y has the same plain bands, else band by band
/// into Y's rows.
void evictBandChunk(LoweringContext &ctx, const ConvShape &s, const ConvOutput &o, const RowBands &bands,
                    const OutputChunk &chunk, const TileView &acc, int64_t channels) {
  const int64_t outRows = s.OH / bands.count;
  const RowBands &out = o.out.bands;
  if (out.count == bands.count && out.stride == bands.stride && out.top == 0 && out.rows == outRows &&
      out.tileRows == outRows) {
    const int64_t rowPitch = o.out.axes[2].freeStride;
    std::optional<TileView> bias;
    if (!o.bias.empty()) bias = o.bias[0];
    emitEpilogue(ctx, o.out.blocks[0].pattern(o.out.freeBase + chunk.oh0 * rowPitch, windowDims(1, 0, chunk.rows, rowPitch, chunk.cols, 1)),
                 acc.pattern(0, windowDims(1, 0, chunk.rows, chunk.cols, chunk.cols, 1)), bias, std::nullopt, o.epilogue);
    return;
  }
  for (int64_t band = 0; band < bands.count; ++band) {
    OutputChunk rows = chunk;
    rows.oh0 = band * outRows + chunk.oh0;
    evictChunk(ctx, s, o, 0, channels, rows, acc.partitionSlice(band * bands.stride, channels));
  }
}

/// Depthwise on the PE over banded X (paddedBands): per tap one matmul over every band, its stationary
/// diag(W[:, tap]) repeated on each band's partitions.
Status emitDepthwiseOnBands(LoweringContext &ctx, const Node &node, const ConvShape &s, const ConvOutput &o,
                            const DeviceTensor &x) {
  KernelBuilder &b = ctx.builder();
  const RowBands &bands = x.bands;
  const int64_t P = bands.count * bands.stride, bank = ctx.profile().psum.bankFp32Elements;
  const int64_t Wp = x.axes[2].freeStride;
  const DType dtype = ctx.matmulDtype();
  const HbmView wHbm = ctx.constantHbm(node.name() + "/w", DType::F32, {s.C, s.taps()}, ctx.constantFloats(node.input(1)));
  TileView weights = b.sbuf(node.name() + "/w", DType::F32, P, {s.taps()});
  if (bands.stride > s.C) b.memset(weights, 0.0f);  // Zero diagonals where no channel is.
  for (int64_t band = 0; band < bands.count; ++band) b.load(weights.partitionSlice(band * bands.stride, s.C), wHbm);
  TileView diagonals = b.sbuf(node.name() + "/diag", dtype, P, {s.taps() * P});
  emitDiagonals(b, diagonals, ctx.identity(dtype).partitionSlice(0, P).cols(0, P), weights, s.KH, s.KW);

  TileRing accRing(MemSpace::PSUM, node.name() + "/acc", DType::F32, P, {bank}, kPsumSlots);
  std::vector<OutputChunk> chunks;
  splitRows(0, 0, s.OH / bands.count, s.OW, bank, chunks);
  for (const OutputChunk &chunk : chunks) {
    TileView acc = accRing.next(b).cols(0, chunk.size());
    for (int64_t t = 0; t < s.taps(); ++t) {
      const int64_t kh = t / s.KW, kw = t % s.KW;
      const int64_t offset = (chunk.oh0 * s.strideH + kh * s.dilationH) * Wp + chunk.ow0 * s.strideW + kw * s.dilationW;
      TileView moving = x.blocks[0].pattern(offset, windowDims(1, 0, chunk.rows, s.strideH * Wp, chunk.cols, s.strideW));
      b.matmul(acc, diagonals.cols(t * P, P), moving, /*accumulate=*/t > 0);
    }
    evictBandChunk(ctx, s, o, bands, chunk, acc, s.C);
  }
  return Status::success();
}

/// A pointwise convolution over banded X: band b's stationary is W^T on band b's partitions, zero on
/// the others. When Y is banded too, one block-diagonal stationary (band b's outputs on its own
/// partitions) covers every band per chunk; else each band is a matmul into Y's rows.
Status emitPointwiseOnBands(LoweringContext &ctx, const Node &node, const ConvShape &s, const ConvOutput &o,
                            const DeviceTensor &x) {
  KernelBuilder &b = ctx.builder();
  const RowBands &bands = x.bands;
  const int64_t P = bands.count * bands.stride, bank = ctx.profile().psum.bankFp32Elements;
  const DType dtype = ctx.matmulDtype();
  const bool bandedOut = o.out.bands.count > 0;
  const int64_t columns = bandedOut ? P : bands.count * s.M;
  const std::vector<float> w = ctx.constantFloats(node.input(1));  // [M, C]
  std::vector<float> packed(static_cast<size_t>(P * columns), 0.0f);
  for (int64_t band = 0; band < bands.count; ++band)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t m = 0; m < s.M; ++m)
        packed[static_cast<size_t>((band * bands.stride + c) * columns + (bandedOut ? band * bands.stride : band * s.M) + m)] =
            w[static_cast<size_t>(m * s.C + c)];
  const HbmView wHbm = ctx.constantHbm(node.name() + "/w_bands", dtype, {P, columns}, packed);
  TileView weights = b.sbuf(node.name() + "/w", dtype, P, {columns});
  b.load(weights, wHbm);

  const int64_t rowPitch = x.axes[2].freeStride, outRows = s.OH / bands.count;
  const std::vector<Span> coutTiles = bandedOut ? std::vector<Span>{Span{0, P}} : splitRange(s.M, ctx.profile().partitions);
  TileRing accRing(MemSpace::PSUM, node.name() + "/acc", DType::F32, bandedOut ? P : std::min(ctx.profile().partitions, s.M),
                   {bank}, kPsumSlots);
  std::vector<OutputChunk> chunks;
  splitRows(0, 0, outRows, s.OW, bank, chunks);
  for (const OutputChunk &chunk : chunks) {
    const TileView moving = x.blocks[0].pattern(x.freeBase + chunk.oh0 * rowPitch + chunk.ow0,
                                                windowDims(1, 0, chunk.rows, rowPitch, chunk.cols, 1));
    if (bandedOut) {
      TileView acc = accRing.next(b).cols(0, chunk.size());
      b.matmul(acc, weights, moving, /*accumulate=*/false);
      evictBandChunk(ctx, s, o, bands, chunk, acc, s.M);
      continue;
    }
    for (int64_t band = 0; band < bands.count; ++band)
      for (const Span &co : coutTiles) {
        TileView acc = accRing.next(b).partitionSlice(0, co.count).cols(0, chunk.size());
        b.matmul(acc, weights.cols(band * s.M + co.start, co.count), moving, /*accumulate=*/false);
        OutputChunk rows = chunk;
        rows.oh0 = band * outRows + chunk.oh0;
        evictChunk(ctx, s, o, co.start, co.count, rows, acc);
      }
  }
  return Status::success();
}

// ---- Entry ------------------------------------------------------------------------------------------------

/// Whether every reader of `y` is a convolution on the device that rounds it to the matmul dtype as
/// its X or its residual Z (convRoundsOperands), and `epilogue` ends in one rounding write (a single
/// ACT or DVE pass, then at most a Clip, which commutes with monotonic rounding). Then the eviction can
/// store Y in the matmul dtype: the values the readers' casts would make, without the cast pass.
bool readersTakeMatmulDtype(const Value *y, const Epilogue &epilogue, const LoweringOptions &options) {
  if (options.autoCast == AutoCast::None || y->uses().empty()) return false;
  if (epilogue.activation == "LeakyRelu" || epilogue.activation == "HardSigmoid" || epilogue.activation == "HardSwish")
    return false;
  const std::vector<Value *> &outputs = y->graph()->outputs();
  if (std::find(outputs.begin(), outputs.end(), y) != outputs.end()) return false;
  for (const Use &use : y->uses()) {
    const Node &reader = *use.user;
    if (!isConvNode(reader) || (use.inputIndex != 0 && use.inputIndex != 3) || !checkConvOnDevice(reader, options).empty()) return false;
    if (!convRoundsOperands(reader, options)) return false;
  }
  return true;
}

/// The shape of y's only reader when it is a convolution that takes X as a zero-padded PE operand
/// (dense and not a folded stem, or depthwise; its readersTakeMatmulDtype already holds).
std::optional<ConvShape> paddedReader(const Value *y, const MachineProfile &profile, const LoweringOptions &options) {
  if (y->uses().size() != 1) return std::nullopt;
  ConvShape r;
  if (!isConvNode(*y->uses().front().user) || !readConvShape(*y->uses().front().user, r).empty() || !r.padded())
    return std::nullopt;
  if (!r.depthwise() && (r.group != 1 || foldable(r, profile.partitions))) return std::nullopt;
  if (r.depthwise() && !depthwiseOnPe(*y->uses().front().user, options)) return std::nullopt;
  return r;
}

Status emitConv(LoweringContext &ctx, const Node &node) {
  ConvShape s;
  if (std::string reason = readConvShape(node, s); !reason.empty()) return ctx.unsupported(node, reason);
  const Value *y = node.output(0);
  ConvOutput o;
  o.epilogue = node.domain() == "tessel" ? epilogueOf(node) : Epilogue{};
  if (!readersTakeMatmulDtype(y, o.epilogue, ctx.options())) {
    o.out = ctx.allocate(y, 1);
  } else if (std::optional<ConvShape> r = paddedReader(y, ctx.profile(), ctx.options())) {
    // The eviction writes the reader's padded input: no copy between the two convolutions.
    const DType dtype = ctx.matmulDtype();
    const MachineProfile &profile = ctx.profile();
    const std::optional<RowBands> bands = paddedBands(*r, profile);
    if (bands && !isPresent(node.input(3)) && s.N == 1 && s.OW <= profile.psum.bankFp32Elements) {
      o.out = allocateBanded(ctx.builder(), y->name() + "/bands", r->C, r->H, r->W, r->padLeft, r->padRight, dtype, *bands);
    } else {
      o.out = allocatePaddedInput(ctx.builder(), y->name() + "/padded", *r, dtype, [&](int64_t c) {
        return r->depthwise() ? replicaStackFor(profile, *r, c, dtype) : ReplicaStack{1, c, c};
      });
    }
  } else if (std::optional<RowBands> bands = plainBandsOf(ctx, node, s)) {
    o.out = allocateBanded(ctx.builder(), y->name() + "/bands", s.M, s.OH, s.OW, 0, 0, ctx.matmulDtype(), *bands);
  } else {
    o.out = ctx.allocate(y, 1, ctx.matmulDtype());
  }
  if (isPresent(node.input(2))) {
    const std::vector<float> bias = ctx.constantFloats(node.input(2));
    o.bias = ctx.channelVector(o.out.bands.count > 0 ? bandedValues(bias, o.out.bands) : bias);
  }
  if (isPresent(node.input(3))) {
    TESSEL_ASSIGN_OR_RETURN(DeviceTensor z, convRoundsOperands(node, ctx.options())
                                                ? ctx.standardAs(node.input(3), 1, ctx.matmulDtype())
                                                : ctx.standard(node.input(3), 1));
    o.residual = z;
  }

  const std::optional<DeviceTensor> bandedX = bandedInput(ctx, node, s);
  if (bandedX && s.depthwise()) {
    TESSEL_RETURN_IF_ERROR(emitDepthwiseOnBands(ctx, node, s, o, *bandedX));
  } else if (bandedX) {
    TESSEL_RETURN_IF_ERROR(emitPointwiseOnBands(ctx, node, s, o, *bandedX));
  } else if (s.depthwise() && depthwiseOnPe(node, ctx.options())) {
    TESSEL_RETURN_IF_ERROR(emitDepthwiseConvOnPe(ctx, node, s, o));
  } else if (s.depthwise()) {
    TESSEL_RETURN_IF_ERROR(emitDepthwiseConv(ctx, node, s, o));
  } else if (foldable(s, ctx.profile().partitions)) {
    TESSEL_ASSIGN_OR_RETURN(HbmView x, ctx.hbmOf(node.input(0)));
    FoldedConv(ctx, node, s, o, x).emit();
  } else {
    TESSEL_RETURN_IF_ERROR(emitDenseConv(ctx, node, s, o));
  }
  ctx.define(y, o.out);
  return Status::success();
}

}  // namespace

bool depthwiseOnPe(const Node &node, const LoweringOptions &options) {
  ConvShape s;
  return readConvShape(node, s).empty() && s.depthwise() && options.autoCast != AutoCast::None;
}

bool convRoundsOperands(const Node &node, const LoweringOptions &options) {
  return options.autoCast != AutoCast::None && (node.attrInt("group", 1) == 1 || depthwiseOnPe(node, options));
}

std::vector<OpLowering> convLowerings() {
  return {OpLowering{"", "Conv", checkConvOnDevice, emitConv},
          OpLowering{"tessel", "FusedConv", checkConvOnDevice, emitConv}};
}

}  // namespace tessel::nc::compiler
