// Reference kernels of the tensor family that resample: Resize (opset 10, 11, 13 and 18 forms) and
// the older Upsample. Follows ONNX's numpy reference (onnx/backend/test/case/node/resize.py): each
// axis maps an output coordinate back to a fractional input coordinate, picks 2 (nearest,
// linear) or 4 (cubic) neighbouring input indices with edge clamping and weights them; the
// output element is the weighted sum over the product of every axis's taps, in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ops/resize_geometry.h"
#include "ops/reference/shape_rules.h"
#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

struct ResizeOptions {
  std::string mode = "nearest";                  // nearest, linear, cubic.
  std::string coordinateMode = "half_pixel";     // See resizeInputCoordinate.
  std::string nearestMode = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;  // Resize-18: widen linear and cubic filters when downscaling.
  double extrapolationValue = 0.0;
};

/// One input index and its weight, contributing to one output coordinate along one axis.
struct Tap {
  int64_t index;
  double weight;
};

/// Per output coordinate along one axis: its taps, or none when it falls outside the crop
/// region of tf_crop_and_resize (the output element is then the extrapolation value).
using AxisTaps = std::vector<std::optional<std::vector<Tap>>>;

/// The cubic convolution kernel of Keys with parameter `a`, at distance `x`.
double cubicKernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// Antialiased weights (Resize-18 `antialias`) when downscaling by `scale` < 1: the linear or
/// cubic kernel stretched by 1 / scale, normalized, over the 2 * (1 - start) neighbours from
/// left + start, as ONNX's reference computes them.
std::vector<double> antialiasCoefficients(double ratio, double scale, const ResizeOptions &options) {
  const bool cubic = options.mode == "cubic";
  const auto start = static_cast<int64_t>(std::floor((cubic ? -2.0 : -1.0) / scale) + 1);
  std::vector<double> coeffs;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    const double x = scale * (static_cast<double>(i) - ratio);
    coeffs.push_back(cubic ? cubicKernel(x, options.cubicA) : std::clamp(1 - std::fabs(x), 0.0, 1.0));
    sum += coeffs.back();
  }
  for (double &c : coeffs) c /= sum;
  return coeffs;
}

/// Interpolation weights for a fractional offset `ratio` in (0, 1] from the left neighbour; an
/// even count n, for the neighbours left - n/2 + 1 .. left + n/2.
std::vector<double> coefficients(double ratio, double scale, const ResizeOptions &options) {
  if (options.antialias && scale < 1 && options.mode != "nearest") return antialiasCoefficients(ratio, scale, options);
  if (options.mode == "linear") return {1 - ratio, ratio};
  if (options.mode == "cubic") {
    const double a = options.cubicA;
    const double r1 = ratio + 1, l = 1 - ratio, l1 = 2 - ratio;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
            ((a + 2) * l - (a + 3)) * l * l + 1, ((a * l1 - 5 * a) * l1 + 8 * a) * l1 - 4 * a};
  }
  // Nearest: the left or the right neighbour.
  const bool right = nearestPicksRight(ratio, options.nearestMode);
  return {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
}

/// The taps of every output coordinate along one axis.
Expected<AxisTaps> axisTaps(int64_t inSize, int64_t outSize, double scale, double roiStart, double roiEnd,
                            const ResizeOptions &options) {
  AxisTaps taps(static_cast<size_t>(outSize));
  for (int64_t x = 0; x < outSize; ++x) {
    TESSEL_ASSIGN_OR_RETURN(std::optional<double> original,
                            resizeInputCoordinate(static_cast<double>(x), inSize, scale, roiStart, roiEnd,
                                                  options.coordinateMode));
    if (!original) continue;
    // The left neighbour sits strictly below the coordinate: ratio is in (0, 1].
    double left = std::floor(*original);
    if (left == *original) left -= 1;
    const double ratio = *original - left;
    std::vector<double> coeffs = coefficients(ratio, scale, options);
    const int64_t first = static_cast<int64_t>(left) - static_cast<int64_t>(coeffs.size() / 2 - 1);
    if (options.excludeOutside) {
      double sum = 0;
      for (size_t i = 0; i < coeffs.size(); ++i) {
        const int64_t index = first + static_cast<int64_t>(i);
        if (index < 0 || index >= inSize) coeffs[i] = 0;
        sum += coeffs[i];
      }
      for (double &c : coeffs) c /= sum;
    }
    std::vector<Tap> axis;
    for (size_t i = 0; i < coeffs.size(); ++i) {
      if (coeffs[i] == 0) continue;
      axis.push_back({std::clamp<int64_t>(first + static_cast<int64_t>(i), 0, inSize - 1), coeffs[i]});
    }
    taps[static_cast<size_t>(x)] = std::move(axis);
  }
  return taps;
}

