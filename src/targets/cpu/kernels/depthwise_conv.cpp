// The depthwise convolution driver (see depthwise_conv.h): picks the ISA build of the plane loop
// once, and splits (image, channel) planes over the pool.
#include "targets/cpu/kernels/depthwise_conv.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

// Tasks are ranges of planes: at most one per kMinFloatsPerTask outputs (the pool's per-task cost
// is then noise), and at least kTasksPerThread per thread so uneven ranges still balance.
constexpr int64_t kMinFloatsPerTask = 16 * 1024;
constexpr int64_t kTasksPerThread = 8;

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
  const int64_t tasks = std::min(planes, std::max(planes * outPlane / kMinFloatsPerTask, kTasksPerThread * threads));

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

}  // namespace tessel::cpu
