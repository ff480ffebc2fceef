// Reference kernels of the tensor family that order or accumulate along an axis: TopK, Unique
// and CumSum. Comparisons happen in each element's own type (int64 keeps every bit, strings
// compare lexicographically); ties keep the lower index first, as ONNX requires.
#include <algorithm>
#include <numeric>

#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// True for element types with a total order the kernels below can sort by.
template <class T>
constexpr bool kIsOrdered = !std::is_same_v<T, std::complex<float>> && !std::is_same_v<T, std::complex<double>>;

/// a < b for an ordered element type; narrow floats compare as doubles.
template <class T>
bool lessThan(const T &a, const T &b) {
  if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    return a < b;
  } else {
    return toDouble(a) < toDouble(b);
  }
}

int64_t product(const std::vector<int64_t> &sizes, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= sizes[i];
  return p;
}

}  // namespace

Status refTopK(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  int64_t k = 0;
  if (ctx.opset() < 10) {
    k = ctx.node().attrInt("k", -1);
  } else {
    TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> kValues, readIntInput(ctx, 1, "k"));
    if (kValues.size() != 1) {
      return makeError(ErrorCode::ShapeMismatch, "k must hold one value; got {}", kValues.size());
    }
    k = kValues[0];
  }
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeExistingAxis(ctx.node().attrInt("axis", -1),
                                                              static_cast<int64_t>(x.rank())));
  const auto a = static_cast<size_t>(axis);
  const int64_t dim = x.size(a);
  if (k < 0 || k > dim) {
    return makeError(ErrorCode::InvalidArgument, "k {} is outside [0, {}] for axis {}", k, dim, axis);
  }
  const bool largest = ctx.node().attrInt("largest", 1) != 0;
  std::vector<int64_t> outSizes = x.sizes();
  outSizes[a] = k;
  const int64_t outer = product(x.sizes(), 0, a);
  const int64_t inner = product(x.sizes(), a + 1, x.rank());
  Tensor indices(DType::Int64, outSizes);
  int64_t *outIndex = indices.data<int64_t>();
  std::vector<int64_t> map(static_cast<size_t>(indices.numel()));
  bool ordered = false;
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsOrdered<T>) {
      ordered = true;
      const T *p = x.data<T>();
      std::vector<int64_t> order(static_cast<size_t>(dim));
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t j) -> const T & { return p[(o * dim + j) * inner + i]; };
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) {
            return largest ? lessThan(at(r), at(l)) : lessThan(at(l), at(r));
          });
          for (int64_t j = 0; j < k; ++j) {
            const int64_t out = (o * k + j) * inner + i;
            outIndex[out] = order[static_cast<size_t>(j)];
            map[static_cast<size_t>(out)] = (o * dim + order[static_cast<size_t>(j)]) * inner + i;
          }
        }
      }
    }
  });
  if (!ordered) return makeError(ErrorCode::TypeMismatch, "TopK cannot order {}", dtypeName(x.dtype()));
  ctx.setOutput(0, takeElements(x, outSizes, map));
  ctx.setOutput(1, std::move(indices));
  return Status::success();
}

