// The pooling drivers (see pool.h): pick the ISA build of the loops once, and split (image,
// channel) planes (NCHW) or (image, row range, channel range) blocks (NHWC) over the pool.
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

constexpr PoolNhwcVariant kNhwcVariants[] = {
    {"f32_pool2d_nhwc__avx512", Isa::Avx512 | Isa::Fma, &kPoolNhwcFunctions__avx512},
    {"f32_pool2d_nhwc__avx2_fma", Isa::Avx2 | Isa::Fma, &kPoolNhwcFunctions__avx2},
    {"f32_pool2d_nhwc__generic", Isa::None, &kPoolNhwcFunctions__generic},
};

const PoolNhwcVariant &selectedNhwcVariant() {
  static const PoolNhwcVariant &selected = []() -> const PoolNhwcVariant & {
    for (const PoolNhwcVariant &variant : kNhwcVariants) {
      if (!hasAll(hostIsa(), variant.isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: channels-last pooling uses %s\n", variant.name);
      }
      return variant;
    }
    return kNhwcVariants[std::size(kNhwcVariants) - 1];
  }();
  return selected;
}

// As in the depthwise convolution: tasks of at least kMinFloatsPerTask inputs (a smaller pool
// runs on the calling thread: waking a worker costs more than it saves), and, given enough work,
// at least kTasksPerThread per thread so uneven ranges balance.
constexpr int64_t kMinFloatsPerTask = 16 * 1024;
constexpr int64_t kTasksPerThread = 8;

/// How many tasks `floats` of work split into on `threads` threads.
int64_t taskCount(int64_t floats, int64_t threads) {
  if (threads <= 1) return 1;
  const int64_t bySize = floats / kMinFloatsPerTask;
  return std::max<int64_t>(1, bySize < threads ? bySize : std::max(bySize, kTasksPerThread * threads));
}

/// Calls fn(plane) for every plane in [0, planes), in ranges over the pool.
template <class Fn>
void forEachPlane(int64_t planes, int64_t floatsPerPlane, ThreadPool *pool, const Fn &fn) {
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const int64_t tasks = std::min(planes, taskCount(planes * floatsPerPlane, threads));
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

// Channel ranges of the channels-last pools are whole cache lines, so no two tasks write one line
// (for bytes, a split of 64 channels into 16-byte blocks made the pool twice as slow on two threads).
constexpr int64_t kCacheLineBytes = 64;

/// Splits `units` units (output rows, or images) times the channel blocks into tasks and calls
/// fn(unitBegin, unitEnd, channelBegin, channelEnd) for each, over the pool: units first, channel
/// ranges only when there are too few units to give every thread kTasksPerThread tasks.
template <class Fn>
void forEachNhwcBlock(int64_t units, int64_t floatsPerUnit, int64_t channels, int64_t elementBytes, ThreadPool *pool,
                      const Fn &fn) {
  const int64_t channelBlock = kCacheLineBytes / elementBytes;
  const int64_t blocks = (channels + channelBlock - 1) / channelBlock;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const int64_t wanted = taskCount(units * floatsPerUnit, threads);
  const int64_t channelTasks = std::max<int64_t>(1, std::min(blocks, (wanted + units - 1) / units));
  const int64_t unitTasks = std::max<int64_t>(1, std::min(units, (wanted + channelTasks - 1) / channelTasks));
  runTasks(pool, unitTasks * channelTasks, [&](int64_t task) {
    const int64_t unitTask = task / channelTasks, channelTask = task % channelTasks;
    const int64_t channelBegin = blocks * channelTask / channelTasks * channelBlock;
    const int64_t channelEnd = std::min(channels, blocks * (channelTask + 1) / channelTasks * channelBlock);
    fn(units * unitTask / unitTasks, units * (unitTask + 1) / unitTasks, channelBegin, channelEnd);
  });
}

void windowedPoolNhwc(const Pool2dShape &shape, bool countIncludePad, const void *x, void *y, int64_t elementBytes,
                      ThreadPool *pool, void (*rowsFn)(const PoolNhwcArgs &)) {
  const int64_t inImage = shape.inHeight * shape.inWidth * shape.channels * elementBytes;
  const int64_t outImage = shape.outHeight * shape.outWidth * shape.channels * elementBytes;
  PoolNhwcArgs base;
  base.channels = shape.channels;
  base.inHeight = shape.inHeight;
  base.inWidth = shape.inWidth;
  base.outHeight = shape.outHeight;
  base.outWidth = shape.outWidth;
  base.kernelHeight = shape.kernelHeight;
  base.kernelWidth = shape.kernelWidth;
  base.strideHeight = shape.strideHeight;
  base.strideWidth = shape.strideWidth;
  base.dilationHeight = shape.dilationHeight;
  base.dilationWidth = shape.dilationWidth;
  base.padTop = shape.padTop;
  base.padLeft = shape.padLeft;
  base.padBottom = shape.padBottom;
  base.padRight = shape.padRight;
  base.countIncludePad = countIncludePad;
  const int64_t rows = shape.batch * shape.outHeight;
  const int64_t floatsPerRow = shape.outWidth * shape.channels * shape.kernelHeight * shape.kernelWidth;
  forEachNhwcBlock(rows, floatsPerRow, shape.channels, elementBytes, pool,
                   [&](int64_t rowBegin, int64_t rowEnd, int64_t channelBegin, int64_t channelEnd) {
                     PoolNhwcArgs args = base;
                     args.channelBegin = channelBegin;
                     args.channelEnd = channelEnd;
                     // A row range may span images: one call per image.
                     for (int64_t row = rowBegin; row < rowEnd;) {
                       const int64_t image = row / shape.outHeight;
                       const int64_t end = std::min(rowEnd, (image + 1) * shape.outHeight);
                       args.x = static_cast<const std::byte *>(x) + image * inImage;
                       args.y = static_cast<std::byte *>(y) + image * outImage;
                       args.rowBegin = row - image * shape.outHeight;
                       args.rowEnd = end - image * shape.outHeight;
                       rowsFn(args);
                       row = end;
                     }
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

void maxPool2dNhwcWith(const PoolNhwcVariant &variant, const Pool2dShape &shape, const float *x, float *y,
                       ThreadPool *pool) {
  windowedPoolNhwc(shape, /*countIncludePad=*/false, x, y, sizeof(float), pool, variant.functions->maxRows);
}

void maxPool2dNhwcBytesWith(const PoolNhwcVariant &variant, const Pool2dShape &shape, const void *x, bool isSigned,
                            void *y, ThreadPool *pool) {
  windowedPoolNhwc(shape, /*countIncludePad=*/false, x, y, /*elementBytes=*/1, pool,
                   isSigned ? variant.functions->maxRowsS8 : variant.functions->maxRowsU8);
}

void averagePool2dNhwcWith(const PoolNhwcVariant &variant, const Pool2dShape &shape, bool countIncludePad,
                           const float *x, float *y, ThreadPool *pool) {
  windowedPoolNhwc(shape, countIncludePad, x, y, sizeof(float), pool, variant.functions->averageRows);
}

void globalAveragePoolNhwcWith(const PoolNhwcVariant &variant, int64_t batch, int64_t plane, int64_t channels,
                               const float *x, float *y, ThreadPool *pool) {
  auto sums = variant.functions->scaledChannelSums;
  const float scale = 1.0f / float(plane);
  forEachNhwcBlock(batch, plane * channels, channels, int64_t(sizeof(float)), pool,
                   [&](int64_t imageBegin, int64_t imageEnd, int64_t channelBegin, int64_t channelEnd) {
                     for (int64_t n = imageBegin; n < imageEnd; ++n) {
                       sums(x + n * plane * channels, plane, channels, channelBegin, channelEnd, scale,
                            y + n * channels);
                     }
                   });
}

void maxPool2dNhwc(const Pool2dShape &shape, const float *x, float *y, ThreadPool *pool) {
  maxPool2dNhwcWith(selectedNhwcVariant(), shape, x, y, pool);
}

void maxPool2dNhwcBytes(const Pool2dShape &shape, const void *x, bool isSigned, void *y, ThreadPool *pool) {
  maxPool2dNhwcBytesWith(selectedNhwcVariant(), shape, x, isSigned, y, pool);
}

void averagePool2dNhwc(const Pool2dShape &shape, bool countIncludePad, const float *x, float *y, ThreadPool *pool) {
  averagePool2dNhwcWith(selectedNhwcVariant(), shape, countIncludePad, x, y, pool);
}

void globalAveragePoolNhwc(int64_t batch, int64_t plane, int64_t channels, const float *x, float *y,
                           ThreadPool *pool) {
  globalAveragePoolNhwcWith(selectedNhwcVariant(), batch, plane, channels, x, y, pool);
}

const char *poolNhwcKernelName() { return selectedNhwcVariant().name; }

std::span<const PoolNhwcVariant> poolNhwcVariants() { return kNhwcVariants; }

}  // namespace tessel::cpu
