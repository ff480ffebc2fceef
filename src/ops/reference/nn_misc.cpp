// Reference kernels of the nn ops that fit no other file: Dropout, RoiAlign, GridSample and
// NonMaxSuppression. RoiAlign and NonMaxSuppression follow onnxruntime's reference behaviour
// (which the ONNX test data was produced with); GridSample follows PyTorch's grid_sample.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// Largest adaptive RoiAlign sampling grid side; a bigger one comes from a nonsensical roi.
constexpr double kMaxAdaptiveGrid = 1 << 16;

/// numpy's legacy random_sample(): a 53-bit double in [0, 1) from two 32-bit Mersenne Twister
/// outputs. std::mt19937 seeded with s produces the same stream as np.random.seed(s).
double numpyRandomSample(std::mt19937 &engine) {
  uint32_t a = engine() >> 5;
  uint32_t b = engine() >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
}

/// The four bilinear corner terms (weight times value) of a RoiAlign sample at (y, x) of one
/// plane; all zero for a sample more than a pixel outside it. Average mode sums them; max mode
/// takes the largest, as onnxruntime defines it.
std::array<double, 4> roiCorners(const double *plane, int64_t height, int64_t width, double y, double x) {
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) return {};
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x);
  int64_t yHigh = yLow + 1, xHigh = xLow + 1;
  if (yLow >= height - 1) y = static_cast<double>(yHigh = yLow = height - 1);
  if (xLow >= width - 1) x = static_cast<double>(xHigh = xLow = width - 1);
  double ly = y - static_cast<double>(yLow), lx = x - static_cast<double>(xLow);
  double hy = 1.0 - ly, hx = 1.0 - lx;
  return {hy * hx * plane[yLow * width + xLow], hy * lx * plane[yLow * width + xHigh],
          ly * hx * plane[yHigh * width + xLow], ly * lx * plane[yHigh * width + xHigh]};
}

