// Elementwise kernels (elementwise.h). Rows go to partitions in tiles of the machine's partition
// count, columns in tiles sized for large DMA chunks (tiling.h), both with a ragged last tile. Every
// tile is a fresh buffer per iteration, so the compiler multi-buffers them and the loads of tile
// i+1 overlap the compute of tile i. A row-broadcast second input ([1, C]) is loaded once per column
// tile through a stride-0 HBM view and reused by every row tile; a column input ([R, 1]) is one
// value per partition, the per-partition scalar of a tensor_scalar.
#include "targets/nc/kernels/elementwise.h"

#include <string>

#include <fmt/format.h>

#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

enum class Broadcast { None, Row, Col };

Expected<Broadcast> parseBroadcast(const KernelParams &params) {
  std::string mode = params.option("broadcast", "none");
  if (mode == "none") return Broadcast::None;
  if (mode == "row") return Broadcast::Row;
  if (mode == "col") return Broadcast::Col;
  return makeError(ErrorCode::InvalidArgument, "option broadcast={} is not one of none, row, col", mode);
}

/// The shape of the second input: [R, C], a [1, C] row or an [R, 1] column.
std::vector<int64_t> secondInputShape(Broadcast mode, int64_t rows, int64_t cols) {
  if (mode == Broadcast::Row) return {1, cols};
  if (mode == Broadcast::Col) return {rows, 1};
  return {rows, cols};
}

