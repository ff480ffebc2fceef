// Normalization kernels (norm.h). Rows on partitions (the default variant and the tutorial's):
// gamma and beta ([C]) are loaded once, broadcast to every partition through a stride-0 HBM view.
// Per row tile of [P, C]:
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
//
// features (emitNormOverFeatures, what the model compiler's norms run): per chunk of at most one PSUM
// bank of rows, x^2 (and for layer norm x) summed over the feature tiles by an all-ones stationary,
// so every partition gets the row's sums; mean and rstd on DVE; per feature tile (x - mean) * rstd on
// DVE and * gamma + beta in one ACT pass with per-partition scale and bias.
#include "targets/nc/kernels/norm.h"

#include <algorithm>
#include <optional>
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

/// The layernorm variants: the library's form, the tutorial's two, the features form.
const std::vector<std::string> kLayerNormVariants = {"library", "v1", "v2", "features"};
const std::vector<std::string> kRmsNormVariants = {"library", "features"};

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

/// Rows of one emit chunk of the features form: at most a PSUM bank, and few enough that the f32
/// temporaries of every feature tile (x in f32, x^2, the normalized x) fit a quarter of SBUF.
int64_t featureChunkRows(const MachineProfile &profile, int64_t cols) {
  const int64_t bytesPerRow = ceilDiv(cols, profile.partitions) * 3 * 4;
  const int64_t fit = static_cast<int64_t>(profile.sbuf.bytesPerPartition) / 4 / bytesPerRow;
  return std::max<int64_t>(1, std::min<int64_t>(profile.psum.bankFp32Elements, fit));
}

/// The features variant: x and out [C, R] in HBM, loaded and stored per feature tile in blocks of
/// several emit chunks (x and out of a block in a quarter of SBUF each), so that each partition's
/// DMA moves long rows; emitNormOverFeatures per chunk.
Status buildNormOverFeatures(KernelBuilder &b, const KernelParams &params, NormKind kind) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kind == NormKind::Layer ? kLayerNormEps : kRmsNormEps));
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  const DType dtype = params.dtype;
  const MachineProfile &profile = b.profile();
  const int64_t P = profile.partitions;
  HbmView x = b.input("x", dtype, {cols, rows});
  HbmView gamma = b.input("gamma", dtype, {cols});
  std::optional<HbmView> beta;
  if (kind == NormKind::Layer) beta = b.input("beta", dtype, {cols});
  HbmView out = b.output("out", dtype, {cols, rows});
  const std::vector<Span> cTiles = splitRange(cols, P);
  FeatureNormChunk chunk;
  chunk.kind = kind;
  chunk.epsilon = static_cast<float>(eps);
  chunk.ones = b.sbuf("ones", DType::F32, P, {P});
  b.memset(chunk.ones, 1.0f);
  // The scale and bias as per-partition f32 columns, one per feature tile.
  auto loadColumn = [&](const std::string &name, const HbmView &vector, const Span &c) {
    TileView column = b.sbuf(name, DType::F32, P, {1});
    TileView loaded = dtype == DType::F32 ? column : b.sbuf(name + "_raw", dtype, P, {1});
    b.load(loaded.partitionSlice(0, c.count), vector.reshapeDim(0, {cols, 1}).rows(c.start, c.count));
    if (dtype != DType::F32) b.copy(column.partitionSlice(0, c.count), loaded.partitionSlice(0, c.count));
    return column;
  };
  for (const Span &c : cTiles) {
    chunk.gamma.push_back(loadColumn("gamma", gamma, c));
    if (beta) chunk.beta.push_back(loadColumn("beta", *beta, c));
  }
  const int64_t chunkRows = featureChunkRows(profile, cols);
  const int64_t blockFit = static_cast<int64_t>(profile.sbuf.bytesPerPartition) / 4 /
                           (static_cast<int64_t>(cTiles.size()) * dtypeSizeBytes(dtype));
  const int64_t blockRows = std::max(chunkRows, std::min(rows, blockFit) / chunkRows * chunkRows);
  for (const Span &block : splitRange(rows, blockRows)) {
    std::vector<TileView> xs, outs;
    for (const Span &c : cTiles) {
      TileView xt = b.sbuf("x", dtype, P, {blockRows}).partitionSlice(0, c.count).cols(0, block.count);
      b.load(xt, x.rows(c.start, c.count).cols(block.start, block.count));
      xs.push_back(xt);
      outs.push_back(b.sbuf("out", dtype, P, {blockRows}).partitionSlice(0, c.count).cols(0, block.count));
    }
    for (const Span &r : splitRange(block.count, chunkRows)) {
      chunk.x.clear();
      chunk.out.clear();
      for (size_t t = 0; t < cTiles.size(); ++t) {
        chunk.x.push_back(xs[t].cols(r.start, r.count));
        chunk.out.push_back(outs[t].cols(r.start, r.count));
      }
      emitNormOverFeatures(b, "norm", chunk);
    }
    for (size_t t = 0; t < cTiles.size(); ++t)
      b.store(out.rows(cTiles[t].start, cTiles[t].count).cols(block.start, block.count), outs[t]);
  }
  return Status::success();
}

