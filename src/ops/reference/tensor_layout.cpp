// Reference kernels of the tensor family that move whole slabs of elements around: Transpose,
// Concat, Split, Slice, Tile, Pad, CenterCropPad, DepthToSpace, SpaceToDepth, Trilu and ReverseSequence. Most
// build an index map (output element -> input element) and let takeElements copy by dtype size.
#include <algorithm>
#include <numeric>

#include "ops/slice_geometry.h"
#include "ops/reference/shape_rules.h"
#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// Index map of a strided view: output element `index` reads input element
/// base + sum(index[a] * strides[a]) (strides in elements, possibly negative).
std::vector<int64_t> stridedMap(const std::vector<int64_t> &outSizes, int64_t base,
                                const std::vector<int64_t> &strides) {
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(numElements(outSizes)));
  forEachIndex(outSizes, [&](const std::vector<int64_t> &index) {
    int64_t flat = base;
    for (size_t a = 0; a < index.size(); ++a) flat += index[a] * strides[a];
    map.push_back(flat);
  });
  return map;
}

/// The fill element of constant Pad: the constant_value input (opset 11+) or the `value`
/// attribute converted to the data's dtype; an undefined tensor means zero.
Expected<Tensor> padFillValue(const KernelContext &ctx, const Tensor &x) {
  if (ctx.opset() >= 11) {
    if (!ctx.hasInput(2)) return Tensor();
    const Tensor &value = ctx.tensor(2);
    if (value.dtype() != x.dtype() || value.numel() != 1) {
      return makeError(ErrorCode::TypeMismatch, "constant_value must be one {} element; got {}{}",
                       dtypeName(x.dtype()), dtypeName(value.dtype()), formatSizes(value.sizes()));
    }
    return value;
  }
  const double value = ctx.node().attrFloat("value", 0.0f);
  Tensor fill(x.dtype(), {});
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) fill.data<T>()[0] = fromDouble<T>(value);
  });
  return fill;
}

/// Where padded coordinate `i` (already shifted by the begin pad) reads from an axis of size n.
int64_t padSourceIndex(int64_t i, int64_t n, const std::string &mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  if (n == 1) return 0;  // reflect
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

}  // namespace

Status refTranspose(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const size_t rank = x.rank();
  std::vector<int64_t> perm = ctx.node().attrInts("perm");
  if (perm.empty()) {
    perm.resize(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  }
  if (perm.size() != rank) {
    return makeError(ErrorCode::InvalidArgument, "perm has {} axes; input has {}", perm.size(), rank);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int64_t>(i)) {
      return makeError(ErrorCode::InvalidArgument, "perm {} is not a permutation of the {} axes", formatSizes(perm),
                       rank);
    }
  }
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  std::vector<int64_t> outSizes(rank);
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    outSizes[i] = x.size(static_cast<size_t>(perm[i]));
    strides[i] = inStrides[static_cast<size_t>(perm[i])];
  }
  ctx.setOutput(0, takeElements(x, outSizes, stridedMap(outSizes, /*base=*/0, strides)));
  return Status::success();
}

