// Normalization kernels (norm.h). gamma and beta ([C]) are loaded once, broadcast to every partition
// through a stride-0 HBM view. Per row tile of [P, C]:
//   layernorm: bn_stats over chunks of the bn_stats limit, bn_aggr -> mean and variance; rstd =
//     (var + eps)^-0.5 and -mean * rstd as [P, 1] scalars (DVE); ACT writes x * rstd - mean * rstd
//     in place; DVE multiplies by gamma and adds beta.
//   rmsnorm: x squared and summed, by DVE's tensor_scalar_reduce where its pass is shorter than
//     ACT's (nc-v3), else by ACT with the sum in its accumulator; rstd = (sum / C + eps)^-0.5; ACT
//     scales x by rstd; DVE (or POOL) multiplies by gamma.
// A whole row stays in SBUF (two row tiles in flight plus gamma and beta); wider rows are an error
// that says how much SBUF they would need.
//
// layernorm variants "v1" and "v2" are the two kernels of the public NKI LayerNorm tutorial, written
// as it writes them (anchor: v2 about 15% faster than v1 at 300 x 1000 fp32):
//   v1 (nki.language ops): mean = sum(x) / C, var = sum(x^2) / C - mean^2 (ACT squares, DVE reduces),
//     rstd = (var + eps)^-0.5, then (x - mean) and * rstd as two passes, * gamma, + beta.
//   v2 (nki.isa ops): bn_stats / bn_aggr for mean and var, rstd, then (x - mean) * rstd as one
//     two-op tensor_scalar pass, * gamma, + beta.
#include "targets/nc/kernels/norm.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "targets/nc/isa/verifier.h"
#include "targets/nc/kernels/kernel_options.h"
#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/machine/cost.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

constexpr double kLayerNormEps = 1e-5;
constexpr double kRmsNormEps = 1e-6;

/// Fails when `rowTiles` row tiles of `cols` elements plus `vectors` broadcast [C] tiles do not fit
/// one SBUF partition.
Status checkRowFits(const KernelBuilder &b, const std::string &kernel, int64_t cols, DType dtype, int64_t rowTiles,
                    int64_t vectors) {
  int64_t need = (rowTiles + vectors) * cols * dtypeSizeBytes(dtype);
  if (need <= b.profile().sbuf.bytesPerPartition) return Status::success();
  return makeError(ErrorCode::InvalidArgument,
                   "{}: C={} {} needs {} bytes per partition for {} row tiles and {} [C] vectors; SBUF has {}", kernel,
                   cols, dtypeName(dtype), need, rowTiles, vectors, b.profile().sbuf.bytesPerPartition);
}

/// Loads a [C] vector into every partition of a [P, C] tile.
TileView loadBroadcastVector(KernelBuilder &b, const std::string &name, HbmView vector, int64_t partitions,
                             int64_t cols, DType dtype) {
  TileView t = b.sbuf(name, dtype, partitions, {cols});
  b.load(t, vector.reshapeDim(0, {1, cols}).broadcast(0, partitions));
  return t;
}

/// The layernorm variants: the library's form, then the tutorial's two.
const std::vector<std::string> kLayerNormVariants = {"library", "v1", "v2"};

/// One row tile of the tutorial kernels: mean and rstd as [P, 1] scalars, by v1's reductions or v2's
/// bn_stats, then the normalization, gamma and beta, in place in `xt`.
void layerNormTutorialTile(KernelBuilder &b, bool v2, const TileView &xt, const TileView &gammaTile,
                           const TileView &betaTile, int64_t partitions, int64_t cols, double eps) {
  const int64_t rows = xt.partitions();
  auto scalarTile = [&](const char *name) { return b.sbuf(name, DType::F32, partitions, {1}).partitionSlice(0, rows); };
  TileView mean = scalarTile("mean"), var = scalarTile("var");
  if (v2) {
    const int64_t statsChunk = static_cast<int64_t>(b.limits().bnStatsMaxFree);
    const std::vector<Span> chunks = splitRange(cols, statsChunk);
    TileView stats = b.sbuf("stats", DType::F32, partitions, {6 * static_cast<int64_t>(chunks.size())}).partitionSlice(0, rows);
    for (size_t j = 0; j < chunks.size(); ++j)
      b.bnStats(stats.cols(6 * static_cast<int64_t>(j), 6), xt.cols(chunks[j].start, chunks[j].count));
    TileView meanVar = b.sbuf("mean_var", DType::F32, partitions, {2}).partitionSlice(0, rows);
    b.bnAggr(meanVar, stats);
    mean = meanVar.cols(0, 1);
    var = meanVar.cols(1, 1);
  } else {
    const float invCols = 1.0f / static_cast<float>(cols);
    b.reduce(mean, xt, AluOp::Add);
    b.tensorScalar(mean, mean, AluOp::Multiply, invCols);
    TileView squares = b.sbuf("squares", DType::F32, partitions, {cols}).partitionSlice(0, rows);
    b.activation(squares, xt, ActFunc::Square);
    b.reduce(var, squares, AluOp::Add);
    TileView meanSquared = scalarTile("mean_sq");
    b.tensorTensor(meanSquared, mean, mean, AluOp::Multiply);
    b.tensorScalar(var, var, AluOp::Multiply, invCols);
    b.tensorTensor(var, var, meanSquared, AluOp::Subtract);
  }
  TileView rstd = scalarTile("rstd");
  b.tensorScalar(rstd, var, AluOp::Add, static_cast<float>(eps), AluOp::Power, -0.5f);
  if (v2) {
    b.tensorScalar(xt, xt, AluOp::Subtract, mean, AluOp::Multiply, rstd);
  } else {
    b.tensorScalar(xt, xt, AluOp::Subtract, mean);
    b.tensorScalar(xt, xt, AluOp::Multiply, rstd);
  }
  b.tensorTensor(xt, xt, gammaTile.partitionSlice(0, rows), AluOp::Multiply);
  b.tensorTensor(xt, xt, betaTile.partitionSlice(0, rows), AluOp::Add);
}

