// Reference kernels of the pools: MaxPool (with its Indices output), AveragePool, LpPool, their
// Global forms, MaxUnpool and MaxRoiPool. Every windowed pool enumerates, once per spatial plane,
// which input elements each output window covers (geometry from nn_common, shared with Conv), then
// reduces each channel plane over those windows in double. MaxRoiPool's windows come from the
// regions of interest instead, binned the way Caffe's ROIPooling (and onnxruntime) bins them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// The input elements one output window covers.
struct Window {
  std::vector<int64_t> offsets;       // Row-major offsets within a plane, of positions inside the input.
  std::vector<int64_t> columnMajor;   // The same positions, column-major (MaxPool storage_order = 1).
  int64_t paddedCount = 0;            // Positions inside the input plus its pads (count_include_pad).
};

/// One Window per output position of a plane, in row-major order.
std::vector<Window> enumerateWindows(const WindowGeometry &g) {
  const size_t rank = g.spatialRank();
  std::vector<Window> windows(static_cast<size_t>(numElements(g.outSizes)));
  std::vector<int64_t> out(rank, 0);
  for (Window &window : windows) {
    std::vector<int64_t> k(rank, 0);
    for (int64_t kFlat = 0; kFlat < numElements(g.kernel); ++kFlat, nextIndex(k, g.kernel)) {
      int64_t rowMajor = 0, columnMajor = 0, columnStride = 1;
      bool inInput = true, inPadded = true;
      for (size_t d = 0; d < rank; ++d) {
        int64_t pos = out[d] * g.strides[d] + k[d] * g.dilations[d] - g.padBegin[d];
        inInput = inInput && pos >= 0 && pos < g.inSizes[d];
        inPadded = inPadded && pos >= -g.padBegin[d] && pos < g.inSizes[d] + g.padEnd[d];
        rowMajor = rowMajor * g.inSizes[d] + pos;
        columnMajor += pos * columnStride;
        columnStride *= g.inSizes[d];
      }
      if (inPadded) ++window.paddedCount;
      if (!inInput) continue;
      window.offsets.push_back(rowMajor);
      window.columnMajor.push_back(columnMajor);
    }
    nextIndex(out, g.outSizes);
  }
  return windows;
}

std::vector<int64_t> pooledSizes(const Tensor &x, const std::vector<int64_t> &spatial) {
  std::vector<int64_t> sizes = {x.size(0), x.size(1)};
  sizes.insert(sizes.end(), spatial.begin(), spatial.end());
  return sizes;
}

/// Checks X is [N, C, spatial...], reads the pool's window geometry (kernel_shape required), and
/// checks that the output fits and that every window sees at least one input element.
Expected<WindowGeometry> readPoolWindow(const KernelContext &ctx, bool ceilMode) {
  const Tensor &x = ctx.tensor(0);
  if (x.rank() < 3) {
    return makeError(ErrorCode::ShapeMismatch, "X has shape {}; expected [N, C, spatial...] with at least 3 dims",
                     formatSizes(x.sizes()));
  }
  std::vector<int64_t> inSpatial(x.sizes().begin() + 2, x.sizes().end());
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, readKernelShape(ctx.node(), inSpatial.size(), {}));
  TESSEL_ASSIGN_OR_RETURN(WindowGeometry g, forwardWindow(ctx.node(), inSpatial, std::move(kernel), ceilMode));
  TESSEL_RETURN_IF_ERROR(checkWorkSize(pooledSizes(x, g.outSizes), "the output"));
  // A window that sees only padding has no value to pool (onnxruntime rejects pads >= kernel).
  for (size_t d = 0; d < g.spatialRank(); ++d) {
    for (int64_t o = 0; o < g.outSizes[d]; ++o) {
      // The first tap at or after input position 0 must exist and lie before the input's end.
      int64_t start = o * g.strides[d] - g.padBegin[d];
      int64_t firstTap = start >= 0 ? 0 : (-start + g.dilations[d] - 1) / g.dilations[d];
      if (firstTap < g.kernel[d] && start + firstTap * g.dilations[d] < g.inSizes[d]) continue;
      return makeError(ErrorCode::InvalidArgument,
                       "axis {}: output position {} covers only padding (pads {}, {}; kernel {}); expected pads "
                       "smaller than the kernel", d + 2, o, g.padBegin[d], g.padEnd[d], g.kernel[d]);
    }
  }
  return g;
}