Status refConcat(KernelContext &ctx) {
  if (!ctx.hasInput(0)) return makeError(ErrorCode::InvalidArgument, "Concat needs at least one input");
  const Tensor &first = ctx.tensor(0);
  const auto rank = static_cast<int64_t>(first.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, readAxisAttr(ctx, first.rank(), ctx.opset() < 4 ? 1 : 0));
  std::vector<int64_t> outSizes = first.sizes();
  outSizes[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Tensor &t = ctx.tensor(i);
    TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, i));
    bool match = t.rank() == first.rank();
    for (int64_t a = 0; match && a < rank; ++a) {
      match = a == axis || t.size(static_cast<size_t>(a)) == first.size(static_cast<size_t>(a));
    }
    if (!match) {
      return makeError(ErrorCode::ShapeMismatch,
                       "input {} has shape {}; input 0 has {} (they may differ only on axis {})", i,
                       formatSizes(t.sizes()), formatSizes(first.sizes()), axis);
    }
    outSizes[static_cast<size_t>(axis)] += t.size(static_cast<size_t>(axis));
  }
  Tensor out(first.dtype(), outSizes);
  const int64_t outer = numElements({first.sizes().begin(), first.sizes().begin() + axis});
  const int64_t inner = numElements({first.sizes().begin() + axis + 1, first.sizes().end()});
  const int64_t outRow = outSizes[static_cast<size_t>(axis)] * inner;
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Tensor &t = ctx.tensor(i);
    const int64_t row = t.size(static_cast<size_t>(axis)) * inner;
    ElementCopier copy(t, out);
    for (int64_t o = 0; o < outer; ++o) copy.copyRun(o * outRow + offset, o * row, row);
    offset += row;
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Expected<std::vector<int64_t>> splitIntoChunks(int64_t size, int64_t parts) {
  if (parts <= 0) return makeError(ErrorCode::InvalidArgument, "num_outputs must be positive; got {}", parts);
  const int64_t chunk = (size + parts - 1) / parts;
  const int64_t last = size - chunk * (parts - 1);
  if (last < 0) {
    return makeError(ErrorCode::ShapeMismatch, "an axis of size {} does not split into {} chunks of {}", size, parts,
                     chunk);
  }
  std::vector<int64_t> sizes(static_cast<size_t>(parts), chunk);
  sizes.back() = last;
  return sizes;
}

Status refSplit(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, readAxisAttr(ctx, x.rank(), 0));
  const int64_t dim = x.size(static_cast<size_t>(axis));
  const auto parts = static_cast<int64_t>(ctx.numOutputs());
  std::vector<int64_t> split;
  if (ctx.opset() >= 13 || (ctx.opset() < 2 && ctx.hasInput(1))) {
    if (ctx.hasInput(1)) {
      TESSEL_ASSIGN_OR_RETURN(split, readIntInput(ctx, 1, "split"));
    }
  } else {
    split = ctx.node().attrInts("split");
  }
  if (ctx.opset() >= 18 && ctx.hasInput(1) && ctx.node().hasAttr("num_outputs")) {
    return makeError(ErrorCode::InvalidModel, "Split takes the split input or num_outputs, not both");
  }
  if (split.empty() && ctx.opset() >= 18 && ctx.node().hasAttr("num_outputs")) {
    if (ctx.node().attrInt("num_outputs", 0) != parts) {
      return makeError(ErrorCode::InvalidArgument, "num_outputs is {} but the node has {} outputs",
                       ctx.node().attrInt("num_outputs", 0), parts);
    }
    TESSEL_ASSIGN_OR_RETURN(split, splitIntoChunks(dim, parts));
  }
  if (split.empty()) {
    if (parts == 0 || dim % parts != 0) {
      return makeError(ErrorCode::ShapeMismatch, "axis {} of size {} does not split into {} equal parts", axis, dim,
                       parts);
    }
    split.assign(static_cast<size_t>(parts), dim / parts);
  }
  if (static_cast<int64_t>(split.size()) != parts) {
    return makeError(ErrorCode::InvalidArgument, "split has {} values for {} outputs", split.size(), parts);
  }
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0 || s > dim) {
      return makeError(ErrorCode::InvalidArgument, "split {} has a part outside [0, {}]", formatSizes(split), dim);
    }
    total += s;
  }
  if (total != dim) {
    return makeError(ErrorCode::ShapeMismatch, "split {} sums to {}; axis {} has size {}", formatSizes(split), total,
                     axis, dim);
  }
  const int64_t outer = numElements({x.sizes().begin(), x.sizes().begin() + axis});
  const int64_t inner = numElements({x.sizes().begin() + axis + 1, x.sizes().end()});
  int64_t offset = 0;
  for (size_t p = 0; p < split.size(); ++p) {
    std::vector<int64_t> sizes = x.sizes();
    sizes[static_cast<size_t>(axis)] = split[p];
    Tensor out(x.dtype(), sizes);
    ElementCopier copy(x, out);
    const int64_t row = split[p] * inner;
    for (int64_t o = 0; o < outer; ++o) copy.copyRun(o * row, o * dim * inner + offset, row);
    offset += row;
    ctx.setOutput(p, std::move(out));
  }
  return Status::success();
}