Status buildLayerNorm(KernelBuilder &b, const KernelParams &params) {
  if (params.variant == "features") return buildNormOverFeatures(b, params, NormKind::Layer);
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
  if (params.variant == "features") return buildNormOverFeatures(b, params, NormKind::Rms);
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

/// The body of a reference over rows of %rows_in into %rows_out: as is, or for the features variant
/// ([C, R] in and out) between two transposes.
std::string overRows(const KernelParams &params, const std::string &body) {
  if (params.variant != "features") return "  %rows_in = Identity(%x)\n" + body + "\n  %out = Identity(%rows_out)";
  return "  %rows_in = Transpose(%x) {perm = [1, 0]}\n" + body + "\n  %out = Transpose(%rows_out) {perm = [1, 0]}";
}

Expected<std::vector<HostTensor>> referenceLayerNorm(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kLayerNormEps));
  return runReference(
      irModel(inputs, overRows(params, fmt::format("  %rows_out = LayerNormalization(%rows_in, %gamma, %beta) "
                                                   "{{axis = -1, epsilon = {:.9g}}}",
                                                   static_cast<float>(eps)))),
      inputs);
}

Expected<std::vector<HostTensor>> referenceRmsNorm(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(double eps, floatOption(params, "eps", kRmsNormEps));
  return runReference(irModel(inputs, overRows(params, fmt::format(R"(  const %eps = dense<f32[]: {:.9g}>
  %squares = Mul(%rows_in, %rows_in)
  %mean = ReduceMean(%squares) {{axes = [-1], keepdims = 1}}
  %shifted = Add(%mean, %eps)
  %rms = Sqrt(%shifted)
  %normed = Div(%rows_in, %rms)
  %rows_out = Mul(%normed, %gamma))",
                                                                   static_cast<float>(eps)))),
                      inputs);
}

}  // namespace

