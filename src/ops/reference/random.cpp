// Reference kernels of the random generators: RandomUniform and RandomNormal (shape from an
// attribute), RandomUniformLike and RandomNormalLike (shape, and by default dtype, from the input),
// and Multinomial (class indices drawn from unnormalized log-probabilities).
//
// Every execution of a node starts a fresh std::mt19937, so runs are reproducible:
// - With a `seed` attribute that is an integer in [0, 2^32), the engine is std::mt19937(seed),
//   which is also the stream of numpy's legacy np.random.RandomState(seed). The engine's words
//   become numbers with numpy's legacy conversions rather than the implementation-defined
//   std:: distributions: uniforms are random_sample's 53-bit doubles, normals its polar-method
//   gauss. So RandomUniform(seed=s) equals RandomState(s).uniform(low, high, shape) and
//   RandomNormal(seed=s) equals RandomState(s).normal(mean, scale, shape), before narrowing to
//   the output dtype (a uniform draw that narrowing rounds up to `high` is drawn again), and the
//   draws are the same with every C++ standard library.
// - Another seed (negative, fractional, huge) seeds through std::seed_seq from its bit pattern.
// - Without a seed, the engine is seeded deterministically from the node: a hash of its name and
//   first output name, and its position in the source model. Two nodes differ; the same model
//   gives the same values on every run. The flip side: a node inside a Loop or Scan body draws the
//   same values on every iteration.
// ONNX does not define the values themselves (another implementation draws others for the same
// seed), only their distribution.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>

#include "ops/reference/nn_common.h"
#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// MT19937 with numpy's legacy conversions to uniform and normal doubles.
class Sampler {
 public:
  explicit Sampler(const Node &node) : engine_(seedEngine(node)) {}

  /// A uniform double in [0, 1) with 53 random bits (numpy's random_sample).
  double uniform() {
    const uint32_t a = static_cast<uint32_t>(engine_()) >> 5, b = static_cast<uint32_t>(engine_()) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  /// A standard normal double by Marsaglia's polar method, returning the second value of each
  /// pair first and keeping the first for the next call (numpy's legacy gauss).
  double normal() {
    if (spare_) {
      const double value = *spare_;
      spare_.reset();
      return value;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * uniform() - 1.0;
      x2 = 2.0 * uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    spare_ = f * x1;
    return f * x2;
  }

 private:
  static std::mt19937 seedEngine(const Node &node) {
    if (node.hasAttr("seed")) {
      const float seed = node.attrFloat("seed", 0.0f);
      if (seed >= 0.0f && static_cast<double>(seed) < 4294967296.0 && seed == std::floor(seed)) {
        return std::mt19937(static_cast<uint32_t>(seed));
      }
      std::seed_seq sequence{0x5eedu, std::bit_cast<uint32_t>(seed)};
      return std::mt19937(sequence);
    }
    // FNV-1a over the node's name and first output's name (names survive import unchanged;
    // nodes often have no name of their own, but output names are unique in a graph).
    uint64_t hash = 14695981039346656037ull;
    auto mix = [&hash](const std::string &text) {
      for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
      hash = (hash ^ 0xffu) * 1099511628211ull;  // Separator, so "ab"+"c" differs from "a"+"bc".
    };
    mix(node.name());
    mix(node.output(0) ? node.output(0)->name() : std::string());
    std::seed_seq sequence{static_cast<uint32_t>(hash), static_cast<uint32_t>(hash >> 32),
                           static_cast<uint32_t>(node.sourceIndex())};
    return std::mt19937(sequence);
  }

  std::mt19937 engine_;
  std::optional<double> spare_;
};

/// The output dtype: the `dtype` attribute, else `fallback`; float16, float or double.
Expected<DType> readFloatOutputDType(const KernelContext &ctx, DType fallback) {
  const int64_t raw = ctx.node().attrInt("dtype", static_cast<int64_t>(fallback));
  const bool ok = raw == static_cast<int64_t>(DType::Float16) || raw == static_cast<int64_t>(DType::Float32) ||
                  raw == static_cast<int64_t>(DType::Float64);
  if (!ok) {
    return makeError(ErrorCode::TypeMismatch, "{} dtype is {}; expected float16 (10), float (1) or double (11)",
                     ctx.node().opType(), isValidDType(raw) ? std::string(dtypeName(static_cast<DType>(raw)))
                                                            : std::to_string(raw));
  }
  return static_cast<DType>(raw);
}

/// The shape of RandomUniform and RandomNormal: the required `shape` attribute, every dim >= 0.
Expected<std::vector<int64_t>> readShapeAttr(const KernelContext &ctx) {
  if (!ctx.node().hasAttr("shape")) {
    return makeError(ErrorCode::InvalidModel, "{} needs a 'shape' attribute", ctx.node().opType());
  }
  std::vector<int64_t> shape = ctx.node().attrInts("shape");
  for (int64_t dim : shape) {
    if (dim < 0) {
      return makeError(ErrorCode::InvalidArgument, "{} shape {} has a negative dimension", ctx.node().opType(),
                       formatSizes(shape));
    }
  }
  return shape;
}

/// The output dtype of the *Like ops: `dtype`, else the input's, which must then be a float type.
Expected<DType> readLikeOutputDType(const KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  const DType inputType = ctx.tensor(0).dtype();
  if (!ctx.node().hasAttr("dtype") && inputType != DType::Float16 && inputType != DType::Float32 &&
      inputType != DType::Float64) {
    return makeError(ErrorCode::TypeMismatch, "{} input is {}; without a dtype attribute it must be float16, float "
                     "or double", ctx.node().opType(), dtypeName(inputType));
  }
  return readFloatOutputDType(ctx, inputType);
}

/// Sets output 0 to a new `dtype` tensor of `sizes` filled with `draw()` values narrowed to dtype;
/// `accept(narrowed value)` may reject one that narrowing pushed out of range, which is then drawn
/// again (up to 64 times; the last draw stands).
template <class Draw, class Accept>
Status fillRandom(KernelContext &ctx, DType dtype, const std::vector<int64_t> &sizes, Draw draw, Accept accept) {
  TESSEL_RETURN_IF_ERROR(checkOutputSize(dtype, sizes, "the random output"));
  Tensor out(dtype, sizes);
  visitDType(dtype, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Float16>) {
      T *o = out.data<T>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        T value = fromDouble<T>(draw());
        for (int retry = 0; retry < 64 && !accept(toDouble(value)); ++retry) value = fromDouble<T>(draw());
        o[i] = value;
      }
    }
  });
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