Status refSlice(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.node().attrInts("starts");
    ends = ctx.node().attrInts("ends");
    axes = ctx.node().attrInts("axes");
  } else {
    TESSEL_ASSIGN_OR_RETURN(starts, readIntInput(ctx, 1, "starts"));
    TESSEL_ASSIGN_OR_RETURN(ends, readIntInput(ctx, 2, "ends"));
    if (ctx.hasInput(3)) {
      TESSEL_ASSIGN_OR_RETURN(axes, readIntInput(ctx, 3, "axes"));
    }
    if (ctx.hasInput(4)) {
      TESSEL_ASSIGN_OR_RETURN(steps, readIntInput(ctx, 4, "steps"));
    }
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<AxisSlice> slices, sliceAxes(x.sizes(), starts, ends, axes, steps));
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  std::vector<int64_t> strides = inStrides, outSizes = x.sizes();
  int64_t base = 0;
  for (size_t a = 0; a < slices.size(); ++a) {
    outSizes[a] = slices[a].size;
    base += slices[a].start * inStrides[a];
    strides[a] = slices[a].step * inStrides[a];
  }
  ctx.setOutput(0, takeElements(x, outSizes, stridedMap(outSizes, base, strides)));
  return Status::success();
}

Status refTile(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  std::vector<int64_t> repeats;
  if (ctx.opset() < 6) {
    // Tile-1: a scalar count of tiles along one axis.
    if (!ctx.hasInput(1) || !ctx.hasInput(2)) {
      return makeError(ErrorCode::InvalidArgument, "Tile-1 needs tiles and axis");
    }
    repeats.assign(x.rank(), 1);
    const int64_t rank = static_cast<int64_t>(x.rank());
    TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeExistingAxis(ctx.tensor(2).scalarAsInt64(), rank));
    repeats[static_cast<size_t>(axis)] = ctx.tensor(1).scalarAsInt64();
  } else {
    TESSEL_ASSIGN_OR_RETURN(repeats, readIntInput(ctx, 1, "repeats"));
  }
  if (repeats.size() != x.rank()) {
    return makeError(ErrorCode::InvalidArgument, "repeats has {} values for a tensor of rank {}", repeats.size(),
                     x.rank());
  }
  std::vector<int64_t> outSizes(x.rank());
  for (size_t a = 0; a < x.rank(); ++a) {
    if (repeats[a] < 0) {
      return makeError(ErrorCode::InvalidArgument, "repeats {} has a negative value", formatSizes(repeats));
    }
    if (x.size(a) != 0 && repeats[a] > (int64_t{1} << 40) / x.size(a)) {
      return makeError(ErrorCode::ShapeMismatch, "repeats {} of {} is too large", formatSizes(repeats),
                       formatSizes(x.sizes()));
    }
    outSizes[a] = x.size(a) * repeats[a];
  }
  TESSEL_RETURN_IF_ERROR(checkOutputSize(x.dtype(), outSizes, "Tile output"));
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(numElements(outSizes)));
  forEachIndex(outSizes, [&](const std::vector<int64_t> &index) {
    int64_t flat = 0;
    for (size_t a = 0; a < index.size(); ++a) flat += index[a] % x.size(a) * inStrides[a];
    map.push_back(flat);
  });
  ctx.setOutput(0, takeElements(x, outSizes, map));
  return Status::success();
}

