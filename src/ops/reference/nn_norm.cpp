// Reference kernels of the normalizations: BatchNormalization (inference and training outputs),
// InstanceNormalization, LayerNormalization (with its Mean and InvStdDev outputs), LRN,
// MeanVarianceNormalization and LpNormalization. Most are "moments over some axes, then an affine
// map"; the moments are computed in double, two-pass (mean, then mean squared deviation).
// LpNormalization instead divides each vector along one axis by its L1 or L2 norm.
#include <cmath>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// Mean and population variance of X over the axes marked in `reduced`, one pair per position of
/// the other axes.
struct Moments {
  std::vector<int64_t> keptSizes;  // X's sizes with the reduced axes set to 1.
  std::vector<int64_t> group;      // For each element of X, the index of its mean and variance.
  std::vector<double> mean;
  std::vector<double> variance;
};

Moments momentsOver(const std::vector<double> &x, const std::vector<int64_t> &sizes, const std::vector<bool> &reduced) {
  Moments m;
  m.keptSizes = sizes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (reduced[d]) m.keptSizes[d] = 1;
  }
  m.group = broadcastIndexMap(m.keptSizes, sizes);
  const size_t groups = static_cast<size_t>(numElements(m.keptSizes));
  std::vector<double> count(groups, 0.0);
  m.mean.assign(groups, 0.0);
  m.variance.assign(groups, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    m.mean[static_cast<size_t>(m.group[i])] += x[i];
    count[static_cast<size_t>(m.group[i])] += 1.0;
  }
  for (size_t g = 0; g < groups; ++g) m.mean[g] /= std::max(count[g], 1.0);
  for (size_t i = 0; i < x.size(); ++i) {
    double diff = x[i] - m.mean[static_cast<size_t>(m.group[i])];
    m.variance[static_cast<size_t>(m.group[i])] += diff * diff;
  }
  for (size_t g = 0; g < groups; ++g) m.variance[g] /= std::max(count[g], 1.0);
  return m;
}

/// A per-channel input (scale, bias, mean, var) with `count` values, as doubles.
Expected<std::vector<double>> readChannelVector(const KernelContext &ctx, size_t index, int64_t count,
                                                const char *what) {
  const Tensor &t = ctx.tensor(index);
  if (t.numel() != count) {
    return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected {} values (one per channel)", what,
                     formatSizes(t.sizes()), count);
  }
  return toDoubles(t);
}

/// Which element of a per-channel vector each element of X uses: its channel (axis 1), or with
/// `perActivation` (BatchNormalization's spatial = 0) its position within the sample.
std::vector<int64_t> channelOf(const std::vector<int64_t> &sizes, bool perActivation) {
  std::vector<int64_t> kept(sizes.size(), 1);
  for (size_t d = 1; d < sizes.size(); ++d) {
    if (d == 1 || perActivation) kept[d] = sizes[d];
  }
  return broadcastIndexMap(kept, sizes);
}

}  // namespace

