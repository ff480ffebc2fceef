// cpu lowering of the matrix products to the SGEMM kernel (kernels/gemm.h): ONNX MatMul (N-D with
// batch broadcasting, 1-D operands), ONNX Gemm (transA, transB, alpha, beta, C broadcast to
// [M, N]) and tessel FusedMatMul (Y = act(MatMul(A, B) + Bias + Z)).
//
// At lowering: shapes are checked, a batch of products whose B is shared and whose A is dense is
// folded into one product with M' = batch x M (a linear layer over [batch, seq, hidden]), constant
// B (the weights) is packed into the plan's ConstantStore and its raw tensor released, Gemm's
// alpha is folded into the packed weights and beta into a constant C, and the bias, C and Z map
// onto the GEMM epilogue so they are applied while each output tile is in cache. What the
// epilogue cannot express (alpha with a runtime B, beta with a runtime C, a scalar C) runs as one
// pass over Y after the product. f32 only; other dtypes run the reference kernels. With auto-cast
// the products take bf16 operands (weights rounded once as they are packed), except a constant A
// on the left, which the bf16 variants do not pack.
#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>

#include <fmt/format.h>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// Y = alpha * Y + beta * C with C broadcast by (rowStride, colStride); runs after the product
/// for what the GEMM epilogue cannot express.
struct PostPass {
  bool enabled = false;
  float alpha = 1.0f;
  float beta = 0.0f;
  int cInput = -1;  // C's input slot (read at run time even when constant), or -1.
  int64_t cRowStride = 0, cColStride = 0;
};

/// Everything a matrix-product step needs, fixed at lowering.
struct MatMulPlan {
  const GemmKernel *kernel = nullptr;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;                   // Products per run.
  std::vector<int64_t> aIndex, bIndex;  // Per product: which A and B matrix it reads.
  bool transposeA = false;             // A arrives as its K x M transpose (Gemm transA, runtime A).
  bool transposeB = false;             // B arrives as its N x K transpose (Gemm transB, runtime B).
  const float *constA = nullptr;       // Row-major constant A (transposed at lowering if needed).
  const float *packedA = nullptr;      // Constant A packed for `kernel` (when B is runtime).
  const float *packedB = nullptr;      // Constant B packed for `kernel`, one block per B matrix.
  size_t packedBFloats = 0;            // Floats per packed B block.
  // Epilogue sources: a runtime input slot or constant memory.
  int biasInput = -1;
  const float *biasConst = nullptr;
  bool biasPerRow = false;
  int residualInput = -1;
  const float *residualConst = nullptr;
  Activation activation;
  PostPass post;
  int threads = 1;
  bool batchParallel = false;  // Products run side by side, one scratch slot per thread.
};

class MatMulStep final : public Step {
 public:
  MatMulStep(MatMulPlan plan, std::string op) : plan_(std::move(plan)), op_(std::move(op)) {
    const GemmShape shape{plan_.m, plan_.n, plan_.k};
    const GemmPacking packing{plan_.packedA != nullptr, plan_.packedB != nullptr};
    transposeABytes_ = plan_.transposeA ? alignScratchBytes(size_t(plan_.m * plan_.k) * sizeof(float)) : 0;
    transposeBBytes_ = plan_.transposeB ? alignScratchBytes(size_t(plan_.k * plan_.n) * sizeof(float)) : 0;
    const int slotThreads = plan_.batchParallel ? 1 : plan_.threads;
    slotBytes_ = alignScratchBytes(sgemmScratchBytes(*plan_.kernel, shape, slotThreads, packing));
  }