namespace {

/// Pad-18 with `axes` (input 3): pads holds begins then ends of those axes only; the others get 0.
Expected<std::vector<int64_t>> padsForEveryAxis(const KernelContext &ctx, size_t rank) {
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> given, readIntInput(ctx, 1, "pads"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, readIntInput(ctx, 3, "axes"));
  if (given.size() != 2 * axes.size()) {
    return makeError(ErrorCode::InvalidArgument, "pads has {} values; expected {} for the {} axes {}", given.size(),
                     2 * axes.size(), axes.size(), formatSizes(axes));
  }
  std::vector<int64_t> pads(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < axes.size(); ++k) {
    TESSEL_ASSIGN_OR_RETURN(int64_t a, normalizeAxis(axes[k], static_cast<int64_t>(rank), "axes"));
    if (seen[static_cast<size_t>(a)]) {
      return makeError(ErrorCode::InvalidArgument, "axes {} name axis {} twice", formatSizes(axes), a);
    }
    seen[static_cast<size_t>(a)] = true;
    pads[static_cast<size_t>(a)] = given[k];
    pads[static_cast<size_t>(a) + rank] = given[k + axes.size()];
  }
  return pads;
}

}  // namespace

Status refPad(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const size_t rank = x.rank();
  const std::string mode = ctx.node().attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return makeError(ErrorCode::InvalidArgument, "unknown Pad mode '{}'", mode);
  }
  std::vector<int64_t> pads;
  if (ctx.opset() >= 18 && ctx.hasInput(3)) {
    TESSEL_ASSIGN_OR_RETURN(pads, padsForEveryAxis(ctx, rank));
  } else if (ctx.opset() >= 11) {
    TESSEL_ASSIGN_OR_RETURN(pads, readIntInput(ctx, 1, "pads"));
  } else {
    pads = ctx.node().attrInts(ctx.opset() < 2 ? "paddings" : "pads");
  }
  if (pads.size() != 2 * rank) {
    return makeError(ErrorCode::InvalidArgument, "pads has {} values; expected {} for rank {}", pads.size(), 2 * rank,
                     rank);
  }
  for (int64_t pad : pads) {
    if (pad > static_cast<int64_t>(kMaxKernelOutputBytes) || pad < -static_cast<int64_t>(kMaxKernelOutputBytes)) {
      return makeError(ErrorCode::InvalidArgument, "pad {} is too large", pad);
    }
  }
  std::vector<int64_t> outSizes(rank);
  for (size_t a = 0; a < rank; ++a) {
    outSizes[a] = x.size(a) + pads[a] + pads[a + rank];
    if (outSizes[a] < 0) {
      return makeError(ErrorCode::ShapeMismatch, "pads {} make axis {} of {} negative", formatSizes(pads), a,
                       formatSizes(x.sizes()));
    }
    if (mode != "constant" && x.size(a) == 0 && outSizes[a] > 0) {
      return makeError(ErrorCode::ShapeMismatch, "{} padding cannot extend the empty axis {}", mode, a);
    }
  }
  TESSEL_RETURN_IF_ERROR(checkOutputSize(x.dtype(), outSizes, "Pad output"));
  TESSEL_ASSIGN_OR_RETURN(Tensor fill, padFillValue(ctx, x));
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(numElements(outSizes)));
  forEachIndex(outSizes, [&](const std::vector<int64_t> &index) {
    int64_t flat = 0;
    for (size_t a = 0; a < rank && flat >= 0; ++a) {
      const int64_t source = padSourceIndex(index[a] - pads[a], x.size(a), mode);
      flat = source < 0 ? -1 : flat + source * inStrides[a];
    }
    map.push_back(flat);
  });
  ctx.setOutput(0, takeElements(x, outSizes, map, fill.defined() ? &fill : nullptr));
  return Status::success();
}