Status refBatchNormalization(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 5));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 2, /*orMore=*/true));
  const Tensor &xt = ctx.tensor(0);
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  const double momentum = ctx.node().attrFloat("momentum", 0.9f);
  // Before opset 9, spatial = 0 normalizes each activation (C x D1 x ... values) separately.
  const bool perActivation = ctx.opset() < 9 && ctx.node().attrInt("spatial", 1) == 0;
  // Before opset 14 there is no training_mode; asking for the statistics outputs means training.
  const bool training = ctx.opset() >= 14 ? ctx.node().attrInt("training_mode", 0) != 0
                                          : ctx.wantsOutput(1) || ctx.wantsOutput(2) || ctx.wantsOutput(3);
  const int64_t channels = perActivation ? xt.numel() / std::max<int64_t>(xt.size(0), 1) : xt.size(1);
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> scale, readChannelVector(ctx, 1, channels, "scale"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> bias, readChannelVector(ctx, 2, channels, "B"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> mean, readChannelVector(ctx, 3, channels, "input_mean"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> var, readChannelVector(ctx, 4, channels, "input_var"));
  std::vector<double> x = toDoubles(xt);
  std::vector<int64_t> channel = channelOf(xt.sizes(), perActivation);
  if (training) {
    // Batch statistics: over N and the spatial axes, or only over N when per activation.
    std::vector<bool> reduced(xt.rank(), false);
    for (size_t d = 0; d < xt.rank(); ++d) reduced[d] = d == 0 || (d >= 2 && !perActivation);
    Moments batch = momentsOver(x, xt.sizes(), reduced);
    std::vector<double> runningMean(mean.size()), runningVar(var.size());
    for (size_t c = 0; c < mean.size(); ++c) {
      runningMean[c] = mean[c] * momentum + batch.mean[c] * (1.0 - momentum);
      runningVar[c] = var[c] * momentum + batch.variance[c] * (1.0 - momentum);
    }
    std::vector<int64_t> statSizes = ctx.tensor(3).sizes();
    DType statType = ctx.tensor(3).dtype();
    ctx.setOutput(1, fromDoubles(statType, statSizes, runningMean));
    ctx.setOutput(2, fromDoubles(statType, statSizes, runningVar));
    ctx.setOutput(3, fromDoubles(statType, statSizes, batch.mean));
    ctx.setOutput(4, fromDoubles(statType, statSizes, batch.variance));
    mean = std::move(batch.mean);
    var = std::move(batch.variance);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    size_t c = static_cast<size_t>(channel[i]);
    x[i] = scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + epsilon) + bias[c];
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  return Status::success();
}

Status refInstanceNormalization(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 3));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 3, /*orMore=*/true));
  const Tensor &xt = ctx.tensor(0);
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> scale, readChannelVector(ctx, 1, xt.size(1), "scale"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> bias, readChannelVector(ctx, 2, xt.size(1), "B"));
  std::vector<double> x = toDoubles(xt);
  std::vector<bool> reduced(xt.rank(), true);
  reduced[0] = reduced[1] = false;
  Moments m = momentsOver(x, xt.sizes(), reduced);
  std::vector<int64_t> channel = channelOf(xt.sizes(), /*perActivation=*/false);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t g = static_cast<size_t>(m.group[i]);
    size_t c = static_cast<size_t>(channel[i]);
    x[i] = scale[c] * (x[i] - m.mean[g]) / std::sqrt(m.variance[g] + epsilon) + bias[c];
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  return Status::success();
}

Status refLayerNormalization(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &xt = ctx.tensor(0);
  const int64_t rank = static_cast<int64_t>(xt.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", -1), rank));
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  const int64_t stashType = ctx.node().attrInt("stash_type", 1);
  if (!isValidDType(stashType) || !isFloatingPoint(static_cast<DType>(stashType))) {
    return makeError(ErrorCode::InvalidArgument, "stash_type is {}; expected a floating-point type", stashType);
  }
  if (!ctx.hasInput(1)) return makeError(ErrorCode::InvalidArgument, "the Scale input is required");
  // Scale and B broadcast (unidirectionally) to X.
  std::vector<std::vector<int64_t>> maps;
  for (size_t input : {size_t{1}, size_t{2}}) {
    if (!ctx.hasInput(input)) continue;
    const Tensor &t = ctx.tensor(input);
    TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> joint, broadcastShapes({t.sizes(), xt.sizes()}));
    if (joint != xt.sizes()) {
      return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected one that broadcasts to X's {}",
                       input == 1 ? "Scale" : "B", formatSizes(t.sizes()), formatSizes(xt.sizes()));
    }
    maps.push_back(broadcastIndexMap(t.sizes(), xt.sizes()));
  }
  std::vector<double> x = toDoubles(xt);
  std::vector<double> scale = toDoubles(ctx.tensor(1));
  std::vector<double> bias = ctx.hasInput(2) ? toDoubles(ctx.tensor(2)) : std::vector<double>{};
  std::vector<bool> reduced(xt.rank(), false);
  for (int64_t d = axis; d < rank; ++d) reduced[static_cast<size_t>(d)] = true;
  Moments m = momentsOver(x, xt.sizes(), reduced);
  std::vector<double> invStdDev(m.variance.size());
  for (size_t g = 0; g < invStdDev.size(); ++g) invStdDev[g] = 1.0 / std::sqrt(m.variance[g] + epsilon);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t g = static_cast<size_t>(m.group[i]);
    double normalized = (x[i] - m.mean[g]) * invStdDev[g];
    x[i] = normalized * scale[static_cast<size_t>(maps[0][i])] +
           (bias.empty() ? 0.0 : bias[static_cast<size_t>(maps[1][i])]);
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  ctx.setOutput(1, fromDoubles(static_cast<DType>(stashType), m.keptSizes, m.mean));
  ctx.setOutput(2, fromDoubles(static_cast<DType>(stashType), m.keptSizes, invStdDev));
  return Status::success();
}