  Status run(const StepIo &io) const override {
    const MatMulPlan &p = plan_;
    auto input = [&](int slot) { return slot < 0 ? nullptr : static_cast<const float *>(io.inputs[size_t(slot)]); };
    auto *scratch = static_cast<std::byte *>(io.scratch);
    const float *a = p.constA != nullptr ? p.constA : input(0);
    const float *b = input(1);
    if (p.transposeA) {
      auto *t = reinterpret_cast<float *>(scratch);
      transpose(a, p.k, p.m, t);
      a = t;
    }
    if (p.transposeB) {
      auto *t = reinterpret_cast<float *>(scratch + transposeABytes_);
      transpose(b, p.n, p.k, t);
      b = t;
    }
    std::byte *slots = scratch + transposeABytes_ + transposeBBytes_;
    auto *y = static_cast<float *>(io.outputs[0]);
    GemmEpilogue epilogue;
    epilogue.bias = p.biasConst != nullptr ? p.biasConst : input(p.biasInput);
    epilogue.biasPerRow = p.biasPerRow;
    const float *residual = p.residualConst != nullptr ? p.residualConst : input(p.residualInput);
    epilogue.ldr = p.n;
    epilogue.activation = p.activation;

    const int64_t mn = p.m * p.n;
    auto product = [&](int64_t i, ThreadPool *pool, std::span<std::byte> slot) {
      const GemmShape shape{p.m, p.n, p.k};
      GemmEpilogue e = epilogue;
      if (residual != nullptr) e.residual = residual + i * mn;
      float *c = y + i * mn;
      if (p.packedB != nullptr) {
        const PackedBView view{p.kernel, p.k, p.n, p.packedB + size_t(p.bIndex[size_t(i)]) * p.packedBFloats};
        sgemmPacked(shape, a + p.aIndex[size_t(i)] * p.m * p.k, p.k, view, c, p.n, e, pool, slot);
      } else if (p.packedA != nullptr) {
        const PackedAView view{p.kernel, p.m, p.k, p.packedA};
        sgemmPackedA(shape, view, b + p.bIndex[size_t(i)] * p.k * p.n, p.n, c, p.n, e, pool, slot);
      } else {
        sgemm(*p.kernel, shape, a + p.aIndex[size_t(i)] * p.m * p.k, p.k, b + p.bIndex[size_t(i)] * p.k * p.n, p.n, c, p.n, e, pool, slot);
      }
    };
    if (p.batchParallel && io.pool != nullptr && io.pool->size() > 1) {
      const int64_t slotCount = std::min<int64_t>(p.threads, p.batch);
      const int64_t perSlot = (p.batch + slotCount - 1) / slotCount;
      io.pool->parallelFor(slotCount, [&](int64_t s) {
        const std::span<std::byte> slot(slots + size_t(s) * slotBytes_, slotBytes_);
        for (int64_t i = s * perSlot; i < std::min(p.batch, (s + 1) * perSlot); ++i) product(i, nullptr, slot);
      });
    } else {
      for (int64_t i = 0; i < p.batch; ++i) product(i, io.pool, std::span<std::byte>(slots, slotBytes_));
    }
    if (p.post.enabled) postPass(y, input(p.post.cInput));
    return Status::success();
  }

  size_t scratchBytes() const override {
    const size_t slots = plan_.batchParallel ? size_t(std::min<int64_t>(plan_.threads, plan_.batch)) : 1;
    return transposeABytes_ + transposeBBytes_ + slots * slotBytes_;
  }

  int inPlaceInput() const override {
    // Y may take a dying Z's (or C's) buffer: the epilogue reads each residual element as C, in
    // the same tile that then writes it (see GemmEpilogue::residual).
    return plan_.residualInput >= 0 && !plan_.post.enabled ? plan_.residualInput : -1;
  }

  std::string kernelName() const override { return fmt::format("{}_sgemm {}", op_, plan_.kernel->name); }

 private:
  /// dst (cols x rows, row-major) = transpose of src (rows x cols).
  static void transpose(const float *src, int64_t rows, int64_t cols, float *dst) {
    constexpr int64_t kBlock = 32;  // Square blocks keep both sides' lines in L1.
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
      for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
        for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r) {
          for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c) dst[c * rows + r] = src[r * cols + c];
        }
      }
    }
  }

  void postPass(float *y, const float *c) const {
    const PostPass &post = plan_.post;
    for (int64_t i = 0; i < plan_.m; ++i) {
      float *row = y + i * plan_.n;
      for (int64_t j = 0; j < plan_.n; ++j) {
        float v = post.alpha * row[j];
        if (c != nullptr) v += post.beta * c[i * post.cRowStride + j * post.cColStride];
        row[j] = v;
      }
    }
  }

  MatMulPlan plan_;
  std::string op_;
  size_t transposeABytes_ = 0, transposeBBytes_ = 0, slotBytes_ = 0;
};