/// out = x op y over [R, C] (see the file comment for the broadcast modes).
template <AluOp kOp>
Status buildBinary(KernelBuilder &b, const KernelParams &params) {
  TESSEL_ASSIGN_OR_RETURN(Broadcast mode, parseBroadcast(params));
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView y = b.input("y", dtype, secondInputShape(mode, rows, cols));
  HbmView out = b.output("out", dtype, {rows, cols});
  const int64_t partitions = rowTile(b.profile(), rows);
  const int64_t colTile = streamingColumnTile(dtype, cols);
  const std::vector<Span> rowSpans = splitRange(rows, partitions), colSpans = splitRange(cols, colTile);

  // One tile: out = x op (the y tile, or the y per-partition scalar).
  auto compute = [&](Span r, Span c, const TileView *yTile, const TileView *yScalar) {
    TileView xt = b.sbuf("x", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
    b.load(xt, x.rows(r.start, r.count).cols(c.start, c.count));
    TileView ot = b.sbuf("out", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
    if (yTile)
      b.tensorTensor(ot, xt, *yTile, kOp);
    else
      b.tensorScalar(ot, xt, kOp, *yScalar);
    b.store(out.rows(r.start, r.count).cols(c.start, c.count), ot);
  };

  switch (mode) {
    case Broadcast::None:
      for (Span r : rowSpans) {
        for (Span c : colSpans) {
          TileView yt = b.sbuf("y", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
          b.load(yt, y.rows(r.start, r.count).cols(c.start, c.count));
          compute(r, c, &yt, nullptr);
        }
      }
      break;
    case Broadcast::Row:
      // Columns outside: the broadcast row tile serves every row tile of its columns.
      for (Span c : colSpans) {
        TileView yRow = b.sbuf("y_row", dtype, partitions, {colTile}).cols(0, c.count);
        b.load(yRow, y.cols(c.start, c.count).broadcast(0, partitions));
        for (Span r : rowSpans) {
          TileView yt = yRow.partitionSlice(0, r.count);
          compute(r, c, &yt, nullptr);
        }
      }
      break;
    case Broadcast::Col:
      for (Span r : rowSpans) {
        TileView yCol = b.sbuf("y_col", DType::F32, partitions, {1}).partitionSlice(0, r.count);
        b.load(yCol, y.rows(r.start, r.count));
        for (Span c : colSpans) compute(r, c, nullptr, &yCol);
      }
      break;
  }
  return Status::success();
}

/// out = func(x) on ACT.
template <ActFunc kFunc>
Status buildActivation(KernelBuilder &b, const KernelParams &params) {
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView out = b.output("out", dtype, {rows, cols});
  const int64_t partitions = rowTile(b.profile(), rows);
  const int64_t colTile = streamingColumnTile(dtype, cols);
  for (Span r : splitRange(rows, partitions)) {
    for (Span c : splitRange(cols, colTile)) {
      TileView xt = b.sbuf("x", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
      b.load(xt, x.rows(r.start, r.count).cols(c.start, c.count));
      TileView ot = b.sbuf("out", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
      b.activation(ot, xt, kFunc);
      b.store(out.rows(r.start, r.count).cols(c.start, c.count), ot);
    }
  }
  return Status::success();
}

/// The ONNX op of a binary ALU op (kBinaryAluOps).
std::string_view onnxBinaryOp(AluOp op) {
  for (const BinaryAluOp &entry : kBinaryAluOps)
    if (entry.alu == op) return entry.onnx;
  return "?";
}

template <AluOp kOp>
Expected<std::vector<HostTensor>> referenceBinary(const KernelParams &, const std::vector<HostTensor> &inputs) {
  // ONNX broadcasting covers all three modes: y is [R, C], [1, C] or [R, 1].
  return runReference(irModel(inputs, fmt::format("  %out = {}(%x, %y)", onnxBinaryOp(kOp))), inputs);
}

Expected<std::vector<HostTensor>> referenceGelu(const KernelParams &, const std::vector<HostTensor> &inputs) {
  // The exact (erf) GELU: x * 0.5 * (1 + erf(x / sqrt(2))).
  return runReference(irModel(inputs, R"(  const %inv_sqrt2 = dense<f32[]: 0.70710678118654752>
  const %half = dense<f32[]: 0.5>
  const %one = dense<f32[]: 1.0>
  %scaled = Mul(%x, %inv_sqrt2)
  %erf = Erf(%scaled)
  %shifted = Add(%erf, %one)
  %halved = Mul(%shifted, %half)
  %out = Mul(%x, %halved))"),
                      inputs);
}

Expected<std::vector<HostTensor>> referenceSilu(const KernelParams &, const std::vector<HostTensor> &inputs) {
  return runReference(irModel(inputs, "  %sigmoid = Sigmoid(%x)\n  %out = Mul(%x, %sigmoid)"), inputs);
}

Expected<std::vector<HostTensor>> referenceRelu(const KernelParams &, const std::vector<HostTensor> &inputs) {
  return runReference(irModel(inputs, "  %out = Relu(%x)"), inputs);
}

const std::map<std::string, int64_t> kDefaultDims = {{"R", 256}, {"C", 1024}};

template <AluOp kOp>
KernelDef binaryKernel(std::string name, std::string what) {
  return KernelDef{std::move(name),
                   what + " over [R, C]; y is [R, C], or with option broadcast=row a [1, C] row, broadcast=col an [R, 1] column",
                   {"R", "C"},
                   kDefaultDims,
                   {DType::BF16, DType::F32},
                   buildBinary<kOp>,
                   referenceBinary<kOp>,
                   streamingAbsTolerance,
                   streamingRelTolerance,
                   nullptr};
}

template <ActFunc kFunc>
KernelDef activationKernel(std::string name, std::string what, decltype(KernelDef::reference) reference) {
  return KernelDef{std::move(name), what + " over [R, C] on ACT", {"R", "C"}, kDefaultDims, {DType::BF16, DType::F32},
                   buildActivation<kFunc>, reference, streamingAbsTolerance, streamingRelTolerance, nullptr};
}

}  // namespace

std::optional<AluOp> binaryAluOp(std::string_view onnx) {
  for (const BinaryAluOp &entry : kBinaryAluOps)
    if (entry.onnx == onnx) return entry.alu;
  return std::nullopt;
}

std::vector<KernelDef> elementwiseKernels() {
  return {
      binaryKernel<AluOp::Add>("add", "out = x + y"),
      binaryKernel<AluOp::Multiply>("mul", "out = x * y"),
      binaryKernel<AluOp::Subtract>("sub", "out = x - y"),
      binaryKernel<AluOp::Maximum>("max", "out = max(x, y)"),
      activationKernel<ActFunc::Gelu>("gelu", "out = gelu(x) (erf form)", referenceGelu),
      activationKernel<ActFunc::Silu>("silu", "out = x * sigmoid(x)", referenceSilu),
      activationKernel<ActFunc::Relu>("relu", "out = max(x, 0)", referenceRelu),
  };
}

}  // namespace tessel::nc::kernels
