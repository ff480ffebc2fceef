// The im2col + GEMM convolution (see conv.h): planning, weight packing and the run loop.
#include "targets/cpu/kernels/conv.h"

#include <algorithm>

#include "targets/cpu/kernels/conv_parallel.h"
#include "targets/cpu/kernels/im2col.h"

namespace tessel::cpu {
namespace {

constexpr size_t kAlignBytes = 64;
// One im2col chunk is sized to stay in L2 next to the GEMM's packed panels while the GEMM streams
// it (1-2 MiB of L2 per core on current x86 parts).
constexpr int64_t kColumnsBudgetBytes = 512 * 1024;
// Narrower chunks make the GEMM's column loop too short to amortize its A panel reads.
constexpr int64_t kMinColumnChunk = 64;
// Splitting items over threads wins when they balance: a multiple of the thread count, or so many
// that one extra item on some thread costs little.
constexpr int64_t kItemsPerThreadForBalance = 4;

size_t roundUpBytes(size_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

size_t groupPanelBytes(const ConvGemmPlan &plan) {
  return roundUpBytes(packedASize(*plan.kernel, plan.shape.outPerGroup(), plan.shape.columnRows()));
}

/// One unit of work: a chunk of output positions of one image and group.
struct ConvItem {
  int64_t image, group, columnBegin, columns;
};

ConvItem itemAt(const ConvGemmPlan &plan, int64_t index) {
  const int64_t chunk = index % plan.chunksPerPlane;
  const int64_t imageGroup = index / plan.chunksPerPlane;
  const int64_t begin = chunk * plan.columnChunk;
  return {imageGroup / plan.shape.group, imageGroup % plan.shape.group, begin,
          std::min(plan.columnChunk, plan.shape.outPlane() - begin)};
}

/// Runs one item's GEMM; `columns` holds its gathered input unless the plan reads X directly.
void runItemGemm(const ConvGemmPlan &plan, const ConvItem &item, const float *x, const float *packedWeights,
                 const ConvEpilogue &epilogue, float *y, const float *columns, std::span<std::byte> gemmScratch,
                 ThreadPool *gemmPool) {
  const Conv2dShape &s = plan.shape;
  const int64_t m = s.outPerGroup();
  const int64_t k = s.columnRows();
  const int64_t plane = s.outPlane();
  const int64_t outOffset = (item.image * s.outChannels + item.group * m) * plane + item.columnBegin;

  const float *b = columns;
  int64_t ldb = item.columns;
  if (plan.readsInputDirectly) {
    b = x + (item.image * s.inChannels + item.group * s.inPerGroup()) * s.inPlane() + item.columnBegin;
    ldb = s.inPlane();
  }
  PackedAView a{plan.kernel, m, k,
                reinterpret_cast<const float *>(reinterpret_cast<const std::byte *>(packedWeights) +
                                                size_t(item.group) * groupPanelBytes(plan))};
  GemmEpilogue gemmEpilogue;
  gemmEpilogue.bias = epilogue.bias != nullptr ? epilogue.bias + item.group * m : nullptr;
  gemmEpilogue.biasPerRow = true;
  gemmEpilogue.residual = epilogue.residual != nullptr ? epilogue.residual + outOffset : nullptr;
  gemmEpilogue.ldr = plane;
  gemmEpilogue.activation = epilogue.activation;
  sgemmPackedA({m, item.columns, k}, a, b, ldb, y + outOffset, plane, gemmEpilogue, gemmPool, gemmScratch);
}

}  // namespace

ConvGemmPlan planConvGemm(const Conv2dShape &shape, int threads) {
  ConvGemmPlan plan;
  plan.shape = shape;
  plan.kernel = &selectedGemmKernel();
  plan.threads = std::max(threads, 1);
  plan.readsInputDirectly = shape.kernelHeight == 1 && shape.kernelWidth == 1 && shape.strideHeight == 1 &&
                            shape.strideWidth == 1 && shape.padTop == 0 && shape.padLeft == 0 &&
                            shape.outHeight == shape.inHeight && shape.outWidth == shape.inWidth;

  const int64_t plane = shape.outPlane();
  const int64_t k = shape.columnRows();
  const int64_t nr = plan.kernel->nr;
  const int64_t budgetChunk = std::max(kColumnsBudgetBytes / (k * int64_t(sizeof(float))) / nr * nr, kMinColumnChunk);
  int64_t chunks = (plane + budgetChunk - 1) / budgetChunk;
  // A few more (narrower) chunks can make the items a multiple of the threads, so every thread
  // gets the same share without splitting each product.
  const int64_t imageGroups = shape.batch * shape.group;
  for (int64_t more = chunks; plan.threads > 1 && more <= 2 * chunks; ++more) {
    if (more > chunks && plane / more < kMinColumnChunk) break;
    if (imageGroups * more % plan.threads != 0) continue;
    chunks = more;
    break;
  }
  plan.columnChunk = (plane + chunks - 1) / chunks;  // Equal chunks: a short last one wastes a call.
  plan.chunksPerPlane = (plane + plan.columnChunk - 1) / plan.columnChunk;

  const int64_t items = shape.batch * shape.group * plan.chunksPerPlane;
  plan.splitItems = plan.threads > 1 && (items % plan.threads == 0 ||
                                         items >= kItemsPerThreadForBalance * int64_t(plan.threads));
  plan.slots = plan.splitItems ? int(std::min<int64_t>(plan.threads, items)) : 1;
  const GemmShape gemmShape{shape.outPerGroup(), plan.columnChunk, k};
  plan.columnsBytes = plan.readsInputDirectly ? 0 : roundUpBytes(size_t(k * plan.columnChunk) * sizeof(float));
  plan.gemmScratchBytes = roundUpBytes(sgemmScratchBytes(*plan.kernel, gemmShape, plan.splitItems ? 1 : plan.threads,
                                                         GemmPacking{/*a=*/true, /*b=*/false}));
  plan.slotBytes = plan.columnsBytes + plan.gemmScratchBytes;
  return plan;
}

size_t convPackedWeightsBytes(const ConvGemmPlan &plan) { return groupPanelBytes(plan) * size_t(plan.shape.group); }

void packConvWeights(const ConvGemmPlan &plan, const float *weights, float *dst) {
  const int64_t m = plan.shape.outPerGroup();
  const int64_t k = plan.shape.columnRows();
  auto *out = reinterpret_cast<std::byte *>(dst);
  for (int64_t g = 0; g < plan.shape.group; ++g) {
    packAInto(*plan.kernel, m, k, weights + g * m * k, k,
              reinterpret_cast<float *>(out + size_t(g) * groupPanelBytes(plan)));
  }
}

size_t convGemmScratchBytes(const ConvGemmPlan &plan) { return plan.slotBytes * size_t(plan.slots); }

void convGemm(const ConvGemmPlan &plan, const float *x, const float *packedWeights, const ConvEpilogue &epilogue,
              float *y, std::byte *scratch, ThreadPool *pool) {
  const Conv2dShape &s = plan.shape;
  const int64_t items = s.batch * s.group * plan.chunksPerPlane;
  const int64_t k = s.columnRows();

  if (plan.splitItems) {
    // Static ranges, one per scratch slot: the task index names the slot.
    runTasks(pool, plan.slots, [&](int64_t task) {
      std::byte *slot = scratch + size_t(task) * plan.slotBytes;
      auto *columns = reinterpret_cast<float *>(slot);
      std::span<std::byte> gemmScratch(slot + plan.columnsBytes, plan.gemmScratchBytes);
      const int64_t begin = items * task / plan.slots;
      const int64_t end = items * (task + 1) / plan.slots;
      for (int64_t index = begin; index < end; ++index) {
        const ConvItem item = itemAt(plan, index);
        if (!plan.readsInputDirectly) {
          const float *xGroup = x + (item.image * s.inChannels + item.group * s.inPerGroup()) * s.inPlane();
          im2colChunk(s, xGroup, item.columnBegin, item.columns, 0, k, columns);
        }
        runItemGemm(plan, item, x, packedWeights, epilogue, y, columns, gemmScratch, /*gemmPool=*/nullptr);
      }
    });
    return;
  }

  // Few items: run them in order, each gather and product split over the pool.
  auto *columns = reinterpret_cast<float *>(scratch);
  std::span<std::byte> gemmScratch(scratch + plan.columnsBytes, plan.gemmScratchBytes);
  const int threads = pool != nullptr ? pool->size() : 1;
  for (int64_t index = 0; index < items; ++index) {
    const ConvItem item = itemAt(plan, index);
    if (!plan.readsInputDirectly) {
      const float *xGroup = x + (item.image * s.inChannels + item.group * s.inPerGroup()) * s.inPlane();
      runTasks(pool, threads, [&](int64_t task) {
        im2colChunk(s, xGroup, item.columnBegin, item.columns, k * task / threads, k * (task + 1) / threads, columns);
      });
    }
    runItemGemm(plan, item, x, packedWeights, epilogue, y, columns, gemmScratch, pool);
  }
}

std::string convGemmKernelName(const ConvGemmPlan &plan) {
  return std::string(plan.readsInputDirectly ? "conv2d_1x1_gemm " : "conv2d_im2col_gemm ") + plan.kernel->name;
}

}  // namespace tessel::cpu
