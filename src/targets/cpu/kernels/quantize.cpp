// The quantization loops: run-time choice of the ISA variant and the threaded drivers; the loops
// are in quantize_impl.h, compiled per ISA under isa/.
#include "targets/cpu/kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

extern const QuantizeKernels kQuantizeAvx512;
extern const QuantizeKernels kQuantizeAvx2;
extern const QuantizeKernels kQuantizeGeneric;

namespace {

const QuantizeKernels *const kVariants[] = {&kQuantizeAvx512, &kQuantizeAvx2, &kQuantizeGeneric};

// Elements per range: large enough that the pool's hand-off (about a microsecond) is noise.
constexpr int64_t kElementGrain = 16384;
// The range pass splits into at most this many parts, each with its own bounds in scratch.
constexpr int64_t kRangeParts = 64;

}  // namespace

std::span<const QuantizeKernels *const> quantizeKernelVariants() { return kVariants; }

const QuantizeKernels &quantizeKernels() {
  static const QuantizeKernels &selected = []() -> const QuantizeKernels & {
    for (const QuantizeKernels *kernels : kVariants) {
      if (!hasAll(hostIsa(), kernels->isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: quantization uses %s (host isa: %s)\n", kernels->name,
                     isaName(hostIsa()).c_str());
      }
      return *kernels;
    }
    return kQuantizeGeneric;
  }();
  return selected;
}

size_t dynamicQuantizeScratchBytes() { return size_t(kRangeParts) * 2 * sizeof(float); }

void dynamicQuantizeU8(const QuantizeKernels &kernels, const float *x, int64_t n, uint8_t *y, float *scale,
                       uint8_t *zeroPoint, std::byte *scratch, ThreadPool *pool) {
  // Pass 1: the range, per part, then merged. Every part starts from 0 (the range includes 0),
  // and min/max do not depend on the order, so the bounds are the reference's.
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t parts = std::clamp<int64_t>(n / kElementGrain, 1, std::min<int64_t>(kRangeParts, int64_t(threads) * 4));
  const int64_t chunk = (n + parts - 1) / parts;
  auto *bounds = reinterpret_cast<float *>(scratch);
  auto rangeOf = [&](int64_t part) {
    float lo = 0.0f, hi = 0.0f;
    const int64_t begin = std::min(n, part * chunk);
    kernels.range(x + begin, std::min(n, begin + chunk) - begin, &lo, &hi);
    bounds[2 * part] = lo;
    bounds[2 * part + 1] = hi;
  };
  if (pool != nullptr && parts > 1) {
    pool->parallelFor(parts, rangeOf);
  } else {
    for (int64_t part = 0; part < parts; ++part) rangeOf(part);
  }
  float lo = 0.0f, hi = 0.0f;
  for (int64_t part = 0; part < parts; ++part) {
    lo = std::min(lo, bounds[2 * part]);
    hi = std::max(hi, bounds[2 * part + 1]);
  }
  // Pass 2: the ONNX definition's float32 formulas.
  const float s = (hi - lo) / 255.0f;
  float zero = 0.0f;
  if (s != 0.0f) zero = std::clamp(std::nearbyint((0.0f - lo) / s), 0.0f, 255.0f);
  *scale = s;
  *zeroPoint = uint8_t(zero);
  if (s == 0.0f) {  // All zeros: every element is the zero point, 0.
    std::memset(y, 0, size_t(n));
    return;
  }
  parallelRanges(pool, n, kElementGrain,
                 [&](int64_t begin, int64_t end) { kernels.quantizeU8(x + begin, s, zero, y + begin, end - begin); });
}

void centerQuantized(const QuantizeKernels &kernels, const void *x, bool isSigned, float zeroPoint, float *y,
                     int64_t n, ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain, [&](int64_t begin, int64_t end) {
    if (isSigned) {
      kernels.centerS8(static_cast<const int8_t *>(x) + begin, zeroPoint, y + begin, end - begin);
    } else {
      kernels.centerU8(static_cast<const uint8_t *>(x) + begin, zeroPoint, y + begin, end - begin);
    }
  });
}

void quantizeLinear(const QuantizeKernels &kernels, const float *x, float scale, float zeroPoint, bool isSigned,
                    void *y, int64_t n, ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain, [&](int64_t begin, int64_t end) {
    if (isSigned) {
      kernels.quantizeS8(x + begin, scale, zeroPoint, static_cast<int8_t *>(y) + begin, end - begin);
    } else {
      kernels.quantizeU8(x + begin, scale, zeroPoint, static_cast<uint8_t *>(y) + begin, end - begin);
    }
  });
}

void dequantizeLinear(const QuantizeKernels &kernels, const void *x, bool isSigned, float scale, float zeroPoint,
                      float *y, int64_t n, ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain, [&](int64_t begin, int64_t end) {
    if (isSigned) {
      kernels.dequantizeS8(static_cast<const int8_t *>(x) + begin, scale, zeroPoint, y + begin, end - begin);
    } else {
      kernels.dequantizeU8(static_cast<const uint8_t *>(x) + begin, scale, zeroPoint, y + begin, end - begin);
    }
  });
}

void addQuantized(const QuantizeKernels &kernels, const void *a, const void *b, bool isSigned,
                  const QuantizedAddParams &params, void *y, int64_t n, ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain, [&](int64_t begin, int64_t end) {
    if (isSigned) {
      kernels.addQuantizedS8(static_cast<const int8_t *>(a) + begin, static_cast<const int8_t *>(b) + begin, params,
                             static_cast<int8_t *>(y) + begin, end - begin);
    } else {
      kernels.addQuantizedU8(static_cast<const uint8_t *>(a) + begin, static_cast<const uint8_t *>(b) + begin, params,
                             static_cast<uint8_t *>(y) + begin, end - begin);
    }
  });
}

void int32FromFloat(const QuantizeKernels &kernels, std::byte *data, int64_t n, ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain,
                 [&](int64_t begin, int64_t end) { kernels.int32FromFloat(data + begin * 4, end - begin); });
}

void int32FromSplitSums(const QuantizeKernels &kernels, std::byte *data, const float *low, int shift, int64_t n,
                        ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain, [&](int64_t begin, int64_t end) {
    kernels.int32FromSplitSums(data + begin * 4, low + begin, shift, end - begin);
  });
}

}  // namespace tessel::cpu
