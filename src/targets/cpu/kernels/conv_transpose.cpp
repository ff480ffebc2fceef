// The GEMM + col2im transposed convolution (see conv_transpose.h).
#include "targets/cpu/kernels/conv_transpose.h"

#include <algorithm>
#include <span>

namespace tessel::cpu {
namespace {

constexpr size_t kAlignBytes = 64;
// A chunk's columns stay in L2 between the GEMM that writes them and the col2im that reads them.
constexpr int64_t kColumnsBudgetBytes = 512 * 1024;

size_t roundUpBytes(size_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

size_t groupPanelBytes(const ConvTransposePlan &plan) {
  return roundUpBytes(packedASize(*plan.kernel, plan.columnRows(), plan.shape.inPerGroup()));
}

/// Adds the columns of input rows [row0, row0 + rows) of one group into Y's channels
/// [channel0, channel0 + count) of that group (`yGroup` points at the group's first channel).
void col2im(const Conv2dShape &s, const float *columns, int64_t row0, int64_t rows, int64_t channel0,
            int64_t count, float *yGroup) {
  const int64_t pixels = rows * s.inWidth;
  for (int64_t co = channel0; co < channel0 + count; ++co) {
    float *yc = yGroup + co * s.outPlane();
    for (int64_t kh = 0; kh < s.kernelHeight; ++kh) {
      for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
        const float *col = columns + ((co * s.kernelHeight + kh) * s.kernelWidth + kw) * pixels;
        // The input columns whose tap kw lands inside the output row.
        const int64_t offset = kw * s.dilationWidth - s.padLeft;
        int64_t iwBegin = 0, iwEnd = s.inWidth;
        while (iwBegin < iwEnd && iwBegin * s.strideWidth + offset < 0) ++iwBegin;
        while (iwEnd > iwBegin && (iwEnd - 1) * s.strideWidth + offset >= s.outWidth) --iwEnd;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t oh = (row0 + r) * s.strideHeight - s.padTop + kh * s.dilationHeight;
          if (oh < 0 || oh >= s.outHeight) continue;
          float *yRow = yc + oh * s.outWidth;
          const float *colRow = col + r * s.inWidth;
          for (int64_t iw = iwBegin; iw < iwEnd; ++iw) yRow[iw * s.strideWidth + offset] += colRow[iw];
        }
      }
    }
  }
}

}  // namespace

ConvTransposePlan planConvTranspose(const Conv2dShape &shape, int threads) {
  ConvTransposePlan plan;
  plan.shape = shape;
  plan.kernel = &selectedGemmKernel();
  plan.threads = std::max(threads, 1);
  const int64_t rowBytes = plan.columnRows() * shape.inWidth * int64_t(sizeof(float));
  plan.chunkRows = std::clamp<int64_t>(kColumnsBudgetBytes / std::max<int64_t>(rowBytes, 1), 1, shape.inHeight);
  plan.columnsBytes = roundUpBytes(size_t(plan.columnRows() * plan.chunkRows * shape.inWidth) * sizeof(float));
  plan.gemmScratchBytes = roundUpBytes(sgemmScratchBytes(
      *plan.kernel, {plan.columnRows(), plan.chunkRows * shape.inWidth, shape.inPerGroup()}, plan.threads,
      {.a = true, .b = false}));
  return plan;
}

size_t convTransposePackedWeightsBytes(const ConvTransposePlan &plan) {
  return groupPanelBytes(plan) * size_t(plan.shape.group);
}

void packConvTransposeWeights(const ConvTransposePlan &plan, const float *weights, float *dst) {
  const int64_t m = plan.columnRows(), k = plan.shape.inPerGroup();
  for (int64_t g = 0; g < plan.shape.group; ++g) {
    float *panel = reinterpret_cast<float *>(reinterpret_cast<std::byte *>(dst) + size_t(g) * groupPanelBytes(plan));
    // Group g's rows of W are its input channels, each m contiguous floats: W_g is Aᵀ.
    packAInto(*plan.kernel, m, k, weights + g * k * m, /*lda=*/m, panel, /*transposed=*/true);
  }
}

size_t convTransposeScratchBytes(const ConvTransposePlan &plan) { return plan.columnsBytes + plan.gemmScratchBytes; }

void convTranspose(const ConvTransposePlan &plan, const float *x, const float *packedWeights, const float *bias,
                   float *y, std::byte *scratch, ThreadPool *pool) {
  const Conv2dShape &s = plan.shape;
  const int64_t m = plan.columnRows(), k = s.inPerGroup(), outPerGroup = s.outPerGroup();
  float *columns = reinterpret_cast<float *>(scratch);
  std::span<std::byte> gemmScratch(scratch + plan.columnsBytes, plan.gemmScratchBytes);
  const int64_t planes = s.batch * s.outChannels;
  auto fillBias = [&](int64_t plane) {
    std::fill_n(y + plane * s.outPlane(), s.outPlane(), bias != nullptr ? bias[plane % s.outChannels] : 0.0f);
  };
  if (pool != nullptr) {
    pool->parallelFor(planes, fillBias);
  } else {
    for (int64_t plane = 0; plane < planes; ++plane) fillBias(plane);
  }
  // Output channels per col2im task: a few tasks per thread, so uneven rows balance.
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t channelsPerTask = std::max<int64_t>(1, outPerGroup / (4 * threads));
  const int64_t tasks = (outPerGroup + channelsPerTask - 1) / channelsPerTask;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      PackedAView a{plan.kernel, m, k,
                    reinterpret_cast<const float *>(reinterpret_cast<const std::byte *>(packedWeights) +
                                                    size_t(g) * groupPanelBytes(plan))};
      const float *xGroup = x + (n * s.inChannels + g * k) * s.inPlane();
      float *yGroup = y + (n * s.outChannels + g * outPerGroup) * s.outPlane();
      for (int64_t row0 = 0; row0 < s.inHeight; row0 += plan.chunkRows) {
        const int64_t rows = std::min(plan.chunkRows, s.inHeight - row0);
        const int64_t pixels = rows * s.inWidth;
        sgemmPackedA({m, pixels, k}, a, xGroup + row0 * s.inWidth, s.inPlane(), columns, pixels, {}, pool,
                     gemmScratch);
        auto scatter = [&](int64_t task) {
          const int64_t c0 = task * channelsPerTask;
          col2im(s, columns, row0, rows, c0, std::min(channelsPerTask, outPerGroup - c0), yGroup);
        };
        if (pool != nullptr) {
          pool->parallelFor(tasks, scatter);
        } else {
          for (int64_t task = 0; task < tasks; ++task) scatter(task);
        }
      }
    }
  }
}

std::string convTransposeKernelName(const ConvTransposePlan &plan) {
  return std::string("conv_transpose2d_gemm_col2im ") + plan.kernel->name;
}

}  // namespace tessel::cpu