/// Per-product matrix indices of A and B for the output batch dims `out`, from operand batch dims
/// right-aligned against them (a dim of 1 broadcasts).
std::vector<int64_t> batchIndices(const std::vector<int64_t> &operand, const std::vector<int64_t> &out) {
  const size_t rank = out.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    const int64_t offset = int64_t(d) - int64_t(rank - operand.size());
    const int64_t size = offset >= 0 ? operand[size_t(offset)] : 1;
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  const int64_t total = std::accumulate(out.begin(), out.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> indices(size_t(total), 0);
  std::vector<int64_t> index(rank, 0);
  for (int64_t t = 0; t < total; ++t) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat += index[d] * strides[d];
    indices[size_t(t)] = flat;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return indices;
}

bool allFloat32(const LowerContext &ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i) && ctx.inputDType(i) != DType::Float32) return false;
  }
  return ctx.outputDType(0) == DType::Float32;
}

/// Packs constant B matrices (count of them, each k x n, stored transposed when `transposed`)
/// into the ConstantStore, scaled by `alpha`; returns the packed memory.
Expected<const float *> packConstantB(LowerContext &ctx, MatMulPlan &plan, const float *b, int64_t count,
                                      bool transposed, float alpha) {
  plan.packedBFloats = packedBSize(*plan.kernel, plan.k, plan.n) / sizeof(float);
  const size_t bytes = plan.packedBFloats * sizeof(float) * size_t(count);
  const GemmKernel *kernel = plan.kernel;
  const int64_t k = plan.k, n = plan.n;
  const size_t blockFloats = plan.packedBFloats;
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(fmt::format("packed_b.{}", kernel->name), bytes, [&](std::byte *dst) {
                            auto *out = reinterpret_cast<float *>(dst);
                            // alpha scales the weights before they are packed (and, for a bf16
                            // variant, rounded).
                            std::vector<float> scaled(alpha != 1.0f ? size_t(k * n) : 0);
                            for (int64_t i = 0; i < count; ++i) {
                              const float *src = b + i * k * n;
                              if (alpha != 1.0f) {
                                for (size_t f = 0; f < scaled.size(); ++f) scaled[f] = alpha * src[f];
                                src = scaled.data();
                              }
                              packBInto(*kernel, k, n, src, transposed ? k : n, out + size_t(i) * blockFloats,
                                        transposed);
                            }
                          }));
  return reinterpret_cast<const float *>(packed);
}

/// Stores `floats` computed floats under `key` in the ConstantStore.
Expected<const float *> storeConstant(LowerContext &ctx, std::string_view key, int64_t floats,
                                      const std::function<void(float *)> &fill) {
  TESSEL_ASSIGN_OR_RETURN(const std::byte *stored,
                          ctx.packed(key, alignScratchBytes(size_t(floats) * sizeof(float)),
                                     [&](std::byte *dst) { fill(reinterpret_cast<float *>(dst)); }));
  return reinterpret_cast<const float *>(stored);
}

/// Decides how the step runs its products (side by side, or one after another on the pool).
void chooseParallelism(const LowerContext &ctx, MatMulPlan &plan) {
  plan.threads = std::max(ctx.threads(), 1);
  plan.batchParallel = plan.threads > 1 && plan.batch >= plan.threads;
}

