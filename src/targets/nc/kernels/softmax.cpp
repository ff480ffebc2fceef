// The softmax family (softmax.h). One pass when a row tile fits SBUF with room for double buffering:
// load [P, C], emitSoftmaxRows (the model compiler's emit), store. Wider rows use two passes over
// column chunks: pass 1 keeps each chunk's max m_j and sum s_j = sum exp(x - m_j); the row's max is
// M = max m_j and its sum sum_j s_j * exp(m_j - M); pass 2 reloads each chunk and writes
// exp(x - M) / sum. Option chunk=N forces the two-pass form with N-column chunks (for tests at small
// sizes).
#include "targets/nc/kernels/softmax.h"

#include <string>

#include "targets/nc/kernels/kernel_options.h"
#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

/// Share of SBUF one row tile of the one-pass form may use; the rest leaves room for the next
/// tile's load (double buffering) and the small per-row tiles.
constexpr int64_t kOnePassSbufFraction = 3;

void buildOnePass(KernelBuilder &b, HbmView x, HbmView out, int64_t rows, int64_t cols, DType dtype) {
  const int64_t partitions = rowTile(b.profile(), rows);
  for (Span r : splitRange(rows, partitions)) {
    TileView xt = b.sbuf("x", dtype, partitions, {cols}).partitionSlice(0, r.count);
    b.load(xt, x.rows(r.start, r.count));
    emitSoftmaxRows(b, "softmax", xt, xt, 1, cols);  // In place.
    b.store(out.rows(r.start, r.count), xt);
  }
}