/// Reduces each (n, c) plane of X over each window with `reduce(values, window, plane index)`,
/// where `values` are the window's input elements.
template <class Reduce>
std::vector<double> poolPlanes(const Tensor &x, const WindowGeometry &g, const std::vector<Window> &windows,
                               Reduce reduce) {
  std::vector<double> in = toDoubles(x);
  const int64_t planes = x.size(0) * x.size(1);
  const int64_t inPlane = numElements(g.inSizes);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(planes) * windows.size());
  std::vector<double> values;
  for (int64_t p = 0; p < planes; ++p) {
    for (const Window &window : windows) {
      values.clear();
      for (int64_t offset : window.offsets) values.push_back(in[static_cast<size_t>(p * inPlane + offset)]);
      out.push_back(reduce(values, window, p));
    }
  }
  return out;
}

/// The p of LpPool and GlobalLpPool.
Expected<double> readP(const KernelContext &ctx) {
  int64_t p = ctx.node().attrInt("p", 2);
  if (p <= 0) return makeError(ErrorCode::InvalidArgument, "p is {}; expected a positive integer", p);
  return static_cast<double>(p);
}

double lpNorm(const std::vector<double> &values, double p) {
  double sum = 0.0;
  for (double v : values) sum += std::pow(std::fabs(v), p);
  return std::pow(sum, 1.0 / p);
}

/// Global pools: one window spanning every spatial element.
template <class Reduce>
Status globalPool(KernelContext &ctx, Reduce reduce) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 3, /*orMore=*/true));
  const Tensor &x = ctx.tensor(0);
  std::vector<double> in = toDoubles(x);
  const int64_t planes = x.size(0) * x.size(1);
  const size_t plane = static_cast<size_t>(x.numel() / std::max<int64_t>(planes, 1));
  std::vector<double> out(static_cast<size_t>(planes));
  for (size_t p = 0; p < out.size(); ++p) {
    out[p] = reduce(std::vector<double>(in.begin() + static_cast<std::ptrdiff_t>(p * plane),
                                        in.begin() + static_cast<std::ptrdiff_t>((p + 1) * plane)));
  }
  ctx.setOutput(0, fromDoubles(x.dtype(), pooledSizes(x, std::vector<int64_t>(x.rank() - 2, 1)), out));
  return Status::success();
}

}  // namespace

Status refMaxPool(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(
      expectDType(ctx, 0, {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::UInt8}));
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(WindowGeometry g, readPoolWindow(ctx, ctx.node().attrInt("ceil_mode", 0) != 0));
  const int64_t storageOrder = ctx.node().attrInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1) {
    return makeError(ErrorCode::InvalidArgument, "storage_order is {}; expected 0 (row major) or 1 (column major)",
                     storageOrder);
  }
  std::vector<Window> windows = enumerateWindows(g);
  const int64_t inPlane = numElements(g.inSizes);
  std::vector<int64_t> indices;
  std::vector<double> y = poolPlanes(x, g, windows, [&](const std::vector<double> &values, const Window &w, int64_t p) {
    double best = -std::numeric_limits<double>::infinity();
    int64_t bestIndex = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] > best || i == 0) {
        best = values[i];
        bestIndex = p * inPlane + (storageOrder == 0 ? w.offsets[i] : w.columnMajor[i]);
      }
    }
    indices.push_back(bestIndex);
    return best;
  });
  std::vector<int64_t> outSizes = pooledSizes(x, g.outSizes);
  ctx.setOutput(0, fromDoubles(x.dtype(), outSizes, y));
  if (ctx.wantsOutput(1)) ctx.setOutput(1, Tensor::fromVector<int64_t>(outSizes, indices));
  return Status::success();
}

Status refAveragePool(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(WindowGeometry g, readPoolWindow(ctx, ctx.node().attrInt("ceil_mode", 0) != 0));
  const bool countPads = ctx.node().attrInt("count_include_pad", 0) != 0;
  std::vector<double> y = poolPlanes(x, g, enumerateWindows(g), [&](const std::vector<double> &values, const Window &w,
                                                                   int64_t) {
    double sum = 0.0;
    for (double v : values) sum += v;
    int64_t count = countPads ? w.paddedCount : static_cast<int64_t>(values.size());
    return count == 0 ? 0.0 : sum / static_cast<double>(count);
  });
  ctx.setOutput(0, fromDoubles(x.dtype(), pooledSizes(x, g.outSizes), y));
  return Status::success();
}

