// Reference kernels of the reduction family: the Reduce* ops (over a set of axes, with keepdims
// and noop_with_empty_axes) and ArgMax/ArgMin. One shared plan maps every input element to its
// output element; each Reduce op is then an (init, combine, finish) triple. Floating-point inputs
// accumulate in double, integer inputs in their own type so int64 keeps all its bits.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

/// Where each input element of a reduction lands, and the output's sizes.
struct ReducePlan {
  std::vector<int64_t> outSizes;    // With or without the reduced axes, as keepdims says.
  std::vector<int64_t> keptSizes;   // Reduced axes as 1 (the keepdims=1 shape).
  std::vector<int64_t> outIndexOf;  // Per input element: flat index of its output element.
  int64_t groupSize = 1;            // Input elements per output element.
};

/// The axes a Reduce node reduces over: from input 1 when the node has one (ReduceSum from
/// opset 13, all Reduce ops from 18), else from the `axes` attribute. Empty means "not given".
Expected<std::vector<int64_t>> requestedAxes(const KernelContext &ctx) {
  const bool axesInput = ctx.opset() >= 18 || (ctx.opset() >= 13 && ctx.node().opType() == "ReduceSum");
  if (axesInput && ctx.node().hasAttr("axes")) {
    // The attribute of older opsets; reading it would give their meaning to a newer node.
    return makeError(ErrorCode::InvalidModel, "{} at opset {} takes axes as input 1, not as an attribute",
                     ctx.node().opType(), ctx.opset());
  }
  if (ctx.numInputs() >= 2 && ctx.hasInput(1)) return ctx.tensor(1).toInt64Vector();
  return ctx.node().attrInts("axes", {});
}

/// Plans a reduction of a tensor of `sizes` over `axes`. Empty axes reduce everything, unless
/// `noopWithEmptyAxes`, in which case nothing is reduced (each output is one input element).
Expected<ReducePlan> planReduce(const std::vector<int64_t> &sizes, const std::vector<int64_t> &axes,
                                bool keepDims, bool noopWithEmptyAxes) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  std::vector<bool> reduced(sizes.size(), axes.empty() && !noopWithEmptyAxes);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return makeError(ErrorCode::InvalidArgument, "axis {} is out of range for a tensor of rank {}", axis, rank);
    }
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (reduced[a]) {
      return makeError(ErrorCode::InvalidArgument, "axes {} name axis {} twice", formatSizes(axes), a);
    }
    reduced[a] = true;
  }
  ReducePlan plan;
  for (size_t i = 0; i < sizes.size(); ++i) {
    plan.keptSizes.push_back(reduced[i] ? 1 : sizes[i]);
    if (reduced[i]) plan.groupSize *= sizes[i];
    if (!reduced[i] || keepDims) plan.outSizes.push_back(plan.keptSizes.back());
  }
  // Broadcasting the kept shape back over the input gives, per input element, its output slot.
  plan.outIndexOf = broadcastIndexMap(plan.keptSizes, sizes);
  return plan;
}

/// Runs a Reduce op described by `Op` (see SumOp) on input 0 of `ctx`.
template <class Op>
Status reduce(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const bool noop = ctx.node().attrInt("noop_with_empty_axes", 0) != 0;
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, requestedAxes(ctx));
  TESSEL_ASSIGN_OR_RETURN(ReducePlan plan, planReduce(x.sizes(), axes, keepDims, noop));
  Tensor out(x.dtype(), plan.outSizes);
  Status status;
  bool handled = visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (!kIsNumeric<T> || std::is_same_v<T, bool>) {
      status = makeError(ErrorCode::TypeMismatch, "{} does not take {}", ctx.node().opType(), dtypeName(x.dtype()));
    } else {
      using A = std::conditional_t<std::is_integral_v<T>, T, double>;
      std::vector<A> acc(static_cast<size_t>(out.numel()), Op::template init<A>());
      const T *in = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        A &slot = acc[static_cast<size_t>(plan.outIndexOf[static_cast<size_t>(i)])];
        if constexpr (std::is_integral_v<T>) {
          slot = Op::combine(slot, in[i]);
        } else {
          slot = Op::combine(slot, toDouble(in[i]));
        }
      }
      T *o = out.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) {
        A value = Op::finish(acc[i], plan.groupSize);
        if constexpr (std::is_integral_v<T>) {
          o[i] = value;
        } else {
          o[i] = fromDouble<T>(value);
        }
      }
    }
  });
  if (!handled) return makeError(ErrorCode::TypeMismatch, "unsupported dtype {}", dtypeName(x.dtype()));
  if (status.ok()) ctx.setOutput(0, std::move(out));
  return status;
}