void emitNormOverFeatures(KernelBuilder &b, const std::string &name, const FeatureNormChunk &n) {
  const int64_t P = b.profile().partitions, rows = n.x.front().freeSize();
  int64_t features = 0;
  std::vector<TileView> xs, squares;
  for (const TileView &x : n.x) {
    features += x.partitions();
    TileView wide = x;
    if (x.dtype() != DType::F32) {
      wide = b.sbuf(name + "/x32", DType::F32, x.partitions(), {rows});
      b.copy(wide, x);
    }
    TileView square = b.sbuf(name + "/x2", DType::F32, x.partitions(), {rows});
    b.activation(square, wide, ActFunc::Square);
    xs.push_back(wide);
    squares.push_back(square);
  }
  // dst = ones^T @ values over the feature tiles: the sums over the features, on every partition.
  auto sumOverFeatures = [&](const TileView &dst, const std::vector<TileView> &values) {
    for (size_t t = 0; t < values.size(); ++t)
      b.matmul(dst, n.ones.partitionSlice(0, values[t].partitions()), values[t], /*accumulate=*/t > 0);
  };
  const float invC = 1.0f / static_cast<float>(features);
  const bool layer = n.kind == NormKind::Layer;
  std::optional<TileView> sums;
  if (layer) sums = b.psum(name + "/sum", DType::F32, P, {rows});
  TileView sumSquares = b.psum(name + "/sumsq", DType::F32, P, {rows});
  if (layer) sumOverFeatures(*sums, xs);
  sumOverFeatures(sumSquares, squares);
  std::optional<TileView> mean;
  if (layer) mean = b.sbuf(name + "/mean", DType::F32, P, {rows});
  TileView rstd = b.sbuf(name + "/rstd", DType::F32, P, {rows});
  if (layer) {
    TileView meanSquared = b.sbuf(name + "/mean2", DType::F32, P, {rows});
    b.tensorScalar(*mean, *sums, AluOp::Multiply, invC);
    b.tensorScalar(rstd, sumSquares, AluOp::Multiply, invC);
    b.tensorTensor(meanSquared, *mean, *mean, AluOp::Multiply);
    b.tensorTensor(rstd, rstd, meanSquared, AluOp::Subtract);
  } else {
    b.tensorScalar(rstd, sumSquares, AluOp::Multiply, invC);
  }
  b.tensorScalar(rstd, rstd, AluOp::Add, n.epsilon, AluOp::Power, -0.5f, Engine::DVE);
  for (size_t t = 0; t < xs.size(); ++t) {
    const int64_t c = xs[t].partitions();
    TileView normed = b.sbuf(name + (layer ? "/xc" : "/xs"), DType::F32, c, {rows});
    if (layer) {
      b.tensorTensor(normed, xs[t], mean->partitionSlice(0, c), AluOp::Subtract);
      b.tensorTensor(normed, normed, rstd.partitionSlice(0, c), AluOp::Multiply);
    } else {
      b.tensorTensor(normed, xs[t], rstd.partitionSlice(0, c), AluOp::Multiply);
    }
    tile::ActivationArgs args;
    args.scale = n.gamma[t].partitionSlice(0, c);
    if (layer) args.bias = tile::ScalarOperand(n.beta[t].partitionSlice(0, c));
    b.activation(n.out[t], normed, ActFunc::Copy, args);
  }
}

void emitOneRowRmsNorm(KernelBuilder &b, const std::string &name, const TileView &out, const TileView &x,
                       const TileView &gamma, const TileView &ones, int64_t features, float epsilon) {
  const int64_t P = b.profile().partitions, blocks = x.freeSize();
  TileView squares = b.sbuf(name + "/x2", DType::F32, P, {blocks});
  TileView partial = b.sbuf(name + "/partial", DType::F32, P, {1});
  b.tensorTensor(squares, x, x, AluOp::Multiply);
  b.reduce(partial, squares, AluOp::Add);
  TileView sumSquares = b.psum(name + "/sumsq", DType::F32, P, {1});
  b.matmul(sumSquares, ones, partial, /*accumulate=*/false);
  TileView rstd = b.sbuf(name + "/rstd", DType::F32, P, {1});
  b.tensorScalar(rstd, sumSquares, AluOp::Multiply, 1.0f / static_cast<float>(features));
  b.tensorScalar(rstd, rstd, AluOp::Add, epsilon, AluOp::Power, -0.5f, Engine::DVE);
  TileView scaled = b.sbuf(name + "/xs", DType::F32, P, {blocks});
  b.tensorScalar(scaled, x, AluOp::Multiply, rstd);
  b.tensorTensor(out, scaled, gamma, AluOp::Multiply);
}

std::vector<KernelDef> normKernels() {
  return {
      KernelDef{"layernorm", "out = (x - mean) / sqrt(var + eps) * gamma + beta over the last dim of [R, C]",
                {"R", "C"}, {{"R", 256}, {"C", 1024}}, {DType::BF16, DType::F32}, buildLayerNorm, referenceLayerNorm,
                streamingAbsTolerance, streamingRelTolerance, nullptr, kLayerNormVariants},
      KernelDef{"rmsnorm", "out = x / sqrt(mean(x^2) + eps) * gamma over the last dim of [R, C]", {"R", "C"},
                {{"R", 256}, {"C", 1024}}, {DType::BF16, DType::F32}, buildRmsNorm, referenceRmsNorm,
                streamingAbsTolerance, streamingRelTolerance, nullptr, kRmsNormVariants},
  };
}

}  // namespace tessel::nc::kernels