Status refUnique(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const bool sorted = ctx.node().attrInt("sorted", 1) != 0;
  const bool hasAxis = ctx.node().hasAttr("axis");
  // An "item" is one element (no axis) or one slice along the axis; items are what get compared.
  const Tensor input = hasAxis ? x : x.reshaped({x.numel()});
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeExistingAxis(ctx.node().attrInt("axis", 0),
                                                              static_cast<int64_t>(input.rank())));
  const auto a = static_cast<size_t>(axis);
  const int64_t items = input.size(a);
  const int64_t outer = product(input.sizes(), 0, a);
  const int64_t inner = product(input.sizes(), a + 1, input.rank());
  // Items sorted by value, equal items by index; then grouped.
  std::vector<int64_t> order(static_cast<size_t>(items));
  std::iota(order.begin(), order.end(), 0);
  std::vector<bool> startsGroup(static_cast<size_t>(items), true);
  bool ordered = false;
  visitDType(input.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsOrdered<T>) {
      ordered = true;
      const T *p = input.data<T>();
      // Lexicographic comparison of two items: -1, 0 or 1.
      auto compare = [&](int64_t l, int64_t r) {
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            const T &lv = p[(o * items + l) * inner + i];
            const T &rv = p[(o * items + r) * inner + i];
            if (lessThan(lv, rv)) return -1;
            if (lessThan(rv, lv)) return 1;
          }
        }
        return 0;
      };
      std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return compare(l, r) < 0; });
      for (size_t s = 1; s < order.size(); ++s) startsGroup[s] = compare(order[s - 1], order[s]) != 0;
    }
  });
  if (!ordered) return makeError(ErrorCode::TypeMismatch, "Unique cannot order {}", dtypeName(x.dtype()));
  // Groups in sorted order: first occurrence, count, and each item's group.
  std::vector<int64_t> first, counts, groupOf(static_cast<size_t>(items));
  for (size_t s = 0; s < order.size(); ++s) {
    if (startsGroup[s]) {
      first.push_back(order[s]);
      counts.push_back(0);
    }
    ++counts.back();
    groupOf[static_cast<size_t>(order[s])] = static_cast<int64_t>(first.size()) - 1;
  }
  const auto unique = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank(static_cast<size_t>(unique));  // Output position of each group.
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> byFirst(static_cast<size_t>(unique));
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(), [&](int64_t l, int64_t r) { return first[l] < first[r]; });
    for (int64_t pos = 0; pos < unique; ++pos) rank[static_cast<size_t>(byFirst[static_cast<size_t>(pos)])] = pos;
  }
  std::vector<int64_t> outFirst(static_cast<size_t>(unique)), outCounts(static_cast<size_t>(unique));
  for (int64_t g = 0; g < unique; ++g) {
    outFirst[static_cast<size_t>(rank[static_cast<size_t>(g)])] = first[static_cast<size_t>(g)];
    outCounts[static_cast<size_t>(rank[static_cast<size_t>(g)])] = counts[static_cast<size_t>(g)];
  }
  std::vector<int64_t> inverse(static_cast<size_t>(items));
  for (size_t i = 0; i < inverse.size(); ++i) inverse[i] = rank[static_cast<size_t>(groupOf[i])];
  std::vector<int64_t> ySizes = input.sizes();
  ySizes[a] = unique;
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(outer * unique * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t u = 0; u < unique; ++u) {
      for (int64_t i = 0; i < inner; ++i) map.push_back((o * items + outFirst[static_cast<size_t>(u)]) * inner + i);
    }
  }
  ctx.setOutput(0, takeElements(input, ySizes, map));
  ctx.setOutput(1, Tensor::fromVector<int64_t>({unique}, outFirst));
  ctx.setOutput(2, Tensor::fromVector<int64_t>({items}, inverse));
  ctx.setOutput(3, Tensor::fromVector<int64_t>({unique}, outCounts));
  return Status::success();
}

Status refCumSum(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> axisValues, readIntInput(ctx, 1, "axis"));
  if (axisValues.size() != 1) return makeError(ErrorCode::ShapeMismatch, "axis must hold one value");
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeExistingAxis(axisValues[0], static_cast<int64_t>(x.rank())));
  const bool exclusive = ctx.node().attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.node().attrInt("reverse", 0) != 0;
  const auto a = static_cast<size_t>(axis);
  const int64_t dim = x.size(a);
  const int64_t outer = product(x.sizes(), 0, a);
  const int64_t inner = product(x.sizes(), a + 1, x.rank());
  Tensor out(x.dtype(), x.sizes());
  Status status;
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (!kIsNumeric<T> || std::is_same_v<T, bool>) {
      status = makeError(ErrorCode::TypeMismatch, "CumSum does not take {}", dtypeName(x.dtype()));
    } else {
      // Integers sum in their own type; floats in double, rounded once per output.
      using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
      const T *p = x.data<T>();
      T *o = out.data<T>();
      for (int64_t b = 0; b < outer; ++b) {
        for (int64_t i = 0; i < inner; ++i) {
          Acc sum{};
          for (int64_t step = 0; step < dim; ++step) {
            const int64_t j = reverse ? dim - 1 - step : step;
            const int64_t flat = (b * dim + j) * inner + i;
            auto add = [&] {
              if constexpr (std::is_integral_v<T>) sum = wrappingAdd(sum, p[flat]); else sum += toDouble(p[flat]);
            };
            if (!exclusive) add();
            if constexpr (std::is_integral_v<T>) o[flat] = sum; else o[flat] = fromDouble<T>(sum);
            if (exclusive) add();
          }
        }
      }
    }
  });
  TESSEL_RETURN_IF_ERROR(status);
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

}  // namespace tessel::ref