Status buildLayerNorm(KernelBuilder &b, const KernelParams &params) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kLayerNormEps));
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  TESSEL_RETURN_IF_ERROR(checkRowFits(b, "layernorm", cols, dtype, /*rowTiles=*/2, /*vectors=*/2));
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView gamma = b.input("gamma", dtype, {cols});
  HbmView beta = b.input("beta", dtype, {cols});
  HbmView out = b.output("out", dtype, {rows, cols});
  const int64_t partitions = rowTile(b.profile(), rows);
  const int64_t statsChunk = static_cast<int64_t>(b.limits().bnStatsMaxFree);
  const std::vector<Span> statChunks = splitRange(cols, statsChunk);
  const int64_t statsWidth = 6 * static_cast<int64_t>(statChunks.size());  // bn_stats writes 6 per chunk.
  TileView gammaTile = loadBroadcastVector(b, "gamma", gamma, partitions, cols, dtype);
  TileView betaTile = loadBroadcastVector(b, "beta", beta, partitions, cols, dtype);
  const bool tutorial = params.variant == "v1" || params.variant == "v2";
  for (Span r : splitRange(rows, partitions)) {
    TileView xt = b.sbuf("x", dtype, partitions, {cols}).partitionSlice(0, r.count);
    b.load(xt, x.rows(r.start, r.count));
    if (tutorial) {
      layerNormTutorialTile(b, params.variant == "v2", xt, gammaTile, betaTile, partitions, cols, eps);
      b.store(out.rows(r.start, r.count), xt);
      continue;
    }
    TileView stats = b.sbuf("stats", DType::F32, partitions, {statsWidth}).partitionSlice(0, r.count);
    for (size_t j = 0; j < statChunks.size(); ++j)
      b.bnStats(stats.cols(6 * static_cast<int64_t>(j), 6), xt.cols(statChunks[j].start, statChunks[j].count));
    TileView meanVar = b.sbuf("mean_var", DType::F32, partitions, {2}).partitionSlice(0, r.count);
    b.bnAggr(meanVar, stats);
    TileView rstd = b.sbuf("rstd", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    b.tensorScalar(rstd, meanVar.cols(1, 1), AluOp::Add, static_cast<float>(eps), AluOp::Power, -0.5f, Engine::DVE);
    TileView shift = b.sbuf("neg_mean_rstd", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    b.tensorScalar(shift, meanVar.cols(0, 1), AluOp::Multiply, rstd, AluOp::Multiply, -1.0f, Engine::DVE);
    b.activation(xt, xt, ActFunc::Copy, activationArgs(rstd, shift));
    b.tensorTensor(xt, xt, gammaTile.partitionSlice(0, r.count), AluOp::Multiply);
    b.tensorTensor(xt, xt, betaTile.partitionSlice(0, r.count), AluOp::Add);
    b.store(out.rows(r.start, r.count), xt);
  }
  return Status::success();
}

/// Whether x^2 summed over a row of `cols` takes DVE (one tensor_scalar_reduce) less time than ACT
/// (square with its accumulator). ACT also scales every row, so where DVE is as fast (the nc-v3 DVE
/// performance mode) the square goes there and ACT makes one pass per row tile instead of two;
/// where DVE is slower (nc-v2) the longer pass would only lengthen the pipeline.
bool squareSumIsShorterOnDve(const MachineProfile &profile, int64_t cols, DType dtype) {
  const bool half = dtype == DType::BF16 || dtype == DType::F16;
  const double speedup =
      dvePerfModeSpeedup(profile, half ? DvePerfCase::CopyOrTensorScalarBf16SbufContiguous : DvePerfCase::None);
  const double dveCycles = static_cast<double>(
      costTensorScalarReduceCycles(profile, StreamShape{cols, 1, dtypeSizeBytes(dtype), speedup}));
  const double actCycles = static_cast<double>(costActivationCycles(profile, cols, /*reduce=*/true));
  return cyclesToNs(profile, Engine::DVE, dveCycles) < cyclesToNs(profile, Engine::ACT, actCycles);
}

Status buildRmsNorm(KernelBuilder &b, const KernelParams &params) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kRmsNormEps));
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  // Two row tiles in flight, each with its output tile, plus gamma.
  TESSEL_RETURN_IF_ERROR(checkRowFits(b, "rmsnorm", cols, dtype, /*rowTiles=*/4, /*vectors=*/1));
  HbmView x = b.input("x", dtype, {rows, cols});
  HbmView gamma = b.input("gamma", dtype, {cols});
  HbmView out = b.output("out", dtype, {rows, cols});
  const int64_t partitions = rowTile(b.profile(), rows);
  TileView gammaTile = loadBroadcastVector(b, "gamma", gamma, partitions, cols, dtype);
  const bool squareOnDve = squareSumIsShorterOnDve(b.profile(), cols, dtype);
  for (Span r : splitRange(rows, partitions)) {
    TileView xt = b.sbuf("x", dtype, partitions, {cols}).partitionSlice(0, r.count);
    b.load(xt, x.rows(r.start, r.count));
    // The squares themselves are not needed: they land in the output tile, overwritten below.
    TileView yt = b.sbuf("out", dtype, partitions, {cols}).partitionSlice(0, r.count);
    TileView sumSquares = b.sbuf("sum_sq", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    if (squareOnDve)
      b.tensorScalarReduce(yt, xt, AluOp::Power, 2.0f, sumSquares, AluOp::Add);
    else
      b.activation(yt, xt, ActFunc::Square, activationArgs(1.0f, std::nullopt, sumSquares));
    TileView rstd = b.sbuf("rstd", DType::F32, partitions, {1}).partitionSlice(0, r.count);
    b.tensorScalar(rstd, sumSquares, AluOp::Multiply, 1.0f / static_cast<float>(cols), AluOp::Add,
                   static_cast<float>(eps), Engine::DVE);
    b.tensorScalar(rstd, rstd, AluOp::Power, -0.5f, AluOp::None, 0.0f, Engine::DVE);
    b.activation(yt, xt, ActFunc::Copy, activationArgs(rstd));
    b.tensorTensor(yt, yt, gammaTile.partitionSlice(0, r.count), AluOp::Multiply);
    b.store(out.rows(r.start, r.count), yt);
  }
  return Status::success();
}