/// CenterCropPad (opset 18): each named axis cropped or zero-padded to its target size about the
/// centre; an odd difference leaves the extra element at the end (as ONNX's function body slices
/// and pads).
Status refCenterCropPad(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const auto rank = static_cast<int64_t>(x.rank());
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> target, readIntInput(ctx, 1, "shape"));
  std::vector<int64_t> axes = ctx.node().attrInts("axes", {});
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (target.size() != axes.size()) {
    return makeError(ErrorCode::InvalidArgument, "shape has {} values for the {} axes {}", target.size(), axes.size(),
                     formatSizes(axes));
  }
  std::vector<int64_t> outSizes = x.sizes();
  std::vector<int64_t> shift(x.rank(), 0);  // Output index + shift = input index.
  std::vector<bool> seen(x.rank(), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    TESSEL_ASSIGN_OR_RETURN(int64_t a, normalizeAxis(axes[k], rank, "axes"));
    const auto axis = static_cast<size_t>(a);
    if (seen[axis]) return makeError(ErrorCode::InvalidArgument, "axes {} name axis {} twice", formatSizes(axes), a);
    seen[axis] = true;
    if (target[k] < 0) return makeError(ErrorCode::InvalidArgument, "shape {} has a negative size", formatSizes(target));
    const int64_t in = x.size(axis);
    shift[axis] = in >= target[k] ? (in - target[k]) / 2 : -((target[k] - in) / 2);
    outSizes[axis] = target[k];
  }
  TESSEL_RETURN_IF_ERROR(checkOutputSize(x.dtype(), outSizes, "CenterCropPad output"));
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(numElements(outSizes)));
  forEachIndex(outSizes, [&](const std::vector<int64_t> &index) {
    int64_t flat = 0;
    for (size_t a = 0; a < x.rank() && flat >= 0; ++a) {
      const int64_t source = index[a] + shift[a];
      flat = source < 0 || source >= x.size(a) ? -1 : flat + source * inStrides[a];
    }
    map.push_back(flat);
  });
  ctx.setOutput(0, takeElements(x, outSizes, map, nullptr));
  return Status::success();
}

/// DepthToSpace (`toSpace`) and SpaceToDepth share one mapping between the depth layout
/// [N, C*b*b, H, W] and the space layout [N, C, H*b, W*b].
Status blockRearrange(KernelContext &ctx, bool toSpace) {
  const Tensor &x = ctx.tensor(0);
  const int64_t b = ctx.node().attrInt("blocksize", 0);
  if (x.rank() != 4) return makeError(ErrorCode::ShapeMismatch, "input must be 4-D; got {}", formatSizes(x.sizes()));
  if (b <= 0 || b > (int64_t{1} << 20)) {
    return makeError(ErrorCode::InvalidArgument, "blocksize must be in [1, 2^20]; got {}", b);
  }
  const bool crd = toSpace && ctx.node().attrString("mode", "DCR") == "CRD";
  const int64_t n = x.size(0);
  int64_t c, h, w;  // The space-layout channel count and the depth-layout spatial sizes.
  if (toSpace) {
    if (x.size(1) % (b * b) != 0) {
      return makeError(ErrorCode::ShapeMismatch, "channels {} are not divisible by blocksize^2 = {}", x.size(1), b * b);
    }
    c = x.size(1) / (b * b), h = x.size(2), w = x.size(3);
  } else {
    if (x.size(2) % b != 0 || x.size(3) % b != 0) {
      return makeError(ErrorCode::ShapeMismatch, "spatial sizes {}x{} are not divisible by blocksize {}", x.size(2),
                       x.size(3), b);
    }
    c = x.size(1), h = x.size(2) / b, w = x.size(3) / b;
  }
  const std::vector<int64_t> spaceSizes = {n, c, h * b, w * b};
  const std::vector<int64_t> depthSizes = {n, c * b * b, h, w};
  const std::vector<int64_t> outSizes = toSpace ? spaceSizes : depthSizes;
  std::vector<int64_t> map(static_cast<size_t>(numElements(outSizes)));
  forEachIndex({n, c, h, b, w, b}, [&](const std::vector<int64_t> &i) {
    const int64_t spaceFlat = ((i[0] * c + i[1]) * h * b + i[2] * b + i[3]) * w * b + i[4] * b + i[5];
    const int64_t depthChannel = crd ? (i[1] * b + i[3]) * b + i[5] : (i[3] * b + i[5]) * c + i[1];
    const int64_t depthFlat = ((i[0] * c * b * b + depthChannel) * h + i[2]) * w + i[4];
    map[static_cast<size_t>(toSpace ? spaceFlat : depthFlat)] = toSpace ? depthFlat : spaceFlat;
  });
  ctx.setOutput(0, takeElements(x, outSizes, map));
  return Status::success();
}

