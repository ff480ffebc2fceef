// The elementwise family (elementwise.h): the op emit, then the library's HBM adapters. Rows go to
// partitions in tiles of the machine's partition count, columns in tiles sized for large DMA chunks
// (tiling.h), both with a ragged last tile. Every tile is a fresh buffer per iteration, so the
// compiler multi-buffers them and the loads of tile i+1 overlap the compute of tile i. A
// row-broadcast second input ([1, C]) is loaded once per column tile through a stride-0 HBM view and
// reused by every row tile; a column input ([R, 1]) is one value per partition, the per-partition
// scalar of a tensor_scalar, as a model's per-channel constant is.
#include "targets/nc/kernels/elementwise.h"

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>

#include "targets/nc/kernels/matmul/epilogue.h"
#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

using Operand = ElementwiseOperand;

Operand fullOf(const TileView &view) { return Operand{Operand::Full, 0, view}; }

tile::ScalarOperand scalarOf(const Operand &o) {
  if (o.kind == Operand::Immediate) return o.value;
  return o.view;
}

/// 1 / s for a scalar operand (ACT's reciprocal of a per-partition scalar).
Operand reciprocal(KernelBuilder &b, const std::string &name, const Operand &s) {
  if (s.kind == Operand::Immediate) return Operand{Operand::Immediate, 1.0f / s.value, {}};
  TileView r = b.sbuf(name + "/rcp", DType::F32, s.view.partitions(), s.view.freeShape());
  b.activation(r, s.view, ActFunc::Reciprocal);
  return Operand{s.kind, 0, r};
}

/// a op c with a Full, c any kind, or a scalar a and a Full c.
Operand emitBinary(KernelBuilder &b, const std::string &name, std::string_view type, const Operand &a,
                   const Operand &c, const TileView &dst) {
  if (type == "Pow") {  // An immediate power: the common ones on ACT, any other on DVE.
    if (c.value == 2.0f) b.activation(dst, a.view, ActFunc::Square);
    else if (c.value == 0.5f) b.activation(dst, a.view, ActFunc::Sqrt);
    else if (c.value == 1.0f) b.copy(dst, a.view);
    else b.tensorScalar(dst, a.view, AluOp::Power, c.value, AluOp::None, 0.0f, Engine::DVE);
    return fullOf(dst);
  }
  if (type == "Div") {  // A multiply by the reciprocal.
    if (c.kind != Operand::Full) {
      b.tensorScalar(dst, a.view, AluOp::Multiply, scalarOf(reciprocal(b, name, c)));
      return fullOf(dst);
    }
    TileView r = b.sbuf(name + "/rcp", DType::F32, c.view.partitions(), c.view.freeShape());
    b.activation(r, c.view, ActFunc::Reciprocal);
    if (a.kind == Operand::Full) b.tensorTensor(dst, a.view, r, AluOp::Multiply);
    else b.tensorScalar(dst, r, AluOp::Multiply, scalarOf(a));
    return fullOf(dst);
  }
  const AluOp alu = *binaryAluOp(type);
  if (a.kind == Operand::Full && c.kind == Operand::Full) b.tensorTensor(dst, a.view, c.view, alu);
  else if (a.kind == Operand::Full) b.tensorScalar(dst, a.view, alu, scalarOf(c));
  else if (type == "Sub") b.tensorScalar(dst, c.view, AluOp::Multiply, -1.0f, AluOp::Add, scalarOf(a));
  else b.tensorScalar(dst, c.view, alu, scalarOf(a));
  return fullOf(dst);
}

/// The ONNX op of a binary ALU op (kBinaryAluOps).
std::string_view onnxBinaryOp(AluOp op) {
  for (const BinaryAluOp &entry : kBinaryAluOps)
    if (entry.alu == op) return entry.onnx;
  return "?";
}

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
  const ElementwiseOp op{std::string(onnxBinaryOp(kOp))};
  auto compute = [&](Span r, Span c, const TileView *yTile, const TileView *yScalar) -> Status {
    TileView xt = b.sbuf("x", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
    b.load(xt, x.rows(r.start, r.count).cols(c.start, c.count));
    TileView ot = b.sbuf("out", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
    const std::array<Operand, 2> operands = {
        fullOf(xt), yTile ? fullOf(*yTile) : Operand{Operand::PartitionScalar, 0, *yScalar}};
    TESSEL_RETURN_IF_ERROR(emitElementwiseOp(b, "out", op, operands, ot).status());
    b.store(out.rows(r.start, r.count).cols(c.start, c.count), ot);
    return Status::success();
  };

  switch (mode) {
    case Broadcast::None:
      for (Span r : rowSpans) {
        for (Span c : colSpans) {
          TileView yt = b.sbuf("y", dtype, partitions, {colTile}).partitionSlice(0, r.count).cols(0, c.count);
          b.load(yt, y.rows(r.start, r.count).cols(c.start, c.count));
          TESSEL_RETURN_IF_ERROR(compute(r, c, &yt, nullptr));
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
          TESSEL_RETURN_IF_ERROR(compute(r, c, &yt, nullptr));
        }
      }
      break;
    case Broadcast::Col:
      for (Span r : rowSpans) {
        TileView yCol = b.sbuf("y_col", DType::F32, partitions, {1}).partitionSlice(0, r.count);
        b.load(yCol, y.rows(r.start, r.count));
        for (Span c : colSpans) TESSEL_RETURN_IF_ERROR(compute(r, c, nullptr, &yCol));
      }
      break;
  }
  return Status::success();
}

/// The unary kernels, each the code models run: gelu and relu as elementwise ops, silu as the
/// matmul and convolution epilogue (where models get it, one ACT pass).
enum class Unary { Gelu, Relu, Silu };

Status emitUnary(KernelBuilder &b, Unary unary, const TileView &dst, const TileView &src) {
  if (unary == Unary::Silu) {
    emitEpilogue(b, dst, src, {}, Epilogue{"Silu", {}});
    return Status::success();
  }
  const std::array<Operand, 1> operands = {fullOf(src)};
  return emitElementwiseOp(b, "out", ElementwiseOp{unary == Unary::Gelu ? "Gelu" : "Relu"}, operands, dst).status();
}

/// out = func(x) on ACT.
template <Unary kUnary>
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
      TESSEL_RETURN_IF_ERROR(emitUnary(b, kUnary, ot, xt));
      b.store(out.rows(r.start, r.count).cols(c.start, c.count), ot);
    }
  }
  return Status::success();
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