/// Output sizes and per-axis scales from either `scales` or `sizes` (exactly one non-empty), for
/// every axis (Upsample, Resize-10).
Status resolveScales(const Tensor &x, const std::vector<double> &scalesIn, std::vector<int64_t> &outSizes,
                     std::vector<double> &scales) {
  const size_t rank = x.rank();
  if (scalesIn.size() != rank) {
    return makeError(ErrorCode::InvalidArgument, "scales has {} values for rank {}", scalesIn.size(), rank);
  }
  scales = scalesIn;
  outSizes.resize(rank);
  for (size_t a = 0; a < rank; ++a) {
    const double size = std::floor(scales[a] * static_cast<double>(x.size(a)));
    if (!(scales[a] > 0) || !(size < 1e15)) {
      return makeError(ErrorCode::InvalidArgument, "scale {} for axis {} must be positive and finite", scales[a], a);
    }
    outSizes[a] = static_cast<int64_t>(size);
  }
  return checkOutputSize(x.dtype(), outSizes, "Resize output");
}

/// Resamples `x` to `outSizes`; `roi` is empty or holds rank starts then rank ends.
Status resample(KernelContext &ctx, const Tensor &x, const std::vector<int64_t> &outSizes,
                const std::vector<double> &scales, const std::vector<double> &roi, const ResizeOptions &options) {
  const size_t rank = x.rank();
  if (options.coordinateMode == "tf_crop_and_resize" && roi.size() != 2 * rank) {
    return makeError(ErrorCode::InvalidArgument, "tf_crop_and_resize needs a roi of {} values; got {}", 2 * rank,
                     roi.size());
  }
  if (options.mode != "nearest" && options.mode != "linear" && options.mode != "cubic") {
    return makeError(ErrorCode::InvalidArgument, "unknown Resize mode '{}'", options.mode);
  }
  if (numElements(outSizes) == 0) {
    ctx.setOutput(0, Tensor(x.dtype(), outSizes));
    return Status::success();
  }
  std::vector<AxisTaps> taps(rank);
  for (size_t a = 0; a < rank; ++a) {
    if (x.size(a) == 0 && outSizes[a] > 0) {
      return makeError(ErrorCode::ShapeMismatch, "cannot resize the empty axis {} to {}", a, outSizes[a]);
    }
    const double start = roi.empty() ? 0 : roi[a], end = roi.empty() ? 1 : roi[rank + a];
    TESSEL_ASSIGN_OR_RETURN(taps[a], axisTaps(x.size(a), outSizes[a], scales[a], start, end, options));
  }
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  Tensor out(x.dtype(), outSizes);
  Status status;
  bool handled = visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (!kIsNumeric<T>) {
      status = makeError(ErrorCode::TypeMismatch, "Resize does not take {}", dtypeName(x.dtype()));
    } else {
      const T *in = x.data<T>();
      T *o = out.data<T>();
      int64_t flat = 0;
      std::vector<const std::vector<Tap> *> current(rank);
      std::vector<size_t> pick(rank);
      forEachIndex(outSizes, [&](const std::vector<int64_t> &index) {
        bool outside = false;
        bool noTaps = false;
        for (size_t a = 0; a < rank; ++a) {
          const auto &t = taps[a][static_cast<size_t>(index[a])];
          outside = outside || !t;
          noTaps = noTaps || (t && t->empty());
          current[a] = t ? &*t : nullptr;
        }
        if (outside || noTaps) {
          o[flat++] = fromDouble<T>(outside ? options.extrapolationValue : 0.0);
          return;
        }
        // Sum over the product of the axes' taps (odometer over `pick`).
        double sum = 0;
        std::fill(pick.begin(), pick.end(), 0);
        while (true) {
          double weight = 1;
          int64_t source = 0;
          for (size_t a = 0; a < rank; ++a) {
            const Tap &tap = (*current[a])[pick[a]];
            weight *= tap.weight;
            source += tap.index * inStrides[a];
          }
          sum += weight * toDouble(in[source]);
          size_t a = rank;
          while (a > 0 && ++pick[a - 1] == current[a - 1]->size()) pick[--a] = 0;
          if (a == 0) break;
        }
        o[flat++] = fromDouble<T>(sum);
      });
    }
  });
  if (!handled) return makeError(ErrorCode::TypeMismatch, "Resize does not take {}", dtypeName(x.dtype()));
  TESSEL_RETURN_IF_ERROR(status);
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