/// PyTorch's reflect_coordinates: folds `coord` into [twiceLow / 2, twiceHigh / 2].
double reflect(double coord, double twiceLow, double twiceHigh) {
  if (twiceLow == twiceHigh) return 0.0;
  double low = twiceLow / 2.0, span = (twiceHigh - twiceLow) / 2.0;
  coord = std::fabs(coord - low);
  double extra = std::fmod(coord, span);
  int64_t flips = static_cast<int64_t>(std::floor(coord / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

/// GridSample's handling of one coordinate (in pixels) under `padding`: border clamps,
/// reflection folds then clamps, zeros leaves it (out-of-range reads give 0).
double padCoordinate(double coord, int64_t size, const std::string &padding, bool alignCorners) {
  double hi = static_cast<double>(size - 1);
  if (padding == "border") return std::clamp(coord, 0.0, hi);
  if (padding == "reflection") {
    coord = alignCorners ? reflect(coord, 0.0, 2.0 * hi) : reflect(coord, -1.0, 2.0 * static_cast<double>(size) - 1.0);
    return std::clamp(coord, 0.0, hi);
  }
  return coord;
}

/// Cubic convolution weights of the 4 taps around a fraction t (A = -0.75, as in PyTorch).
std::array<double, 4> cubicWeights(double t) {
  constexpr double A = -0.75;
  auto near = [&](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto far = [&](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

/// Intersection over union of two boxes, as onnxruntime computes it (0 for degenerate boxes).
double intersectionOverUnion(const double *a, const double *b, bool centerPointBox) {
  auto corners = [&](const double *box, double &y0, double &x0, double &y1, double &x1) {
    if (centerPointBox) {  // [x_center, y_center, width, height]
      x0 = box[0] - box[2] / 2, x1 = box[0] + box[2] / 2;
      y0 = box[1] - box[3] / 2, y1 = box[1] + box[3] / 2;
    } else {  // [y1, x1, y2, x2], corners in any order
      y0 = std::min(box[0], box[2]), y1 = std::max(box[0], box[2]);
      x0 = std::min(box[1], box[3]), x1 = std::max(box[1], box[3]);
    }
  };
  double ay0, ax0, ay1, ax1, by0, bx0, by1, bx1;
  corners(a, ay0, ax0, ay1, ax1);
  corners(b, by0, bx0, by1, bx1);
  double intersection = std::max(0.0, std::min(ax1, bx1) - std::max(ax0, bx0)) *
                        std::max(0.0, std::min(ay1, by1) - std::max(ay0, by0));
  double areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);
  double unionArea = areaA + areaB - intersection;
  if (intersection <= 0 || areaA <= 0 || areaB <= 0 || unionArea <= 0) return 0.0;
  return intersection / unionArea;
}

}  // namespace

Status refDropout(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &xt = ctx.tensor(0);
  // From opset 12, ratio and training_mode are inputs; before, Dropout only runs for inference.
  double ratio = ctx.node().attrFloat("ratio", 0.5f);
  bool training = false;
  if (ctx.opset() >= 12) {
    for (size_t input : {size_t{1}, size_t{2}}) {
      if (ctx.hasInput(input) && ctx.tensor(input).numel() != 1) {
        return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected a scalar",
                         input == 1 ? "ratio" : "training_mode", formatSizes(ctx.tensor(input).sizes()));
      }
    }
    ratio = ctx.hasInput(1) ? ctx.tensor(1).scalarAsDouble() : 0.5;
    training = ctx.hasInput(2) && ctx.tensor(2).scalarAsDouble() != 0.0;
  }
  DType maskType = ctx.opset() >= 10 ? DType::Bool : xt.dtype();
  std::vector<double> x = toDoubles(xt);
  std::vector<double> mask(x.size(), 1.0);
  if (training && ratio != 0.0) {
    if (ratio < 0.0 || ratio >= 1.0) {
      return makeError(ErrorCode::InvalidArgument, "ratio is {}; expected a value in [0, 1) in training mode", ratio);
    }
    // The mask draws from numpy's generator so seeded runs reproduce the ONNX test data; without
    // a seed attribute the reference stays deterministic with seed 0.
    std::mt19937 engine(static_cast<uint32_t>(ctx.node().attrInt("seed", 0)));
    for (size_t i = 0; i < x.size(); ++i) {
      mask[i] = numpyRandomSample(engine) >= ratio ? 1.0 : 0.0;
      x[i] = x[i] * mask[i] / (1.0 - ratio);
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  ctx.setOutput(1, fromDoubles(maskType, xt.sizes(), mask));
  return Status::success();
}

Status refRoiAlign(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 3));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 4));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 1, 2));
  const Tensor &xt = ctx.tensor(0);
  const Tensor &roisT = ctx.tensor(1);
  const Tensor &batchT = ctx.tensor(2);
  const int64_t numRois = roisT.size(0);
  if (roisT.size(1) != 4 || batchT.numel() != numRois) {
    return makeError(ErrorCode::ShapeMismatch, "rois has shape {} and batch_indices {}; expected [R, 4] and [R]",
                     formatSizes(roisT.sizes()), formatSizes(batchT.sizes()));
  }
  const Node &node = ctx.node();
  const int64_t outH = node.attrInt("output_height", 1), outW = node.attrInt("output_width", 1);
  const int64_t samplingRatio = node.attrInt("sampling_ratio", 0);
  const double scale = node.attrFloat("spatial_scale", 1.0f);
  const std::string mode = node.attrString("mode", "avg");
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
  const std::string transform = node.attrString("coordinate_transformation_mode",
                                                ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if ((mode != "avg" && mode != "max") || (transform != "half_pixel" && transform != "output_half_pixel") ||
      outH <= 0 || outW <= 0 || samplingRatio < 0) {
    return makeError(ErrorCode::InvalidArgument, "bad attributes: mode '{}', coordinate_transformation_mode '{}', "
                     "output {}x{}, sampling_ratio {}", mode, transform, outH, outW, samplingRatio);
  }
  TESSEL_RETURN_IF_ERROR(checkWorkSize({numRois, xt.size(1), outH, outW}, "the RoiAlign output"));
  const bool halfPixel = transform == "half_pixel";
  const int64_t channels = xt.size(1), height = xt.size(2), width = xt.size(3);
  std::vector<double> x = toDoubles(xt), rois = toDoubles(roisT);
  std::vector<int64_t> batch = batchT.toInt64Vector();
  std::vector<double> y;
  y.reserve(static_cast<size_t>(numRois * channels * outH * outW));
  for (int64_t r = 0; r < numRois; ++r) {
    if (batch[static_cast<size_t>(r)] < 0 || batch[static_cast<size_t>(r)] >= xt.size(0)) {
      return makeError(ErrorCode::InvalidArgument, "batch_indices[{}] is {}; expected [0, {})", r,
                       batch[static_cast<size_t>(r)], xt.size(0));
    }
    const double *roi = rois.data() + r * 4;
    const double offset = halfPixel ? 0.5 : 0.0;
    double startW = roi[0] * scale - offset, startH = roi[1] * scale - offset;
    double roiW = roi[2] * scale - offset - startW, roiH = roi[3] * scale - offset - startH;
    if (!halfPixel) roiW = std::max(roiW, 1.0), roiH = std::max(roiH, 1.0);
    const double binH = roiH / static_cast<double>(outH), binW = roiW / static_cast<double>(outW);
    // The adaptive grid has ceil(bin size) samples a side; bound it before converting.
    if (samplingRatio == 0 && !(binH <= kMaxAdaptiveGrid && binW <= kMaxAdaptiveGrid)) {
      return makeError(ErrorCode::InvalidArgument, "roi {} spans bins of {} x {} pixels; expected at most {} with "
                       "an adaptive sampling_ratio", r, binH, binW, kMaxAdaptiveGrid);
    }
    const int64_t gridH = samplingRatio > 0 ? samplingRatio : static_cast<int64_t>(std::ceil(binH));
    const int64_t gridW = samplingRatio > 0 ? samplingRatio : static_cast<int64_t>(std::ceil(binW));
    const double count = static_cast<double>(std::max<int64_t>(gridH * gridW, 1));
    const double gridRows = static_cast<double>(gridH), gridCols = static_cast<double>(gridW);
    for (int64_t c = 0; c < channels; ++c) {
      const double *plane = x.data() + (batch[static_cast<size_t>(r)] * channels + c) * height * width;
      for (int64_t ph = 0; ph < outH; ++ph) {
        for (int64_t pw = 0; pw < outW; ++pw) {
          double acc = mode == "avg" ? 0.0 : -std::numeric_limits<double>::infinity();
          // Samples sit at the centres of a gridH x gridW grid inside the bin.
          for (int64_t iy = 0; iy < gridH; ++iy) {
            double sy = startH + static_cast<double>(ph) * binH + (static_cast<double>(iy) + 0.5) * binH / gridRows;
            for (int64_t ix = 0; ix < gridW; ++ix) {
              double sx = startW + static_cast<double>(pw) * binW + (static_cast<double>(ix) + 0.5) * binW / gridCols;
              std::array<double, 4> corners = roiCorners(plane, height, width, sy, sx);
              if (mode == "avg") acc += corners[0] + corners[1] + corners[2] + corners[3];
              else acc = std::max({acc, corners[0], corners[1], corners[2], corners[3]});
            }
          }
          y.push_back(mode == "avg" ? acc / count : (gridH * gridW == 0 ? 0.0 : acc));
        }
      }
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), {numRois, channels, outH, outW}, y));
  return Status::success();
}