template <Unary kUnary>
KernelDef activationKernel(std::string name, std::string what, decltype(KernelDef::reference) reference) {
  return KernelDef{std::move(name), what + " over [R, C] on ACT", {"R", "C"}, kDefaultDims, {DType::BF16, DType::F32},
                   buildActivation<kUnary>, reference, streamingAbsTolerance, streamingRelTolerance, nullptr};
}

}  // namespace

std::optional<AluOp> binaryAluOp(std::string_view onnx) {
  for (const BinaryAluOp &entry : kBinaryAluOps)
    if (entry.onnx == onnx) return entry.alu;
  return std::nullopt;
}

std::optional<ActFunc> unaryActFunc(std::string_view onnx) {
  for (const UnaryActOp &entry : kUnaryActOps)
    if (entry.onnx == onnx) return entry.func;
  return std::nullopt;
}

std::span<const std::string_view> elementwiseOpTypes() {
  static const std::vector<std::string_view> kTypes = [] {
    std::vector<std::string_view> types = {"Div", "Pow", "Neg", "Identity", "Cast", "Gelu", "HardSigmoid",
                                           "HardSwish", "Clip"};
    for (const UnaryActOp &entry : kUnaryActOps) types.push_back(entry.onnx);
    for (const BinaryAluOp &entry : kBinaryAluOps) types.push_back(entry.onnx);
    return types;
  }();
  return kTypes;
}

bool isBinaryElementwiseOp(std::string_view type) {
  return type == "Div" || type == "Pow" || binaryAluOp(type).has_value();
}

Expected<ElementwiseOperand> emitElementwiseOp(KernelBuilder &b, const std::string &name, const ElementwiseOp &op,
                                               std::span<const ElementwiseOperand> operands, const TileView &dst) {
  const std::string_view type = op.type;
  const size_t arity = isBinaryElementwiseOp(type) ? 2 : 1;
  if (operands.size() != arity)
    return makeError(ErrorCode::Internal, "{}: {} takes {} operands, got {}", name, type, arity, operands.size());
  const Operand &a = operands[0];
  if ((type == "Identity" || type == "Cast") && a.kind != Operand::Full) return a;
  const bool anyFull = a.kind == Operand::Full || (arity == 2 && operands[1].kind == Operand::Full);
  if (!anyFull || (arity == 1 && a.kind != Operand::Full) ||
      (type == "Pow" && (a.kind != Operand::Full || operands[1].kind != Operand::Immediate)))
    return makeError(ErrorCode::Internal, "{}: {} of constants only (the partition check lets none through)", name,
                     type);
  if (arity == 2) return emitBinary(b, name, type, a, operands[1], dst);
  if (type == "Identity" || type == "Cast") {
    b.copy(dst, a.view);
  } else if (std::optional<ActFunc> func = unaryActFunc(type)) {
    b.activation(dst, a.view, *func);
  } else if (type == "Gelu") {
    b.activation(dst, a.view, op.tanhApproximation ? ActFunc::GeluApprxTanh : ActFunc::Gelu);
  } else if (type == "Neg") {
    b.tensorScalar(dst, a.view, AluOp::Multiply, -1.0f);
  } else if (type == "HardSigmoid") {
    emitHardSigmoid(b, dst, a.view, op.alpha, op.beta);
  } else if (type == "HardSwish") {
    TileView gate = b.sbuf(name + "/gate", DType::F32, dst.partitions(), dst.freeShape());
    emitHardSigmoid(b, gate, a.view, 1.0f / 6.0f, 0.5f);
    b.tensorTensor(dst, a.view, gate, AluOp::Multiply);
  } else if (type == "Clip") {
    b.tensorScalar(dst, a.view, AluOp::Maximum, std::max(op.low, -3.0e38f), AluOp::Minimum, std::min(op.high, 3.0e38f),
                   Engine::DVE);
  } else {
    return makeError(ErrorCode::Internal, "{}: {} is not an elementwise op of the accelerator", name, type);
  }
  return fullOf(dst);
}

std::vector<KernelDef> elementwiseKernels() {
  return {
      binaryKernel<AluOp::Add>("add", "out = x + y"),
      binaryKernel<AluOp::Multiply>("mul", "out = x * y"),
      binaryKernel<AluOp::Subtract>("sub", "out = x - y"),
      binaryKernel<AluOp::Maximum>("max", "out = max(x, y)"),
      activationKernel<Unary::Gelu>("gelu", "out = gelu(x) (erf form)", referenceGelu),
      activationKernel<Unary::Silu>("silu", "out = x * sigmoid(x)", referenceSilu),
      activationKernel<Unary::Relu>("relu", "out = max(x, 0)", referenceRelu),
  };
}

}  // namespace tessel::nc::kernels
