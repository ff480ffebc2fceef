// The pooling driver (see pool.h): picks the ISA build of the loops once, and splits (image,
// channel) planes over the pool.
#include "targets/cpu/kernels/pool.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "targets/cpu/kernels/conv_parallel.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/pool_variants.h"

namespace tessel::cpu {
namespace {

struct PoolVariant {
  const char *name;
  Isa isa;
  const PoolFunctions *functions;
};

// Best first; the first the host can run wins.
constexpr PoolVariant kVariants[] = {
    {"f32_pool2d__avx512", Isa::Avx512 | Isa::Fma, &kPoolFunctions__avx512},
    {"f32_pool2d__avx2_fma", Isa::Avx2 | Isa::Fma, &kPoolFunctions__avx2},
    {"f32_pool2d__generic", Isa::None, &kPoolFunctions__generic},
};

const PoolVariant &selectedVariant() {
  static const PoolVariant &selected = []() -> const PoolVariant & {
    for (const PoolVariant &variant : kVariants) {
      if (!hasAll(hostIsa(), variant.isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: pooling uses %s\n", variant.name);
      }
      return variant;
    }
    return kVariants[std::size(kVariants) - 1];
  }();
  return selected;
}

// As in the depthwise convolution: tasks of at least kMinFloatsPerTask inputs, and at least
// kTasksPerThread per thread so uneven ranges balance.
constexpr int64_t kMinFloatsPerTask = 16 * 1024;
constexpr int64_t kTasksPerThread = 8;

/// Calls fn(plane) for every plane in [0, planes), in ranges over the pool.
template <class Fn>
void forEachPlane(int64_t planes, int64_t floatsPerPlane, ThreadPool *pool, const Fn &fn) {
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const int64_t tasks =
      std::min(planes, std::max(planes * floatsPerPlane / kMinFloatsPerTask, kTasksPerThread * threads));
  runTasks(pool, tasks, [&](int64_t task) {
    const int64_t end = planes * (task + 1) / tasks;
    for (int64_t p = planes * task / tasks; p < end; ++p) fn(p);
  });
}

void windowedPool(const Pool2dShape &shape, bool countIncludePad, const float *x, float *y, ThreadPool *pool,
                  void (*planeFn)(const PoolPlaneArgs &)) {
  const int64_t inPlane = shape.inHeight * shape.inWidth;
  const int64_t outPlane = shape.outHeight * shape.outWidth;
  forEachPlane(shape.batch * shape.channels, inPlane, pool, [&](int64_t p) {
    PoolPlaneArgs args;
    args.x = x + p * inPlane;
    args.y = y + p * outPlane;
    args.inHeight = shape.inHeight;
    args.inWidth = shape.inWidth;
    args.outHeight = shape.outHeight;
    args.outWidth = shape.outWidth;
    args.kernelHeight = shape.kernelHeight;
    args.kernelWidth = shape.kernelWidth;
    args.strideHeight = shape.strideHeight;
    args.strideWidth = shape.strideWidth;
    args.dilationHeight = shape.dilationHeight;
    args.dilationWidth = shape.dilationWidth;
    args.padTop = shape.padTop;
    args.padLeft = shape.padLeft;
    args.padBottom = shape.padBottom;
    args.padRight = shape.padRight;
    args.countIncludePad = countIncludePad;
    planeFn(args);
  });
}

}  // namespace

void maxPool2d(const Pool2dShape &shape, const float *x, float *y, ThreadPool *pool) {
  windowedPool(shape, /*countIncludePad=*/false, x, y, pool, selectedVariant().functions->maxPlane);
}

void averagePool2d(const Pool2dShape &shape, bool countIncludePad, const float *x, float *y, ThreadPool *pool) {
  windowedPool(shape, countIncludePad, x, y, pool, selectedVariant().functions->averagePlane);
}

void globalAveragePool(int64_t planes, int64_t planeSize, const float *x, float *y, ThreadPool *pool) {
  auto sum = selectedVariant().functions->sum;
  const float scale = 1.0f / float(planeSize);
  forEachPlane(planes, planeSize, pool, [&](int64_t p) { y[p] = sum(x + p * planeSize, planeSize) * scale; });
}

void globalMaxPool(int64_t planes, int64_t planeSize, const float *x, float *y, ThreadPool *pool) {
  auto max = selectedVariant().functions->max;
  forEachPlane(planes, planeSize, pool, [&](int64_t p) { y[p] = max(x + p * planeSize, planeSize); });
}

const char *poolKernelName() { return selectedVariant().name; }

}  // namespace tessel::cpu