/// A double result of `fn` cast back to the accumulator type.
template <class A, class Fn>
A viaDouble(A value, Fn fn) {
  return static_cast<A>(fn(static_cast<double>(value)));
}

struct SumOp {
  template <class A> static A init() { return A(0); }
  template <class A> static A combine(A acc, A x) { return acc + x; }
  template <class A> static A finish(A acc, int64_t) { return acc; }
};
struct MeanOp : SumOp {
  template <class A> static A finish(A acc, int64_t n) {
    if constexpr (std::is_integral_v<A>) {
      if (n == 0) return A(0);  // No integer NaN; an empty mean is 0 rather than a crash.
    }
    return acc / static_cast<A>(n);
  }
};
struct ProdOp : SumOp {
  template <class A> static A init() { return A(1); }
  template <class A> static A combine(A acc, A x) { return acc * x; }
};
struct MaxOp : SumOp {
  template <class A> static A init() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  // NaN propagates, as numpy's max does.
  template <class A> static A combine(A acc, A x) { return (x > acc || x != x) ? x : acc; }
};
struct MinOp : SumOp {
  template <class A> static A init() {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  template <class A> static A combine(A acc, A x) { return (x < acc || x != x) ? x : acc; }
};
struct L1Op : SumOp {
  template <class A> static A combine(A acc, A x) { return acc + (x < A(0) ? A(0) - x : x); }
};
struct SumSquareOp : SumOp {
  template <class A> static A combine(A acc, A x) { return acc + x * x; }
};
struct L2Op : SumSquareOp {
  template <class A> static A finish(A acc, int64_t) { return viaDouble(acc, [](double v) { return std::sqrt(v); }); }
};
struct LogSumOp : SumOp {
  template <class A> static A finish(A acc, int64_t) { return viaDouble(acc, [](double v) { return std::log(v); }); }
};

}  // namespace

Status refReduceSum(KernelContext &ctx) { return reduce<SumOp>(ctx); }
Status refReduceMean(KernelContext &ctx) { return reduce<MeanOp>(ctx); }
Status refReduceProd(KernelContext &ctx) { return reduce<ProdOp>(ctx); }
Status refReduceMax(KernelContext &ctx) { return reduce<MaxOp>(ctx); }
Status refReduceMin(KernelContext &ctx) { return reduce<MinOp>(ctx); }
Status refReduceL1(KernelContext &ctx) { return reduce<L1Op>(ctx); }
Status refReduceL2(KernelContext &ctx) { return reduce<L2Op>(ctx); }
Status refReduceSumSquare(KernelContext &ctx) { return reduce<SumSquareOp>(ctx); }
Status refReduceLogSum(KernelContext &ctx) { return reduce<LogSumOp>(ctx); }