Status refDepthToSpace(KernelContext &ctx) { return blockRearrange(ctx, /*toSpace=*/true); }

Status refSpaceToDepth(KernelContext &ctx) { return blockRearrange(ctx, /*toSpace=*/false); }

Status refTrilu(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (x.rank() < 2) return makeError(ErrorCode::ShapeMismatch, "Trilu needs rank >= 2; got {}", formatSizes(x.sizes()));
  const int64_t k = ctx.hasInput(1) ? ctx.tensor(1).scalarAsInt64() : 0;
  const bool upper = ctx.node().attrInt("upper", 1) != 0;
  const int64_t rows = x.size(x.rank() - 2);
  const int64_t cols = x.size(x.rank() - 1);
  std::vector<int64_t> map(static_cast<size_t>(x.numel()));
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    const int64_t j = flat % cols;
    const int64_t i = flat / cols % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    map[static_cast<size_t>(flat)] = keep ? flat : -1;
  }
  ctx.setOutput(0, takeElements(x, x.sizes(), map));
  return Status::success();
}

Status refReverseSequence(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const int64_t batchAxis = ctx.node().attrInt("batch_axis", 1);
  const int64_t timeAxis = ctx.node().attrInt("time_axis", 0);
  if (x.rank() < 2 || batchAxis == timeAxis || batchAxis < 0 || batchAxis > 1 || timeAxis < 0 || timeAxis > 1) {
    return makeError(ErrorCode::InvalidArgument, "batch_axis {} and time_axis {} must be 0 and 1 of a rank >= 2 input",
                     batchAxis, timeAxis);
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, readIntInput(ctx, 1, "sequence_lens"));
  const int64_t batch = x.size(static_cast<size_t>(batchAxis));
  const int64_t time = x.size(static_cast<size_t>(timeAxis));
  if (static_cast<int64_t>(lens.size()) != batch) {
    return makeError(ErrorCode::ShapeMismatch, "sequence_lens has {} values for batch size {}", lens.size(), batch);
  }
  for (int64_t len : lens) {
    if (len < 0 || len > time) {
      return makeError(ErrorCode::InvalidArgument, "sequence length {} is outside [0, {}]", len, time);
    }
  }
  const std::vector<int64_t> strides = stridesOf(x.sizes());
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(x.numel()));
  forEachIndex(x.sizes(), [&](const std::vector<int64_t> &index) {
    const int64_t b = index[static_cast<size_t>(batchAxis)];
    const int64_t t = index[static_cast<size_t>(timeAxis)];
    int64_t flat = 0;
    for (size_t a = 0; a < index.size(); ++a) flat += index[a] * strides[a];
    const int64_t len = lens[static_cast<size_t>(b)];
    if (t < len) flat += (len - 1 - 2 * t) * strides[static_cast<size_t>(timeAxis)];
    map.push_back(flat);
  });
  ctx.setOutput(0, takeElements(x, x.sizes(), map));
  return Status::success();
}

}  // namespace tessel::ref