void buildTwoPass(KernelBuilder &b, HbmView x, HbmView out, int64_t rows, int64_t cols, int64_t chunk, DType dtype) {
  const int64_t partitions = rowTile(b.profile(), rows);
  const std::vector<Span> chunks = splitRange(cols, chunk);
  const int64_t numChunks = static_cast<int64_t>(chunks.size());
  for (Span r : splitRange(rows, partitions)) {
    // Pass 1: per chunk max m_j and sum s_j of exp(x - m_j).
    TileView maxes = b.sbuf("chunk_max", dtype, partitions, {numChunks}).partitionSlice(0, r.count);
    TileView sums = b.sbuf("chunk_sum", DType::F32, partitions, {numChunks}).partitionSlice(0, r.count);
    for (int64_t j = 0; j < numChunks; ++j) {
      Span c = chunks[static_cast<size_t>(j)];
      TileView xt = b.sbuf("x", dtype, partitions, {chunk}).partitionSlice(0, r.count).cols(0, c.count);
      b.load(xt, x.rows(r.start, r.count).cols(c.start, c.count));
      b.reduce(maxes.cols(j, 1), xt, AluOp::Maximum);
      TileView negMax = b.sbuf("neg_chunk_max", DType::F32, partitions, {1}).partitionSlice(0, r.count);
      b.tensorScalar(negMax, maxes.cols(j, 1), AluOp::Multiply, -1.0f, AluOp::None, 0.0f, Engine::DVE);
      TileView scratch = b.sbuf("exp_scratch", dtype, partitions, {chunk}).partitionSlice(0, r.count).cols(0, c.count);
      b.activation(scratch, xt, ActFunc::Exp, activationArgs(1.0f, negMax, sums.cols(j, 1)));
    }
    // Combine: M = max_j m_j, total = sum_j s_j * exp(m_j - M).
    TileView rowMax = b.sbuf("max", dtype, partitions, {1}).partitionSlice(0, r.count);
    b.reduce(rowMax, maxes, AluOp::Maximum);
    TileView negMax = b.sbuf("neg_max", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    b.tensorScalar(negMax, rowMax, AluOp::Multiply, -1.0f, AluOp::None, 0.0f, Engine::DVE);
    TileView weights = b.sbuf("chunk_weight", DType::F32, partitions, {numChunks}).partitionSlice(0, r.count);
    b.activation(weights, maxes, ActFunc::Exp, activationArgs(1.0f, negMax));
    b.tensorTensor(weights, weights, sums, AluOp::Multiply);
    TileView sum = b.sbuf("sum", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    b.reduce(sum, weights, AluOp::Add);
    TileView inverse = b.sbuf("inv_sum", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    b.tensorScalar(inverse, sum, AluOp::Reciprocal, 0.0f, AluOp::None, 0.0f, Engine::DVE);
    // Pass 2: exp(x - M) / total per chunk.
    for (Span c : chunks) {
      TileView xt = b.sbuf("x", dtype, partitions, {chunk}).partitionSlice(0, r.count).cols(0, c.count);
      b.load(xt, x.rows(r.start, r.count).cols(c.start, c.count));
      b.activation(xt, xt, ActFunc::Exp, activationArgs(1.0f, negMax));
      b.tensorScalar(xt, xt, AluOp::Multiply, inverse);
      b.store(out.rows(r.start, r.count).cols(c.start, c.count), xt);
    }
  }
}

Status buildSoftmax(KernelBuilder &b, const KernelParams &params) {
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView out = b.output("out", dtype, {rows, cols});
  const int64_t rowBytes = cols * dtypeSizeBytes(dtype);
  const int64_t autoChunk =
      rowBytes > b.profile().sbuf.bytesPerPartition / kOnePassSbufFraction ? streamingColumnTile(dtype, cols) : 0;
  TESSEL_ASSIGN_OR_RETURN(int64_t chunk, positiveIntOption(params, "chunk", autoChunk == 0 ? cols : autoChunk));
  if (chunk < cols)
    buildTwoPass(b, x, out, rows, cols, chunk, dtype);
  else
    buildOnePass(b, x, out, rows, cols, dtype);
  return Status::success();
}

Expected<std::vector<HostTensor>> referenceSoftmax(const KernelParams &, const std::vector<HostTensor> &inputs) {
  return runReference(irModel(inputs, "  %out = Softmax(%x) {axis = -1}"), inputs);
}

}  // namespace

void emitSoftmaxRows(KernelBuilder &b, const std::string &name, const TileView &dst, const TileView &src,
                     int64_t rows, int64_t length) {
  const int64_t partitions = src.partitions();
  const TileView x = src.reshapeFree({rows, length}), y = dst.reshapeFree({rows, length});
  // A max is exact in the input dtype, and DVE reduces bf16 to bf16 at twice the rate.
  TileView rowMax = b.sbuf(name + "/max", src.dtype(), partitions, {rows});
  b.reduce(rowMax, x, AluOp::Maximum);
  TileView sums = b.sbuf(name + "/sum", DType::F32, partitions, {rows});
  TileView inverse = b.sbuf(name + "/inv_sum", DType::F32, partitions, {rows});
  if (rows == 1) {
    // One row per partition: the max and the reciprocal are per-partition scalars. exp(x - max) goes
    // straight to dst, ACT summing the f32 results before it rounds them to dst's dtype, and is
    // scaled there (in bf16, DVE's faster modes apply).
    TileView negMax = b.sbuf(name + "/neg_max", DType::F32, partitions, {1});
    b.tensorScalar(negMax, rowMax, AluOp::Multiply, -1.0f, AluOp::None, 0.0f, Engine::DVE);
    b.activation(y, x, ActFunc::Exp, activationArgs(1.0f, negMax, sums));
    b.tensorScalar(inverse, sums, AluOp::Reciprocal, 0.0f, AluOp::None, 0.0f, Engine::DVE);
    b.tensorScalar(y, y, AluOp::Multiply, inverse);
    return;
  }
  TileView e = b.sbuf(name + "/exp", DType::F32, partitions, {rows, length});
  auto perRow = [&](const TileView &values) { return values.pattern(0, {FreeDim{1, static_cast<uint32_t>(rows)},
                                                                          FreeDim{0, static_cast<uint32_t>(length)}}); };
  b.tensorTensor(e, x, perRow(rowMax), AluOp::Subtract);
  b.activation(e, e, ActFunc::Exp);
  b.reduce(sums, e, AluOp::Add);
  b.activation(inverse, sums, ActFunc::Reciprocal);
  b.tensorTensor(y, e, perRow(inverse), AluOp::Multiply);
}

std::vector<KernelDef> softmaxKernels() {
  return {KernelDef{"softmax",
                    "out = softmax(x) over the last dim of [R, C] (two passes over column chunks for wide rows)",
                    {"R", "C"},
                    {{"R", 256}, {"C", 1024}},
                    {DType::BF16, DType::F32},
                    buildSoftmax,
                    referenceSoftmax,
                    streamingAbsTolerance,
                    streamingRelTolerance,
                    nullptr}};
}

}  // namespace tessel::nc::kernels