Status refLpPool(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(double p, readP(ctx));
  TESSEL_ASSIGN_OR_RETURN(WindowGeometry g, readPoolWindow(ctx, ctx.node().attrInt("ceil_mode", 0) != 0));
  std::vector<double> y = poolPlanes(x, g, enumerateWindows(g), [&](const std::vector<double> &values, const Window &,
                                                                   int64_t) { return lpNorm(values, p); });
  ctx.setOutput(0, fromDoubles(x.dtype(), pooledSizes(x, g.outSizes), y));
  return Status::success();
}

Status refGlobalAveragePool(KernelContext &ctx) {
  return globalPool(ctx, [](const std::vector<double> &values) {
    double sum = 0.0;
    for (double v : values) sum += v;
    return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
  });
}

Status refGlobalMaxPool(KernelContext &ctx) {
  return globalPool(ctx, [](const std::vector<double> &values) {
    double best = -std::numeric_limits<double>::infinity();
    for (double v : values) best = std::max(best, v);
    return best;
  });
}

Status refGlobalLpPool(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(double p, readP(ctx));
  return globalPool(ctx, [p](const std::vector<double> &values) { return lpNorm(values, p); });
}

Status refMaxUnpool(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 1, {DType::Int64}));
  const Tensor &x = ctx.tensor(0);
  const Tensor &indices = ctx.tensor(1);
  if (indices.sizes() != x.sizes()) {
    return makeError(ErrorCode::ShapeMismatch, "I has shape {}; expected X's shape {}", formatSizes(indices.sizes()),
                     formatSizes(x.sizes()));
  }
  // Unpooling inverts the pool's size formula, which is what a transposed window computes:
  // (in - 1) * stride + kernel - pads. Indices address that default layout.
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 3, /*orMore=*/true));
  std::vector<int64_t> inSpatial(x.sizes().begin() + 2, x.sizes().end());
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, readKernelShape(ctx.node(), inSpatial.size(), {}));
  TESSEL_ASSIGN_OR_RETURN(WindowGeometry g, transposedWindow(ctx.node(), inSpatial, std::move(kernel)));
  const std::vector<int64_t> defaultSizes = pooledSizes(x, g.outSizes);
  std::vector<int64_t> outSizes = defaultSizes;
  if (ctx.hasInput(2)) {
    outSizes = ctx.tensor(2).toInt64Vector();
    bool fits = outSizes.size() == x.rank() && outSizes[0] == x.size(0) && outSizes[1] == x.size(1);
    for (size_t d = 2; fits && d < outSizes.size(); ++d) fits = outSizes[d] >= defaultSizes[d];
    if (!fits) {
      return makeError(ErrorCode::ShapeMismatch, "output_shape is {}; expected {} values, X's N and C, and spatial "
                       "sizes at least the unpooled {}", formatSizes(outSizes), x.rank(), formatSizes(defaultSizes));
    }
  }
  TESSEL_RETURN_IF_ERROR(checkWorkSize(outSizes, "output_shape"));
  // A larger output_shape keeps each element's coordinates and leaves the extra positions zero.
  std::vector<double> in = toDoubles(x);
  std::vector<double> out(static_cast<size_t>(numElements(outSizes)), 0.0);
  const std::vector<int64_t> defaultStrides = stridesOf(defaultSizes);
  const std::vector<int64_t> outStrides = stridesOf(outSizes);
  const int64_t *index = indices.data<int64_t>();
  for (size_t i = 0; i < in.size(); ++i) {
    if (index[i] < 0 || index[i] >= numElements(defaultSizes)) {
      return makeError(ErrorCode::InvalidArgument, "I[{}] is {}; expected an index in [0, {}) of the unpooled {}", i,
                       index[i], numElements(defaultSizes), formatSizes(defaultSizes));
    }
    int64_t rest = index[i], target = 0;
    for (size_t d = 0; d < defaultSizes.size(); ++d) {
      target += rest / defaultStrides[d] * outStrides[d];
      rest %= defaultStrides[d];
    }
    out[static_cast<size_t>(target)] = in[i];
  }
  ctx.setOutput(0, fromDoubles(x.dtype(), outSizes, out));
  return Status::success();
}