Expected<std::vector<HostTensor>> referenceLayerNorm(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kLayerNormEps));
  return runReference(
      irModel(inputs, fmt::format("  %out = LayerNormalization(%x, %gamma, %beta) {{axis = -1, epsilon = {:.9g}}}",
                                  static_cast<float>(eps))),
      inputs);
}

Expected<std::vector<HostTensor>> referenceRmsNorm(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kRmsNormEps));
  return runReference(irModel(inputs, fmt::format(R"(  const %eps = dense<f32[]: {:.9g}>
  %squares = Mul(%x, %x)
  %mean = ReduceMean(%squares) {{axes = [-1], keepdims = 1}}
  %shifted = Add(%mean, %eps)
  %rms = Sqrt(%shifted)
  %normed = Div(%x, %rms)
  %out = Mul(%normed, %gamma))",
                                                  static_cast<float>(eps))),
                      inputs);
}

}  // namespace

std::vector<KernelDef> normKernels() {
  return {
      KernelDef{"layernorm", "out = (x - mean) / sqrt(var + eps) * gamma + beta over the last dim of [R, C]",
                {"R", "C"}, {{"R", 256}, {"C", 1024}}, {DType::BF16, DType::F32}, buildLayerNorm, referenceLayerNorm,
                streamingAbsTolerance, streamingRelTolerance, nullptr, kLayerNormVariants},
      KernelDef{"rmsnorm", "out = x / sqrt(mean(x^2) + eps) * gamma over the last dim of [R, C]", {"R", "C"},
                {{"R", 256}, {"C", 1024}}, {DType::BF16, DType::F32}, buildRmsNorm, referenceRmsNorm,
                streamingAbsTolerance, streamingRelTolerance, nullptr},
  };
}

}  // namespace tessel::nc::kernels