/// MatMul and FusedMatMul: shapes, batch folding, constant B packing. Fills `plan` or returns
/// an error; `*covered` is false for a node the kernels leave to the reference.
Status planMatMul(LowerContext &ctx, MatMulPlan &plan, bool *covered) {
  const std::string &op = ctx.node().opType();
  *covered = false;
  if (ctx.numInputs() < 2 || !ctx.hasInput(0) || !ctx.hasInput(1)) {
    return makeError(ErrorCode::InvalidModel, "{}: needs inputs A and B; got {}", op, ctx.numInputs());
  }
  if (!allFloat32(ctx)) return Status::success();
  std::vector<int64_t> aSizes = ctx.inputSizes(0), bSizes = ctx.inputSizes(1);
  if (aSizes.empty() || bSizes.empty()) {
    return makeError(ErrorCode::ShapeMismatch, "{}: A {} and B {} must have rank >= 1", op, formatSizes(aSizes),
                     formatSizes(bSizes));
  }
  // 1-D operands: A [K] is [1, K], B [K] is [K, 1]; the inserted dim is absent from Y.
  if (aSizes.size() == 1) aSizes.insert(aSizes.begin(), 1);
  if (bSizes.size() == 1) bSizes.push_back(1);
  plan.m = aSizes[aSizes.size() - 2];
  plan.k = aSizes.back();
  plan.n = bSizes.back();
  if (bSizes[bSizes.size() - 2] != plan.k) {
    return makeError(ErrorCode::ShapeMismatch, "{}: A {} and B {} disagree on K ({} vs {})", op,
                     formatSizes(ctx.inputSizes(0)), formatSizes(ctx.inputSizes(1)), plan.k, bSizes[bSizes.size() - 2]);
  }
  const std::vector<int64_t> aBatch(aSizes.begin(), aSizes.end() - 2), bBatch(bSizes.begin(), bSizes.end() - 2);
  std::vector<int64_t> outBatch(std::max(aBatch.size(), bBatch.size()), 1);
  for (size_t d = 0; d < outBatch.size(); ++d) {
    const int64_t aOffset = int64_t(d) - int64_t(outBatch.size() - aBatch.size());
    const int64_t bOffset = int64_t(d) - int64_t(outBatch.size() - bBatch.size());
    const int64_t as = aOffset >= 0 ? aBatch[size_t(aOffset)] : 1, bs = bOffset >= 0 ? bBatch[size_t(bOffset)] : 1;
    if (as != bs && as != 1 && bs != 1) {
      return makeError(ErrorCode::ShapeMismatch, "{}: batch dims of A {} and B {} do not broadcast", op,
                       formatSizes(ctx.inputSizes(0)), formatSizes(ctx.inputSizes(1)));
    }
    outBatch[d] = as == 1 ? bs : as;  // 1 broadcasts, even against an empty 0.
  }
  const int64_t batch = std::accumulate(outBatch.begin(), outBatch.end(), int64_t{1}, std::multiplies<>());
  const std::vector<int64_t> ySizes = ctx.outputSizes(0);
  const int64_t yNumel = std::accumulate(ySizes.begin(), ySizes.end(), int64_t{1}, std::multiplies<>());
  if (yNumel != batch * plan.m * plan.n) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output {} does not hold the product of A {} and B {}", op,
                     formatSizes(ySizes), formatSizes(ctx.inputSizes(0)), formatSizes(ctx.inputSizes(1)));
  }
  const int64_t aMatrices = std::accumulate(aBatch.begin(), aBatch.end(), int64_t{1}, std::multiplies<>());
  const int64_t bMatrices = std::accumulate(bBatch.begin(), bBatch.end(), int64_t{1}, std::multiplies<>());
  if (bMatrices == 1 && aMatrices == batch) {
    // One B for every product and A dense over the batch: one product of batch x M rows.
    plan.m *= batch;
    plan.batch = 1;
    plan.aIndex = {0};
    plan.bIndex = {0};
  } else {
    plan.batch = batch;
    plan.aIndex = batchIndices(aBatch, outBatch);
    plan.bIndex = batchIndices(bBatch, outBatch);
  }
  const bool packsA = ctx.constantInput(1) == nullptr && ctx.constantInput(0) != nullptr && plan.batch == 1;
  plan.kernel = &ctx.gemmKernel(plan.m, [&](const GemmKernel &kernel) { return !packsA || kernel.kPack == 1; });
  if (const Tensor *b = ctx.constantInput(1)) {
    TESSEL_ASSIGN_OR_RETURN(plan.packedB, packConstantB(ctx, plan, b->data<float>(), bMatrices, false, 1.0f));
    ctx.releaseConstantInput(1);
  } else if (const Tensor *a = ctx.constantInput(0); packsA) {
    const GemmKernel *kernel = plan.kernel;
    const int64_t m = plan.m, k = plan.k;
    const float *src = a->data<float>();
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed(fmt::format("packed_a.{}", kernel->name), packedASize(*kernel, m, k),
                                       [&](std::byte *dst) {
                                         packAInto(*kernel, m, k, src, k, reinterpret_cast<float *>(dst));
                                       }));
    plan.packedA = reinterpret_cast<const float *>(packed);
    ctx.releaseConstantInput(0);
  }
  *covered = true;
  return Status::success();
}