/// Uniform values in [low, high): a draw that rounds up to `high` in the output dtype is redrawn.
Status fillUniform(KernelContext &ctx, DType dtype, const std::vector<int64_t> &sizes) {
  const double low = ctx.node().attrFloat("low", 0.0f), high = ctx.node().attrFloat("high", 1.0f);
  if (!(std::isfinite(low) && std::isfinite(high) && low <= high)) {
    return makeError(ErrorCode::InvalidArgument, "{} has low {} and high {}; expected finite values with low <= high",
                     ctx.node().opType(), low, high);
  }
  Sampler sampler(ctx.node());
  return fillRandom(
      ctx, dtype, sizes, [&] { return low + (high - low) * sampler.uniform(); },
      [&](double value) { return value < high || low == high; });
}

/// Normal values with the node's mean and scale (standard deviation).
Status fillNormal(KernelContext &ctx, DType dtype, const std::vector<int64_t> &sizes) {
  const double mean = ctx.node().attrFloat("mean", 0.0f), scale = ctx.node().attrFloat("scale", 1.0f);
  if (!(std::isfinite(mean) && std::isfinite(scale))) {
    return makeError(ErrorCode::InvalidArgument, "{} has mean {} and scale {}; expected finite values",
                     ctx.node().opType(), mean, scale);
  }
  Sampler sampler(ctx.node());
  return fillRandom(
      ctx, dtype, sizes, [&] { return mean + scale * sampler.normal(); }, [](double) { return true; });
}

}  // namespace

/// RandomUniform: a `shape` tensor of values uniform in [low, high).
Status refRandomUniform(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(DType dtype, readFloatOutputDType(ctx, DType::Float32));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, readShapeAttr(ctx));
  return fillUniform(ctx, dtype, sizes);
}

/// RandomNormal: a `shape` tensor of normal values with the given mean and scale.
Status refRandomNormal(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(DType dtype, readFloatOutputDType(ctx, DType::Float32));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, readShapeAttr(ctx));
  return fillNormal(ctx, dtype, sizes);
}

/// RandomUniformLike: RandomUniform with the input's shape (and, without dtype, its dtype).
Status refRandomUniformLike(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(DType dtype, readLikeOutputDType(ctx));
  return fillUniform(ctx, dtype, ctx.tensor(0).sizes());
}

/// RandomNormalLike: RandomNormal with the input's shape (and, without dtype, its dtype).
Status refRandomNormalLike(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(DType dtype, readLikeOutputDType(ctx));
  return fillNormal(ctx, dtype, ctx.tensor(0).sizes());
}