/// A float input as doubles (scales, roi); empty when the input is omitted.
Expected<std::vector<double>> readFloatInput(const KernelContext &ctx, size_t input, const char *what) {
  if (!ctx.hasInput(input)) return std::vector<double>{};
  const Tensor &t = ctx.tensor(input);
  if (!isFloatingPoint(t.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "{} (input {}) must be floating point; got {}", what, input,
                     dtypeName(t.dtype()));
  }
  std::vector<double> values(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) values[static_cast<size_t>(i)] = t.scalarAsDouble(i);
  return values;
}

/// Upsample and Resize-10: nearest (flooring) or linear, on asymmetric coordinates.
Status resizeWithScales(KernelContext &ctx, const std::vector<double> &scalesIn) {
  const Tensor &x = ctx.tensor(0);
  ResizeOptions options;
  options.mode = ctx.node().attrString("mode", "nearest");
  if (options.mode == "bilinear") options.mode = "linear";
  options.coordinateMode = "asymmetric";
  options.nearestMode = "floor";
  std::vector<int64_t> outSizes;
  std::vector<double> scales;
  TESSEL_RETURN_IF_ERROR(resolveScales(x, scalesIn, outSizes, scales));
  return resample(ctx, x, outSizes, scales, {}, options);
}

/// The axes Resize's scales, sizes and roi name: the `axes` attribute (opset 18), else all.
Expected<std::vector<size_t>> resizeAxes(const Node &node, size_t rank) {
  const std::vector<int64_t> given = node.attrInts("axes", {});
  std::vector<size_t> axes;
  if (given.empty()) {
    for (size_t a = 0; a < rank; ++a) axes.push_back(a);
    return axes;
  }
  for (int64_t axis : given) {
    TESSEL_ASSIGN_OR_RETURN(int64_t a, normalizeAxis(axis, static_cast<int64_t>(rank), "axes"));
    if (std::find(axes.begin(), axes.end(), static_cast<size_t>(a)) != axes.end()) {
      return makeError(ErrorCode::InvalidArgument, "axes {} name axis {} twice", formatSizes(given), a);
    }
    axes.push_back(static_cast<size_t>(a));
  }
  return axes;
}

/// `roi` (starts then ends of the named axes) widened to every axis; other axes get [0, 1].
Expected<std::vector<double>> roiForEveryAxis(const std::vector<double> &roi, size_t rank, const Node &node) {
  if (roi.empty()) return roi;
  TESSEL_ASSIGN_OR_RETURN(std::vector<size_t> axes, resizeAxes(node, rank));
  if (roi.size() != 2 * axes.size()) {
    return makeError(ErrorCode::InvalidArgument, "roi has {} values; expected {} for {} axes", roi.size(),
                     2 * axes.size(), axes.size());
  }
  std::vector<double> full(2 * rank, 0.0);
  for (size_t a = 0; a < rank; ++a) full[rank + a] = 1.0;
  for (size_t k = 0; k < axes.size(); ++k) {
    full[axes[k]] = roi[k];
    full[rank + axes[k]] = roi[axes.size() + k];
  }
  return full;
}

}  // namespace