namespace {

/// A region of interest in feature-map cells, corners included, as onnxruntime reads it.
struct RoiCells {
  int64_t batch = 0;
  int64_t startW = 0, startH = 0, endW = 0, endH = 0;
};

/// Reads row `r` of MaxRoiPool's rois ([batch, x1, y1, x2, y2]): the batch index truncates, each
/// corner is round-half-away(coordinate * spatial_scale), the product taken in X's precision
/// (float for float16 and float inputs) as onnxruntime does.
Expected<RoiCells> readRoi(const std::vector<double> &rois, int64_t r, double scale, bool doubleProducts,
                           int64_t batchSize) {
  const double *row = rois.data() + r * 5;
  // Far beyond any feature map, and small enough that bin arithmetic cannot overflow int64.
  constexpr double kLimit = 1073741824.0;
  if (!(row[0] > -1.0 && row[0] < static_cast<double>(batchSize))) {
    return makeError(ErrorCode::InvalidArgument, "rois[{}] has batch index {}; expected [0, {})", r, row[0],
                     batchSize);
  }
  RoiCells roi;
  roi.batch = static_cast<int64_t>(row[0]);
  int64_t *corners[4] = {&roi.startW, &roi.startH, &roi.endW, &roi.endH};
  for (int i = 0; i < 4; ++i) {
    double scaled = row[i + 1] * scale;
    if (!doubleProducts) scaled = static_cast<float>(scaled);
    scaled = std::round(scaled);
    if (!(std::fabs(scaled) <= kLimit)) {
      return makeError(ErrorCode::InvalidArgument, "rois[{}] coordinate {} is {} after spatial_scale; expected a "
                       "finite value within +-2^30", r, i + 1, scaled);
    }
    *corners[i] = static_cast<int64_t>(scaled);
  }
  return roi;
}

}  // namespace

/// MaxRoiPool: for each roi, a pooled_shape grid of bins over the roi's cells, each the max of the
/// input cells it covers. Bin ph spans rows [floor(ph * h / PH), ceil((ph + 1) * h / PH)) of an roi
/// h cells high (computed exactly in integers; onnxruntime uses float), clipped to the input; an
/// empty bin is 0. A malformed roi (end before start) counts as one cell.
Status refMaxRoiPool(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 4));
  const Tensor &xt = ctx.tensor(0);
  const Tensor &roisT = ctx.tensor(1);
  if (roisT.rank() != 2 || roisT.size(1) != 5) {
    return makeError(ErrorCode::ShapeMismatch, "rois has shape {}; expected [num_rois, 5]", formatSizes(roisT.sizes()));
  }
  const std::vector<int64_t> pooled = ctx.node().attrInts("pooled_shape");
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0) {
    return makeError(ErrorCode::InvalidArgument, "pooled_shape is {}; expected two positive values",
                     formatSizes(pooled));
  }
  const double scale = ctx.node().attrFloat("spatial_scale", 1.0f);
  const int64_t numRois = roisT.size(0), channels = xt.size(1), height = xt.size(2), width = xt.size(3);
  const int64_t pooledH = pooled[0], pooledW = pooled[1];
  const std::vector<int64_t> outSizes = {numRois, channels, pooledH, pooledW};
  TESSEL_RETURN_IF_ERROR(checkWorkSize(outSizes, "the MaxRoiPool output"));
  const std::vector<double> x = toDoubles(xt), rois = toDoubles(roisT);
  std::vector<double> y;
  y.reserve(static_cast<size_t>(numElements(outSizes)));
  for (int64_t r = 0; r < numRois; ++r) {
    TESSEL_ASSIGN_OR_RETURN(RoiCells roi,
                            readRoi(rois, r, scale, /*doubleProducts=*/xt.dtype() == DType::Float64, xt.size(0)));
    const int64_t roiH = std::max<int64_t>(roi.endH - roi.startH + 1, 1);
    const int64_t roiW = std::max<int64_t>(roi.endW - roi.startW + 1, 1);
    for (int64_t c = 0; c < channels; ++c) {
      const double *plane = x.data() + (roi.batch * channels + c) * height * width;
      for (int64_t ph = 0; ph < pooledH; ++ph) {
        const int64_t hStart = std::clamp(roi.startH + ph * roiH / pooledH, int64_t{0}, height);
        const int64_t hEnd = std::clamp(roi.startH + ((ph + 1) * roiH + pooledH - 1) / pooledH, int64_t{0}, height);
        for (int64_t pw = 0; pw < pooledW; ++pw) {
          const int64_t wStart = std::clamp(roi.startW + pw * roiW / pooledW, int64_t{0}, width);
          const int64_t wEnd = std::clamp(roi.startW + ((pw + 1) * roiW + pooledW - 1) / pooledW, int64_t{0}, width);
          double best = hEnd > hStart && wEnd > wStart ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t h = hStart; h < hEnd; ++h) {
            for (int64_t w = wStart; w < wEnd; ++w) best = std::max(best, plane[h * width + w]);
          }
          y.push_back(best);
        }
      }
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), outSizes, y));
  return Status::success();
}

}  // namespace tessel::ref