/// Multinomial: for each row of [batch, classes] unnormalized log-probabilities, sample_size class
/// indices drawn independently with probabilities softmax(row), by inverting the cumulative sum
/// of exp(x - max). A class of probability zero (x = -inf, or exp underflowing) is never drawn.
/// Bernoulli: y = 1 where a uniform draw in [0, 1) falls below the probability x, else 0 — the
/// same draws RandomUniformLike makes, so Bernoulli and its ONNX function expansion agree.
Status refBernoulli(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "Bernoulli takes floating-point probabilities; got {}",
                     dtypeName(x.dtype()));
  }
  const int64_t rawDType = ctx.node().attrInt("dtype", static_cast<int64_t>(x.dtype()));
  if (!isValidDType(rawDType) || static_cast<DType>(rawDType) == DType::String) {
    return makeError(ErrorCode::InvalidArgument, "Bernoulli dtype {} is not a numeric type", rawDType);
  }
  Sampler sampler(ctx.node());
  Tensor out(static_cast<DType>(rawDType), x.sizes());
  bool handled = visitDType(out.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      T *o = out.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = fromDouble<T>(sampler.uniform() < x.scalarAsDouble(i) ? 1.0 : 0.0);
    }
  });
  if (!handled) return makeError(ErrorCode::TypeMismatch, "Bernoulli cannot produce {}", dtypeName(out.dtype()));
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refMultinomial(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 2));
  const Tensor &xt = ctx.tensor(0);
  const int64_t rawDType = ctx.node().attrInt("dtype", static_cast<int64_t>(DType::Int32));
  if (rawDType != static_cast<int64_t>(DType::Int32) && rawDType != static_cast<int64_t>(DType::Int64)) {
    return makeError(ErrorCode::TypeMismatch, "Multinomial dtype is {}; expected int32 (6) or int64 (7)", rawDType);
  }
  const int64_t samples = ctx.node().attrInt("sample_size", 1);
  if (samples < 0) return makeError(ErrorCode::InvalidArgument, "sample_size is {}; expected >= 0", samples);
  const int64_t batch = xt.size(0), classes = xt.size(1);
  const DType dtype = static_cast<DType>(rawDType);
  TESSEL_RETURN_IF_ERROR(checkOutputSize(dtype, {batch, samples}, "the Multinomial output"));
  if (classes == 0 && batch > 0 && samples > 0) {
    return makeError(ErrorCode::ShapeMismatch, "input has shape {}; there are no classes to sample from",
                     formatSizes(xt.sizes()));
  }
  const std::vector<double> x = toDoubles(xt);
  std::vector<int64_t> drawn;
  drawn.reserve(static_cast<size_t>(batch * samples));
  std::vector<double> cumulative(static_cast<size_t>(classes));
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  Sampler sampler(ctx.node());
  for (int64_t b = 0; b < batch && samples > 0; ++b) {
    const double *row = x.data() + b * classes;
    if (std::any_of(row, row + classes, [](double v) { return std::isnan(v) || v == kInfinity; })) {
      return makeError(ErrorCode::InvalidArgument, "row {} of the log-probabilities holds NaN or +inf; expected "
                       "finite values or -inf", b);
    }
    const double top = *std::max_element(row, row + classes);
    if (top == -kInfinity) {
      return makeError(ErrorCode::InvalidArgument, "row {} of the log-probabilities is all -inf; no class has a "
                       "nonzero probability", b);
    }
    double total = 0.0;
    int64_t lastPossible = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const double weight = std::exp(row[c] - top);
      total += weight;
      if (weight > 0.0) lastPossible = c;
      cumulative[static_cast<size_t>(c)] = total;
    }
    for (int64_t s = 0; s < samples; ++s) {
      // The first class whose cumulative weight exceeds the draw; a class of weight zero never
      // does, since its cumulative weight equals the previous one's.
      const double target = sampler.uniform() * total;
      auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
      int64_t index = static_cast<int64_t>(it - cumulative.begin());
      drawn.push_back(std::min(index, lastPossible));  // uniform() * total can round up to total.
    }
  }
  const std::vector<int64_t> outSizes = {batch, samples};
  if (dtype == DType::Int64) {
    ctx.setOutput(0, Tensor::fromVector<int64_t>(outSizes, drawn));
  } else {
    ctx.setOutput(0, Tensor::fromVector<int32_t>(outSizes, std::vector<int32_t>(drawn.begin(), drawn.end())));
  }
  return Status::success();
}

}  // namespace tessel::ref