Status refGridSample(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 4));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 1, 4));
  const Tensor &xt = ctx.tensor(0);
  const Tensor &gridT = ctx.tensor(1);
  const int64_t n = xt.size(0), channels = xt.size(1), height = xt.size(2), width = xt.size(3);
  const int64_t outH = gridT.size(1), outW = gridT.size(2);
  if (gridT.size(0) != n || gridT.size(3) != 2) {
    return makeError(ErrorCode::ShapeMismatch, "grid has shape {}; expected [{}, H_out, W_out, 2]",
                     formatSizes(gridT.sizes()), n);
  }
  const std::string mode = ctx.node().attrString("mode", "bilinear");
  const std::string padding = ctx.node().attrString("padding_mode", "zeros");
  const bool alignCorners = ctx.node().attrInt("align_corners", 0) != 0;
  if ((mode != "bilinear" && mode != "nearest" && mode != "bicubic") ||
      (padding != "zeros" && padding != "border" && padding != "reflection")) {
    return makeError(ErrorCode::InvalidArgument, "mode '{}' or padding_mode '{}' is not one GridSample defines", mode,
                     padding);
  }
  TESSEL_RETURN_IF_ERROR(checkWorkSize({n, channels, outH, outW}, "the GridSample output"));
  std::vector<double> x = toDoubles(xt), grid = toDoubles(gridT);
  std::vector<double> y(static_cast<size_t>(n * channels * outH * outW));
  // Maps a normalized coordinate in [-1, 1] to pixels.
  auto unnormalize = [&](double coord, int64_t size) {
    double s = static_cast<double>(size);
    return alignCorners ? (coord + 1) / 2 * (s - 1) : ((coord + 1) * s - 1) / 2;
  };
  auto at = [&](const double *plane, int64_t iy, int64_t ix) {
    return iy >= 0 && iy < height && ix >= 0 && ix < width ? plane[iy * width + ix] : 0.0;
  };
  size_t flat = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      const double *plane = x.data() + (b * channels + c) * height * width;
      for (int64_t oy = 0; oy < outH; ++oy) {
        for (int64_t ox = 0; ox < outW; ++ox) {
          const double *g = grid.data() + ((b * outH + oy) * outW + ox) * 2;
          double px = unnormalize(g[0], width), py = unnormalize(g[1], height);
          double value = 0.0;
          if (mode == "bicubic") {
            // Taps are padded one by one; the fractions come from the unpadded coordinate.
            double x0 = std::floor(px), y0 = std::floor(py);
            std::array<double, 4> wx = cubicWeights(px - x0), wy = cubicWeights(py - y0);
            for (int j = 0; j < 4; ++j) {
              for (int i = 0; i < 4; ++i) {
                double tx = padCoordinate(x0 - 1 + i, width, padding, alignCorners);
                double ty = padCoordinate(y0 - 1 + j, height, padding, alignCorners);
                value += wy[static_cast<size_t>(j)] * wx[static_cast<size_t>(i)] *
                         at(plane, static_cast<int64_t>(ty), static_cast<int64_t>(tx));
              }
            }
          } else {
            px = padCoordinate(px, width, padding, alignCorners);
            py = padCoordinate(py, height, padding, alignCorners);
            if (mode == "nearest") {
              value = at(plane, static_cast<int64_t>(std::nearbyint(py)), static_cast<int64_t>(std::nearbyint(px)));
            } else {
              int64_t x0 = static_cast<int64_t>(std::floor(px)), y0 = static_cast<int64_t>(std::floor(py));
              double fx = px - static_cast<double>(x0), fy = py - static_cast<double>(y0);
              value = (1 - fy) * ((1 - fx) * at(plane, y0, x0) + fx * at(plane, y0, x0 + 1)) +
                      fy * ((1 - fx) * at(plane, y0 + 1, x0) + fx * at(plane, y0 + 1, x0 + 1));
            }
          }
          y[flat++] = value;
        }
      }
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), {n, channels, outH, outW}, y));
  return Status::success();
}