Expected<std::unique_ptr<Step>> finish(LowerContext &ctx, MatMulPlan plan) {
  chooseParallelism(ctx, plan);
  return std::unique_ptr<Step>(std::make_unique<MatMulStep>(std::move(plan), ctx.node().opType()));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerMatMul(LowerContext &ctx) {
  MatMulPlan plan;
  bool covered = false;
  TESSEL_RETURN_IF_ERROR(planMatMul(ctx, plan, &covered));
  if (!covered) return std::unique_ptr<Step>();
  return finish(ctx, std::move(plan));
}

Expected<std::unique_ptr<Step>> lowerFusedMatMul(LowerContext &ctx) {
  MatMulPlan plan;
  bool covered = false;
  TESSEL_RETURN_IF_ERROR(planMatMul(ctx, plan, &covered));
  if (!covered) return std::unique_ptr<Step>();
  const std::string name = ctx.node().attrString("activation", "");
  const std::vector<float> params = ctx.node().attrFloats("activation_params");
  auto activation = parseActivation(name, params);
  if (!activation.ok()) {
    return makeError(ErrorCode::InvalidArgument, "FusedMatMul: {}", activation.diag().message);
  }
  plan.activation = *activation;
  const std::vector<int64_t> ySizes = ctx.outputSizes(0);
  if (ctx.numInputs() > 2 && ctx.hasInput(2)) {
    const std::vector<int64_t> bias = ctx.inputSizes(2);
    if (bias.size() != 1 || bias[0] != plan.n) {
      return makeError(ErrorCode::ShapeMismatch, "FusedMatMul: Bias has shape {}; expected [{}] (the last dim of Y {})",
                       formatSizes(bias), plan.n, formatSizes(ySizes));
    }
    plan.biasInput = 2;
  }
  if (ctx.numInputs() > 3 && ctx.hasInput(3)) {
    if (ctx.inputSizes(3) != ySizes) {
      return makeError(ErrorCode::ShapeMismatch, "FusedMatMul: Z has shape {}; expected Y's shape {}",
                       formatSizes(ctx.inputSizes(3)), formatSizes(ySizes));
    }
    plan.residualInput = 3;
  }
  return finish(ctx, std::move(plan));
}

Expected<std::unique_ptr<Step>> lowerGemm(LowerContext &ctx) {
  if (ctx.numInputs() < 2 || !ctx.hasInput(0) || !ctx.hasInput(1)) {
    return makeError(ErrorCode::InvalidModel, "Gemm: needs inputs A and B; got {}", ctx.numInputs());
  }
  if (!allFloat32(ctx)) return std::unique_ptr<Step>();
  const std::vector<int64_t> aSizes = ctx.inputSizes(0), bSizes = ctx.inputSizes(1);
  if (aSizes.size() != 2 || bSizes.size() != 2) {
    return makeError(ErrorCode::ShapeMismatch, "Gemm: A {} and B {} must be 2-D", formatSizes(aSizes),
                     formatSizes(bSizes));
  }
  const bool transA = ctx.node().attrInt("transA", 0) != 0, transB = ctx.node().attrInt("transB", 0) != 0;
  const float alpha = ctx.node().attrFloat("alpha", 1.0f), beta = ctx.node().attrFloat("beta", 1.0f);
  MatMulPlan plan;
  plan.m = transA ? aSizes[1] : aSizes[0];
  plan.kernel = &ctx.gemmKernel(plan.m);
  plan.k = transA ? aSizes[0] : aSizes[1];
  plan.n = transB ? bSizes[0] : bSizes[1];
  const int64_t bK = transB ? bSizes[1] : bSizes[0];
  if (bK != plan.k) {
    return makeError(ErrorCode::ShapeMismatch, "Gemm: A {} (transA={}) and B {} (transB={}) disagree on K", formatSizes(aSizes),
                     int(transA), formatSizes(bSizes), int(transB));
  }
  if (ctx.outputSizes(0) != std::vector<int64_t>{plan.m, plan.n}) {
    return makeError(ErrorCode::ShapeMismatch, "Gemm: output {} is not [{},{}]", formatSizes(ctx.outputSizes(0)), plan.m,
                     plan.n);
  }
  plan.aIndex = {0};
  plan.bIndex = {0};
  bool alphaFolded = alpha == 1.0f;
  if (const Tensor *b = ctx.constantInput(1)) {
    TESSEL_ASSIGN_OR_RETURN(plan.packedB, packConstantB(ctx, plan, b->data<float>(), 1, transB, alpha));
    ctx.releaseConstantInput(1);
    alphaFolded = true;
  } else {
    plan.transposeB = transB;
  }
  if (const Tensor *a = ctx.constantInput(0); a != nullptr && transA) {
    // A constant transposed A is transposed once here rather than on every run.
    const float *src = a->data<float>();
    const int64_t m = plan.m, k = plan.k;
    TESSEL_ASSIGN_OR_RETURN(plan.constA, storeConstant(ctx, "a_transposed", m * k, [&](float *dst) {
                              for (int64_t p = 0; p < k; ++p) {
                                for (int64_t i = 0; i < m; ++i) dst[i * k + p] = src[p * m + i];
                              }
                            }));
    ctx.releaseConstantInput(0);
  } else {
    plan.transposeA = transA;
  }

  // C: broadcast (unidirectionally) to [M, N].
  const bool hasC = ctx.numInputs() > 2 && ctx.hasInput(2) && beta != 0.0f;
  if (hasC) {
    const std::vector<int64_t> c = ctx.inputSizes(2);
    const int64_t cRows = c.size() == 2 ? c[0] : 1, cCols = c.empty() ? 1 : c.back();
    if (c.size() > 2 || (cRows != 1 && cRows != plan.m) || (cCols != 1 && cCols != plan.n)) {
      return makeError(ErrorCode::ShapeMismatch, "Gemm: C has shape {}; expected one that broadcasts to [{},{}]",
                       formatSizes(c), plan.m, plan.n);
    }
    const Tensor *cConst = ctx.constantInput(2);
    const int64_t m = plan.m, n = plan.n;
    if (!alphaFolded) {
      plan.post = {true, alpha, beta, 2, cRows == 1 ? 0 : cCols, cCols == 1 ? 0 : 1};
    } else if (cConst != nullptr) {
      // beta folded into a constant bias (per column or row) or residual.
      const float *src = cConst->data<float>();
      if (cRows == 1) {
        TESSEL_ASSIGN_OR_RETURN(plan.biasConst, storeConstant(ctx, "bias", n, [&](float *dst) {
                                  for (int64_t j = 0; j < n; ++j) dst[j] = beta * src[cCols == 1 ? 0 : j];
                                }));
      } else if (cCols == 1) {
        plan.biasPerRow = true;
        TESSEL_ASSIGN_OR_RETURN(plan.biasConst, storeConstant(ctx, "bias", m, [&](float *dst) {
                                  for (int64_t i = 0; i < m; ++i) dst[i] = beta * src[i];
                                }));
      } else {
        TESSEL_ASSIGN_OR_RETURN(plan.residualConst, storeConstant(ctx, "residual", m * n, [&](float *dst) {
                                  for (int64_t i = 0; i < m * n; ++i) dst[i] = beta * src[i];
                                }));
      }
      ctx.releaseConstantInput(2);
    } else if (beta == 1.0f && cRows == 1 && cCols == n) {
      plan.biasInput = 2;
    } else if (beta == 1.0f && cRows == m && cCols == 1) {
      plan.biasInput = 2;
      plan.biasPerRow = true;
    } else if (beta == 1.0f && cRows == m && cCols == n) {
      plan.residualInput = 2;
    } else {
      plan.post = {true, 1.0f, beta, 2, cRows == 1 ? 0 : cCols, cCols == 1 ? 0 : 1};
    }
  } else if (!alphaFolded) {
    plan.post = {true, alpha, 0.0f, -1, 0, 0};
  }
  return finish(ctx, std::move(plan));
}

}  // namespace tessel::cpu