/// log(sum(exp(x))), computed as max + log(sum(exp(x - max))) so large inputs do not overflow.
Status refReduceLogSumExp(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "ReduceLogSumExp takes a floating-point tensor; got {}",
                     dtypeName(x.dtype()));
  }
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const bool noop = ctx.node().attrInt("noop_with_empty_axes", 0) != 0;
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, requestedAxes(ctx));
  TESSEL_ASSIGN_OR_RETURN(ReducePlan plan, planReduce(x.sizes(), axes, keepDims, noop));
  Tensor out(x.dtype(), plan.outSizes);
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      const T *in = x.data<T>();
      const size_t n = static_cast<size_t>(out.numel());
      std::vector<double> maxOf(n, -std::numeric_limits<double>::infinity());
      std::vector<double> sum(n, 0.0);
      for (int64_t i = 0; i < x.numel(); ++i) {
        double &m = maxOf[static_cast<size_t>(plan.outIndexOf[static_cast<size_t>(i)])];
        m = std::max(m, toDouble(in[i]));
      }
      for (int64_t i = 0; i < x.numel(); ++i) {
        size_t slot = static_cast<size_t>(plan.outIndexOf[static_cast<size_t>(i)]);
        if (std::isfinite(maxOf[slot])) sum[slot] += std::exp(toDouble(in[i]) - maxOf[slot]);
      }
      T *o = out.data<T>();
      for (size_t i = 0; i < n; ++i) {
        // An all -inf (or empty) group gives -inf; a +inf max gives +inf.
        o[i] = fromDouble<T>(std::isfinite(maxOf[i]) ? maxOf[i] + std::log(sum[i]) : maxOf[i]);
      }
    }
  });
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

namespace {

/// ArgMax/ArgMin along `axis`: the index of the first (or, with select_last_index, last) extreme
/// element. `better(a, b)` says a beats b strictly; integers compare in their own type, narrow
/// floats as double. Output is int64.
template <class Better>
Status argExtreme(KernelContext &ctx, Better better) {
  const Tensor &x = ctx.tensor(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", 0), rank));
  const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
  const bool selectLast = ctx.node().attrInt("select_last_index", 0) != 0;
  const std::vector<int64_t> &sizes = x.sizes();
  if (rank == 0 || sizes[static_cast<size_t>(axis)] == 0) {
    return makeError(ErrorCode::InvalidArgument, "{} needs a non-empty axis {}; input has shape {}",
                     ctx.node().opType(), axis, formatSizes(sizes));
  }
  std::vector<int64_t> outSizes;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) outer *= sizes[static_cast<size_t>(i)];
    if (i > axis) inner *= sizes[static_cast<size_t>(i)];
    if (i != axis) outSizes.push_back(sizes[static_cast<size_t>(i)]);
    else if (keepDims) outSizes.push_back(1);
  }
  const int64_t len = sizes[static_cast<size_t>(axis)];
  Tensor out(DType::Int64, outSizes);
  int64_t *o = out.data<int64_t>();
  Status status;
  bool handled = visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (!kIsNumeric<T>) {
      status = makeError(ErrorCode::TypeMismatch, "{} does not take {}", ctx.node().opType(), dtypeName(x.dtype()));
    } else {
      const T *in = x.data<T>();
      auto at = [&](const T *base, int64_t k) {
        if constexpr (std::is_arithmetic_v<T>) {
          return base[k * inner];
        } else {
          return toDouble(base[k * inner]);
        }
      };
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t b = 0; b < inner; ++b) {
          const T *base = in + a * len * inner + b;
          int64_t best = 0;
          for (int64_t k = 1; k < len; ++k) {
            auto candidate = at(base, k);
            auto current = at(base, best);
            if (better(candidate, current) || (selectLast && candidate == current)) best = k;
          }
          o[a * inner + b] = best;
        }
      }
    }
  });
  if (!handled) return makeError(ErrorCode::TypeMismatch, "unsupported dtype {}", dtypeName(x.dtype()));
  if (status.ok()) ctx.setOutput(0, std::move(out));
  return status;
}

}  // namespace

Status refArgMax(KernelContext &ctx) {
  return argExtreme(ctx, [](auto a, auto b) { return a > b; });
}

Status refArgMin(KernelContext &ctx) {
  return argExtreme(ctx, [](auto a, auto b) { return a < b; });
}

}  // namespace tessel::ref