Status refLRN(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 3, /*orMore=*/true));
  const Tensor &xt = ctx.tensor(0);
  const int64_t size = ctx.node().attrInt("size", 0);
  if (size <= 0) return makeError(ErrorCode::InvalidArgument, "size is {}; expected a positive integer", size);
  const double alpha = ctx.node().attrFloat("alpha", 1e-4f);
  const double beta = ctx.node().attrFloat("beta", 0.75f);
  const double bias = ctx.node().attrFloat("bias", 1.0f);
  std::vector<double> x = toDoubles(xt);
  std::vector<double> y(x.size());
  const int64_t channels = xt.size(1);
  const int64_t plane = xt.numel() / std::max<int64_t>(xt.size(0) * channels, 1);
  // Channel c sums the squares of channels [c - floor((size-1)/2), c + ceil((size-1)/2)].
  const int64_t before = (size - 1) / 2;
  const int64_t after = size - 1 - before;
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t c = static_cast<int64_t>(i) / plane % channels;
    double squareSum = 0.0;
    for (int64_t other = std::max<int64_t>(0, c - before); other <= std::min(channels - 1, c + after); ++other) {
      double v = x[i + static_cast<size_t>((other - c) * plane)];
      squareSum += v * v;
    }
    y[i] = x[i] / std::pow(bias + alpha / static_cast<double>(size) * squareSum, beta);
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), y));
  return Status::success();
}

Status refMeanVarianceNormalization(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &xt = ctx.tensor(0);
  const int64_t rank = static_cast<int64_t>(xt.rank());
  std::vector<bool> reduced(xt.rank(), false);
  for (int64_t axis : ctx.node().attrInts("axes", {0, 2, 3})) {
    TESSEL_ASSIGN_OR_RETURN(int64_t normalized, normalizeAxis(axis, rank, "axes value"));
    reduced[static_cast<size_t>(normalized)] = true;
  }
  std::vector<double> x = toDoubles(xt);
  Moments m = momentsOver(x, xt.sizes(), reduced);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t g = static_cast<size_t>(m.group[i]);
    // The ONNX function body adds 1e-9 to the standard deviation.
    x[i] = (x[i] - m.mean[g]) / (std::sqrt(m.variance[g]) + 1e-9);
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  return Status::success();
}

/// LpNormalization: x / ||x||_p over the vectors along `axis` (p = 1 or 2). A vector whose norm is
/// zero becomes zeros, as in onnxruntime, rather than the 0/0 NaNs of the plain formula.
Status refLpNormalization(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &xt = ctx.tensor(0);
  const int64_t p = ctx.node().attrInt("p", 2);
  if (p != 1 && p != 2) return makeError(ErrorCode::InvalidArgument, "p is {}; expected 1 or 2", p);
  if (xt.rank() == 0) return makeError(ErrorCode::ShapeMismatch, "LpNormalization needs an input of rank 1 or more");
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", -1), static_cast<int64_t>(xt.rank())));
  std::vector<double> x = toDoubles(xt);
  // Vector v holds the elements outer * length * inner + k * inner + i, k in [0, length).
  const int64_t length = xt.size(static_cast<size_t>(axis));
  const int64_t inner = stridesOf(xt.sizes())[static_cast<size_t>(axis)];
  const int64_t outer = xt.numel() / std::max<int64_t>(length * inner, 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const size_t base = static_cast<size_t>(o * length * inner + i);
      double norm = 0.0;
      for (int64_t k = 0; k < length; ++k) {
        const double v = x[base + static_cast<size_t>(k * inner)];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < length; ++k) {
        double &v = x[base + static_cast<size_t>(k * inner)];
        v = norm == 0.0 ? 0.0 : v / norm;
      }
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  return Status::success();
}

}  // namespace tessel::ref
