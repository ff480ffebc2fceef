// Reference kernels of Softmax, LogSoftmax and Hardmax. Before opset 13 these ops coerce the input
// to 2-D at `axis` (default 1) and normalize each row of prod(shape[axis:]) elements; from opset
// 13 they normalize along the single axis `axis` (default -1). Both views reduce to lines of
// `length` elements spaced `stride` apart, which is what the kernels below walk.
#include <cmath>
#include <limits>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// Calls `transform(line)` on every line of X the op normalizes and writes the results to Y.
template <class Transform>
Status forEachLine(KernelContext &ctx, Transform transform) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &xt = ctx.tensor(0);
  const bool coerceTo2D = ctx.opset() < 13;
  const int64_t rank = static_cast<int64_t>(xt.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", coerceTo2D ? 1 : -1), rank));
  const std::vector<int64_t> &sizes = xt.sizes();
  int64_t outer = 1, length = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = sizes[static_cast<size_t>(d)];
    if (d < axis) outer *= size;
    else if (d == axis || coerceTo2D) length *= size;
    else inner *= size;
  }
  std::vector<double> x = toDoubles(xt);
  std::vector<double> line(static_cast<size_t>(length));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * length * inner + i;
      for (int64_t k = 0; k < length; ++k) line[static_cast<size_t>(k)] = x[static_cast<size_t>(base + k * inner)];
      transform(line);
      for (int64_t k = 0; k < length; ++k) x[static_cast<size_t>(base + k * inner)] = line[static_cast<size_t>(k)];
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), sizes, x));
  return Status::success();
}

double maxOf(const std::vector<double> &line) {
  double best = -std::numeric_limits<double>::infinity();
  for (double v : line) best = std::max(best, v);
  return best;
}

}  // namespace

Status refSoftmax(KernelContext &ctx) {
  return forEachLine(ctx, [](std::vector<double> &line) {
    // Subtracting the max keeps exp in range for large inputs.
    double max = maxOf(line), sum = 0.0;
    for (double &v : line) sum += (v = std::exp(v - max));
    for (double &v : line) v /= sum;
  });
}

Status refLogSoftmax(KernelContext &ctx) {
  return forEachLine(ctx, [](std::vector<double> &line) {
    double max = maxOf(line), sum = 0.0;
    for (double v : line) sum += std::exp(v - max);
    double logSum = std::log(sum);
    for (double &v : line) v = v - max - logSum;
  });
}

Status refHardmax(KernelContext &ctx) {
  return forEachLine(ctx, [](std::vector<double> &line) {
    // The first maximum wins ties.
    size_t best = 0;
    for (size_t k = 1; k < line.size(); ++k) {
      if (line[k] > line[best]) best = k;
    }
    for (size_t k = 0; k < line.size(); ++k) line[k] = k == best ? 1.0 : 0.0;
  });
}

}  // namespace tessel::ref