Status refNonMaxSuppression(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 3));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 1, 3));
  const Tensor &boxesT = ctx.tensor(0);
  const Tensor &scoresT = ctx.tensor(1);
  const int64_t batches = boxesT.size(0), numBoxes = boxesT.size(1), classes = scoresT.size(1);
  if (boxesT.size(2) != 4 || scoresT.size(0) != batches || scoresT.size(2) != numBoxes) {
    return makeError(ErrorCode::ShapeMismatch, "boxes {} and scores {}; expected [B, N, 4] and [B, C, N]",
                     formatSizes(boxesT.sizes()), formatSizes(scoresT.sizes()));
  }
  const int64_t maxPerClass = ctx.hasInput(2) && ctx.tensor(2).numel() > 0 ? ctx.tensor(2).scalarAsInt64() : 0;
  const double iouThreshold = ctx.hasInput(3) && ctx.tensor(3).numel() > 0 ? ctx.tensor(3).scalarAsDouble() : 0.0;
  const bool hasScoreThreshold = ctx.hasInput(4) && ctx.tensor(4).numel() > 0;
  const double scoreThreshold = hasScoreThreshold ? ctx.tensor(4).scalarAsDouble() : 0.0;
  const bool centerPointBox = ctx.node().attrInt("center_point_box", 0) != 0;
  std::vector<double> boxes = toDoubles(boxesT), scores = toDoubles(scoresT);
  std::vector<int64_t> selectedTriples;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const double *score = scores.data() + (b * classes + c) * numBoxes;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < numBoxes; ++i) {
        if (!hasScoreThreshold || score[i] > scoreThreshold) order.push_back(i);
      }
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return score[i] > score[j]; });
      std::vector<int64_t> selected;
      for (int64_t candidate : order) {
        if (static_cast<int64_t>(selected.size()) >= maxPerClass) break;
        const double *box = boxes.data() + (b * numBoxes + candidate) * 4;
        bool suppressed = std::any_of(selected.begin(), selected.end(), [&](int64_t kept) {
          return intersectionOverUnion(boxes.data() + (b * numBoxes + kept) * 4, box, centerPointBox) > iouThreshold;
        });
        if (!suppressed) selected.push_back(candidate);
      }
      for (int64_t index : selected) selectedTriples.insert(selectedTriples.end(), {b, c, index});
    }
  }
  const int64_t count = static_cast<int64_t>(selectedTriples.size() / 3);
  ctx.setOutput(0, Tensor::fromVector<int64_t>({count, 3}, selectedTriples));
  return Status::success();
}

}  // namespace tessel::ref
