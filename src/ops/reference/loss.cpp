// Reference kernels of the loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which
// is NLL over a log-softmax along axis 1). Both take scores [N, C, d1..dk], int targets
// [N, d1..dk], optional per-class weights [C], an optional ignore_index, and reduce with
// none/sum/mean, where mean divides by the total weight of the targets that count.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

/// Scores widened to double, with their [N, C, D] view (D = product of the trailing dims).
struct ScoreView {
  std::vector<double> values;
  int64_t n = 0, c = 0, d = 1;
};

/// Reads input 0 of `ctx` as scores; fails unless it is floating point of rank >= 2.
Expected<ScoreView> readScores(const KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "{} takes floating-point scores; got {}", ctx.node().opType(),
                     dtypeName(x.dtype()));
  }
  if (x.rank() < 2) {
    return makeError(ErrorCode::ShapeMismatch, "{} needs scores of shape [N, C, ...]; got {}", ctx.node().opType(),
                     formatSizes(x.sizes()));
  }
  ScoreView view;
  view.n = x.size(0);
  view.c = x.size(1);
  for (size_t i = 2; i < x.rank(); ++i) view.d *= x.size(i);
  view.values.resize(static_cast<size_t>(x.numel()));
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      const T *in = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) view.values[static_cast<size_t>(i)] = toDouble(in[i]);
    }
  });
  return view;
}

/// Replaces each [C] fibre of the [N, C, D] scores by its log-softmax.
void logSoftmaxOverClasses(ScoreView &s) {
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t d = 0; d < s.d; ++d) {
      double *base = s.values.data() + n * s.c * s.d + d;
      double maxValue = -INFINITY;
      for (int64_t c = 0; c < s.c; ++c) maxValue = std::max(maxValue, base[c * s.d]);
      double sum = 0.0;
      for (int64_t c = 0; c < s.c; ++c) sum += std::exp(base[c * s.d] - maxValue);
      const double logSum = maxValue + std::log(sum);
      for (int64_t c = 0; c < s.c; ++c) base[c * s.d] -= logSum;
    }
  }
}

/// The NLL loss of log-probabilities `logProb` against target input `targetInput` (and weights at
/// `weightInput` when present), written to output 0.
Status negativeLogLikelihood(KernelContext &ctx, const ScoreView &logProb, size_t targetInput, size_t weightInput) {
  const Tensor &scores = ctx.tensor(0);
  const Tensor &target = ctx.tensor(targetInput);
  if (target.dtype() != DType::Int32 && target.dtype() != DType::Int64) {
    return makeError(ErrorCode::TypeMismatch, "{} takes int32 or int64 targets; got {}", ctx.node().opType(),
                     dtypeName(target.dtype()));
  }
  std::vector<int64_t> expectedTarget = scores.sizes();
  expectedTarget.erase(expectedTarget.begin() + 1);
  if (target.sizes() != expectedTarget) {
    return makeError(ErrorCode::ShapeMismatch, "{} target has shape {}; expected {} for scores of shape {}",
                     ctx.node().opType(), formatSizes(target.sizes()), formatSizes(expectedTarget),
                     formatSizes(scores.sizes()));
  }
  std::vector<double> weights;
  if (ctx.hasInput(weightInput)) {
    const Tensor &w = ctx.tensor(weightInput);
    if (w.dtype() != scores.dtype() || w.sizes() != std::vector<int64_t>{logProb.c}) {
      return makeError(ErrorCode::InvalidArgument, "{} weights must be {}[{}]; got {}{}", ctx.node().opType(),
                       dtypeName(scores.dtype()), logProb.c, dtypeName(w.dtype()), formatSizes(w.sizes()));
    }
    for (int64_t c = 0; c < logProb.c; ++c) weights.push_back(w.scalarAsDouble(c));
  }
  std::optional<int64_t> ignoreIndex;
  if (ctx.node().hasAttr("ignore_index")) ignoreIndex = ctx.node().attrInt("ignore_index", 0);
  const std::string reduction = ctx.node().attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return makeError(ErrorCode::InvalidArgument, "{} reduction must be none, sum or mean; got '{}'",
                     ctx.node().opType(), reduction);
  }

  // loss[n, d] = -w[t] * logProb[n, t, d] with t = target[n, d]; ignored targets weigh 0.
  std::vector<double> loss(static_cast<size_t>(logProb.n * logProb.d), 0.0);
  double totalWeight = 0.0;
  for (int64_t n = 0; n < logProb.n; ++n) {
    for (int64_t d = 0; d < logProb.d; ++d) {
      const int64_t i = n * logProb.d + d;
      const int64_t t = target.scalarAsInt64(i);
      if (ignoreIndex && t == *ignoreIndex) continue;
      if (t < 0 || t >= logProb.c) {
        return makeError(ErrorCode::InvalidArgument, "{} target {} at element {} is outside [0, {})",
                         ctx.node().opType(), t, i, logProb.c);
      }
      const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(t)];
      loss[static_cast<size_t>(i)] = -w * logProb.values[static_cast<size_t>((n * logProb.c + t) * logProb.d + d)];
      totalWeight += w;
    }
  }
  if (reduction == "none") {
    ctx.setOutput(0, fromDoubles(scores.dtype(), target.sizes(), loss));
    return Status::success();
  }
  double sum = 0.0;
  for (double v : loss) sum += v;
  const double result = reduction == "sum" ? sum : sum / totalWeight;
  ctx.setOutput(0, fromDoubles(scores.dtype(), {}, {result}));
  return Status::success();
}

}  // namespace

/// NegativeLogLikelihoodLoss(input, target[, weight]).
Status refNegativeLogLikelihoodLoss(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(ScoreView logProb, readScores(ctx));
  return negativeLogLikelihood(ctx, logProb, /*targetInput=*/1, /*weightInput=*/2);
}

/// SoftmaxCrossEntropyLoss(scores, labels[, weights]) -> (output[, log_prob]).
Status refSoftmaxCrossEntropyLoss(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(ScoreView logProb, readScores(ctx));
  logSoftmaxOverClasses(logProb);
  TESSEL_RETURN_IF_ERROR(negativeLogLikelihood(ctx, logProb, /*targetInput=*/1, /*weightInput=*/2));
  if (ctx.wantsOutput(1)) {
    const Tensor &scores = ctx.tensor(0);
    ctx.setOutput(1, fromDoubles(scores.dtype(), scores.sizes(), logProb.values));
  }
  return Status::success();
}

}  // namespace tessel::ref
