// The depthwise convolution drivers (see depthwise_conv.h): pick the ISA build of the loop once, and
// split (image, channel) planes (NCHW) or (image, row range, channel range) blocks (NHWC) over the
// pool.
#include "targets/cpu/kernels/depthwise_conv.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "targets/cpu/kernels/conv_parallel.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/depthwise_conv_variants.h"

namespace tessel::cpu {
namespace {

struct DepthwiseVariant {
  const char *name;
  Isa isa;
  DepthwisePlaneFn plane;
};

// Best first; the first the host can run wins.
constexpr DepthwiseVariant kVariants[] = {
    {"f32_depthwise_conv2d__avx512", Isa::Avx512 | Isa::Fma, &depthwisePlane__avx512},
    {"f32_depthwise_conv2d__avx2_fma", Isa::Avx2 | Isa::Fma, &depthwisePlane__avx2},
    {"f32_depthwise_conv2d__generic", Isa::None, &depthwisePlane__generic},
};

const DepthwiseVariant &selectedVariant() {
  static const DepthwiseVariant &selected = []() -> const DepthwiseVariant & {
    for (const DepthwiseVariant &variant : kVariants) {
      if (!hasAll(hostIsa(), variant.isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: depthwise conv uses %s\n", variant.name);
      }
      return variant;
    }
    return kVariants[std::size(kVariants) - 1];
  }();
  return selected;
}

constexpr DepthwiseNhwcVariant kNhwcVariants[] = {
    {"f32_depthwise_conv2d_nhwc__avx512", Isa::Avx512 | Isa::Fma, &depthwiseNhwcRows__avx512},
    {"f32_depthwise_conv2d_nhwc__avx2_fma", Isa::Avx2 | Isa::Fma, &depthwiseNhwcRows__avx2},
    {"f32_depthwise_conv2d_nhwc__generic", Isa::None, &depthwiseNhwcRows__generic},
};

const DepthwiseNhwcVariant &selectedNhwcVariant() {
  static const DepthwiseNhwcVariant &selected = []() -> const DepthwiseNhwcVariant & {
    for (const DepthwiseNhwcVariant &variant : kNhwcVariants) {
      if (!hasAll(hostIsa(), variant.isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: channels-last depthwise conv uses %s\n", variant.name);
      }
      return variant;
    }
    return kNhwcVariants[std::size(kNhwcVariants) - 1];
  }();
  return selected;
}

int64_t paddedChannels(const Conv2dShape &shape) {
  const int64_t block = kDepthwiseNhwcChannelBlock;
  return (shape.outChannels + block - 1) / block * block;
}

// Tasks are ranges of planes: at most one per kMinFloatsPerTask outputs (the pool's per-task cost
// is then noise; a smaller conv runs on the calling thread, as waking a worker costs more than it
// saves), and, given enough work, at least kTasksPerThread per thread so uneven ranges balance.
constexpr int64_t kMinFloatsPerTask = 16 * 1024;
constexpr int64_t kTasksPerThread = 8;

/// How many tasks `outputs` floats of work split into on `threads` threads.
int64_t taskCount(int64_t outputs, int64_t threads) {
  if (threads <= 1) return 1;
  const int64_t bySize = outputs / kMinFloatsPerTask;
  return std::max<int64_t>(1, bySize < threads ? bySize : std::max(bySize, kTasksPerThread * threads));
}

}  // namespace

bool isDepthwise(const Conv2dShape &shape) {
  return shape.group == shape.inChannels && shape.group > 1 && shape.outChannels % shape.group == 0;
}

void depthwiseConv2d(const Conv2dShape &shape, const float *x, const float *weights, const ConvEpilogue &epilogue,
                     float *y, ThreadPool *pool) {
  const DepthwisePlaneFn planeFn = selectedVariant().plane;
  const int64_t planes = shape.batch * shape.outChannels;
  const int64_t outPlane = shape.outPlane();
  const int64_t taps = shape.kernelHeight * shape.kernelWidth;
  const int64_t multiplier = shape.outChannels / shape.inChannels;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const int64_t tasks = std::min(planes, taskCount(planes * outPlane, threads));

  auto runTask = [&](int64_t task) {
    const int64_t end = planes * (task + 1) / tasks;
    for (int64_t p = planes * task / tasks; p < end; ++p) {
      const int64_t image = p / shape.outChannels;
      const int64_t channel = p % shape.outChannels;
      DepthwisePlaneArgs args;
      args.x = x + (image * shape.inChannels + channel / multiplier) * shape.inPlane();
      args.taps = weights + channel * taps;
      args.bias = epilogue.bias != nullptr ? epilogue.bias[channel] : 0.0f;
      args.residual = epilogue.residual != nullptr ? epilogue.residual + p * outPlane : nullptr;
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
      planeFn(args);
      applyActivation(epilogue.activation, args.y, outPlane);
    }
  };
  runTasks(pool, tasks, runTask);
}

const char *depthwiseConvKernelName() { return selectedVariant().name; }

bool isDepthwiseNhwc(const Conv2dShape &shape) {
  return shape.group == shape.inChannels && shape.group == shape.outChannels && shape.group > 1;
}

size_t depthwiseNhwcWeightsBytes(const Conv2dShape &shape) {
  // paddedChannels is a multiple of 16 floats, so every tap row is 64 bytes aligned.
  return size_t(shape.kernelHeight * shape.kernelWidth * paddedChannels(shape)) * sizeof(float);
}

void packDepthwiseWeightsNhwc(const Conv2dShape &shape, const float *weights, float *dst) {
  const int64_t taps = shape.kernelHeight * shape.kernelWidth;
  const int64_t padded = paddedChannels(shape);
  std::memset(dst, 0, depthwiseNhwcWeightsBytes(shape));
  for (int64_t c = 0; c < shape.outChannels; ++c) {
    for (int64_t t = 0; t < taps; ++t) dst[t * padded + c] = weights[c * taps + t];
  }
}

void depthwiseConv2dNhwcWith(const DepthwiseNhwcVariant &variant, const Conv2dShape &shape, const float *x,
                             const float *packedWeights, const ConvEpilogue &epilogue, float *y, ThreadPool *pool) {
  const int64_t channels = shape.outChannels;
  const int64_t rows = shape.batch * shape.outHeight;
  const int64_t blocks = (channels + kDepthwiseNhwcChannelBlock - 1) / kDepthwiseNhwcChannelBlock;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  // Rows first (each task then writes whole output rows); channel ranges only when there are too
  // few rows to give every thread kTasksPerThread tasks, as in the 7x7 planes of the last blocks.
  const int64_t outputs = rows * shape.outWidth * channels;
  const int64_t wanted = taskCount(outputs, threads);
  const int64_t channelTasks = std::min(blocks, (wanted + rows - 1) / rows);
  const int64_t rowTasks = std::min(rows, (wanted + channelTasks - 1) / channelTasks);
  const int64_t outImage = shape.outPlane() * channels;

  const Activation &activation = epilogue.activation;
  const bool clampInRegisters = activation.kind == ActivationKind::Relu || activation.kind == ActivationKind::Clip;
  DepthwiseNhwcArgs base;
  base.weights = packedWeights;
  base.bias = epilogue.bias;
  base.channels = channels;
  base.paddedChannels = paddedChannels(shape);
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
  base.clampLow = activation.kind == ActivationKind::Clip   ? activation.alpha
                  : activation.kind == ActivationKind::Relu ? 0.0f
                                                        : -__builtin_inff();
  base.clampHigh = activation.kind == ActivationKind::Clip ? activation.beta : __builtin_inff();

  auto runTask = [&](int64_t task) {
    const int64_t rowTask = task / channelTasks, channelTask = task % channelTasks;
    const int64_t rowBegin = rows * rowTask / rowTasks, rowEnd = rows * (rowTask + 1) / rowTasks;
    DepthwiseNhwcArgs args = base;
    args.channelBegin = blocks * channelTask / channelTasks * kDepthwiseNhwcChannelBlock;
    args.channelEnd = std::min(channels, blocks * (channelTask + 1) / channelTasks * kDepthwiseNhwcChannelBlock);
    // A row range may span images: one call per image.
    for (int64_t row = rowBegin; row < rowEnd;) {
      const int64_t image = row / shape.outHeight;
      const int64_t end = std::min(rowEnd, (image + 1) * shape.outHeight);
      args.x = x + image * shape.inPlane() * channels;
      args.y = y + image * outImage;
      args.residual = epilogue.residual != nullptr ? epilogue.residual + image * outImage : nullptr;
      args.rowBegin = row - image * shape.outHeight;
      args.rowEnd = end - image * shape.outHeight;
      variant.rows(args);
      if (!clampInRegisters && activation.kind != ActivationKind::None) {
        // The finished rows are still in cache; each pixel's channel range is one contiguous run.
        const int64_t count = args.channelEnd - args.channelBegin;
        for (int64_t pixel = args.rowBegin * shape.outWidth; pixel < args.rowEnd * shape.outWidth; ++pixel) {
          applyActivation(activation, args.y + pixel * channels + args.channelBegin, count);
        }
      }
      row = end;
    }
  };
  runTasks(pool, rowTasks * channelTasks, runTask);
}

void depthwiseConv2dNhwc(const Conv2dShape &shape, const float *x, const float *packedWeights,
                         const ConvEpilogue &epilogue, float *y, ThreadPool *pool) {
  depthwiseConv2dNhwcWith(selectedNhwcVariant(), shape, x, packedWeights, epilogue, y, pool);
}

const char *depthwiseConvNhwcKernelName() { return selectedNhwcVariant().name; }

std::span<const DepthwiseNhwcVariant> depthwiseNhwcVariants() { return kNhwcVariants; }

}  // namespace tessel::cpu