Status resolveResizeTarget(const std::vector<int64_t> &inSizes, const std::vector<double> &scalesIn,
                           const std::vector<int64_t> &sizesIn, const Node &node, ResizeTarget &target) {
  TESSEL_ASSIGN_OR_RETURN(std::vector<size_t> axes, resizeAxes(node, inSizes.size()));
  const std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    return makeError(ErrorCode::InvalidArgument, "unknown keep_aspect_ratio_policy '{}'", policy);
  }
  if (!sizesIn.empty() && !scalesIn.empty()) {
    return makeError(ErrorCode::InvalidArgument, "give scales or sizes, not both");
  }
  target.outSizes = inSizes;
  target.scales.assign(inSizes.size(), 1.0);
  if (!sizesIn.empty()) {
    if (sizesIn.size() != axes.size()) {
      return makeError(ErrorCode::InvalidArgument, "sizes has {} values for {} axes", sizesIn.size(), axes.size());
    }
    // not_larger / not_smaller: one scale for every named axis, the smallest / largest asked for.
    double common = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (size_t k = 0; k < axes.size(); ++k) {
      const int64_t in = inSizes[axes[k]];
      if (in == 0) return makeError(ErrorCode::ShapeMismatch, "cannot resize the empty axis {}", axes[k]);
      if (sizesIn[k] < 0) return makeError(ErrorCode::InvalidArgument, "sizes {} holds a negative size", formatSizes(sizesIn));
      const double ratio = static_cast<double>(sizesIn[k]) / static_cast<double>(in);
      common = policy == "not_larger" ? std::min(common, ratio) : std::max(common, ratio);
      target.outSizes[axes[k]] = sizesIn[k];
      target.scales[axes[k]] = ratio;
    }
    if (policy == "stretch") return Status::success();
    for (size_t a : axes) {
      // Rounded half up, as ONNX's reference does.
      const double size = common * static_cast<double>(inSizes[a]) + 0.5;
      if (!(size < 1e15)) return makeError(ErrorCode::InvalidArgument, "sizes {} are too large", formatSizes(sizesIn));
      target.outSizes[a] = static_cast<int64_t>(size);
      target.scales[a] = common;
    }
    return Status::success();
  }
  if (scalesIn.size() != axes.size()) {
    return makeError(ErrorCode::InvalidArgument, "scales has {} values for {} axes (or give sizes)", scalesIn.size(),
                     axes.size());
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = axes[k];
    const double size = std::floor(scalesIn[k] * static_cast<double>(inSizes[a]));
    if (!(scalesIn[k] > 0) || !(size < 1e15)) {
      return makeError(ErrorCode::InvalidArgument, "scale {} for axis {} must be positive and finite", scalesIn[k], a);
    }
    target.outSizes[a] = static_cast<int64_t>(size);
    target.scales[a] = scalesIn[k];
  }
  return Status::success();
}

Status refResize(KernelContext &ctx) {
  if (ctx.opset() < 11) {
    TESSEL_ASSIGN_OR_RETURN(std::vector<double> scales, readFloatInput(ctx, 1, "scales"));
    return resizeWithScales(ctx, scales);
  }
  const Tensor &x = ctx.tensor(0);
  const Node &node = ctx.node();
  ResizeOptions options;
  options.mode = node.attrString("mode", "nearest");
  options.coordinateMode = node.attrString("coordinate_transformation_mode", "half_pixel");
  options.nearestMode = node.attrString("nearest_mode", "round_prefer_floor");
  options.cubicA = node.attrFloat("cubic_coeff_a", -0.75f);
  options.excludeOutside = node.attrInt("exclude_outside", 0) != 0;
  options.extrapolationValue = node.attrFloat("extrapolation_value", 0.0f);
  options.antialias = node.attrInt("antialias", 0) != 0;
  const std::string &nm = options.nearestMode;
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil") {
    return makeError(ErrorCode::InvalidArgument, "unknown nearest_mode '{}'", nm);
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> roi, readFloatInput(ctx, 1, "roi"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> scalesIn, readFloatInput(ctx, 2, "scales"));
  std::vector<int64_t> sizesIn;
  if (ctx.hasInput(3)) {
    TESSEL_ASSIGN_OR_RETURN(sizesIn, readIntInput(ctx, 3, "sizes"));
  }
  ResizeTarget target;
  TESSEL_RETURN_IF_ERROR(resolveResizeTarget(x.sizes(), scalesIn, sizesIn, node, target));
  TESSEL_RETURN_IF_ERROR(checkOutputSize(x.dtype(), target.outSizes, "Resize output"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> fullRoi, roiForEveryAxis(roi, x.rank(), node));
  return resample(ctx, x, target.outSizes, target.scales, fullRoi, options);
}

Status refUpsample(KernelContext &ctx) {
  if (ctx.opset() < 9) {
    const std::vector<float> attr = ctx.node().attrFloats("scales");
    return resizeWithScales(ctx, std::vector<double>(attr.begin(), attr.end()));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> scales, readFloatInput(ctx, 1, "scales"));
  return resizeWithScales(ctx, scales);
}

}  // namespace tessel::ref
