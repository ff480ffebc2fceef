// cpu lowering of tessel Attention (docs/cpu.md) to the flash-attention kernel
// (kernels/attention.h): validates Q, K, V and the mask at lowering, resolves the scale, and sizes
// one scratch slot per plan thread. And of tessel RotaryEmbedding (kernels/rotary_embedding.h), for
// f32 tables whose last dim is X's, and of tessel KvCacheUpdate (a row copy).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "targets/cpu/kernels/attention.h"
#include "targets/cpu/kernels/rotary_embedding.h"
#include "targets/cpu/kernels/transpose.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

class AttentionStep final : public Step {
 public:
  AttentionStep(const AttentionShape &shape, const AttentionKernels &kernels, bool hasMask, int threads)
      : shape_(shape), kernels_(kernels), hasMask_(hasMask),
        slots_(threads > 0 ? threads : ThreadPool::hardwareThreads()) {}

  Status run(const StepIo &io) const override {
    const auto *mask = hasMask_ ? static_cast<const float *>(io.inputs[3]) : nullptr;
    attention(shape_, kernels_, static_cast<const float *>(io.inputs[0]), static_cast<const float *>(io.inputs[1]),
              static_cast<const float *>(io.inputs[2]), mask, static_cast<float *>(io.outputs[0]), io.scratch, slots_,
              io.pool);
    return Status::success();
  }
  size_t scratchBytes() const override { return attentionScratchBytes(shape_, kernels_, slots_); }
  std::string kernelName() const override { return attentionKernelName(shape_, kernels_); }

 private:
  AttentionShape shape_;
  AttentionKernels kernels_;
  bool hasMask_;
  int slots_;  // Scratch slots: the plan's threads; a larger pool runs no more workers than this.
};

class RotaryEmbeddingStep final : public Step {
 public:
  RotaryEmbeddingStep(RotaryTables tables, int64_t depth) : tables_(std::move(tables)), depth_(depth) {}
  Status run(const StepIo &io) const override {
    rotaryEmbedding(tables_, depth_, static_cast<const float *>(io.inputs[0]), static_cast<const float *>(io.inputs[1]),
                    static_cast<const float *>(io.inputs[2]), static_cast<float *>(io.outputs[0]));
    return Status::success();
  }
  int inPlaceInput() const override { return 0; }
  std::string kernelName() const override { return "rotary_embedding rows"; }

 private:
  RotaryTables tables_;
  int64_t depth_;
};

/// tessel KvCacheUpdate: the cache (in place where the planner lets it) with the new rows at the
/// position read at run time.
class KvCacheUpdateStep final : public Step {
 public:
  KvCacheUpdateStep(std::vector<int64_t> cache, int64_t added, size_t elementBytes)
      : cache_(std::move(cache)), added_(added), elementBytes_(elementBytes) {}
  Status run(const StepIo &io) const override {
    const int64_t at = *static_cast<const int64_t *>(io.inputs[2]);
    const int64_t capacity = cache_[2];
    if (at < 0 || at + added_ > capacity)
      return makeError(ErrorCode::RuntimeError, "KvCacheUpdate: positions {}..{} do not fit a cache of {}", at,
                       at + added_ - 1, capacity);
    const size_t row = static_cast<size_t>(cache_[3]) * elementBytes_;
    const int64_t heads = cache_[0] * cache_[1];
    auto *y = static_cast<std::byte *>(io.outputs[0]);
    if (io.outputs[0] != io.inputs[0]) std::memcpy(y, io.inputs[0], static_cast<size_t>(heads * capacity) * row);
    const auto *added = static_cast<const std::byte *>(io.inputs[1]);
    for (int64_t head = 0; head < heads; ++head)
      std::memcpy(y + static_cast<size_t>(head * capacity + at) * row, added + static_cast<size_t>(head * added_) * row,
                  static_cast<size_t>(added_) * row);
    return Status::success();
  }
  int inPlaceInput() const override { return 0; }
  std::string kernelName() const override { return "kv_cache_update rows"; }

 private:
  std::vector<int64_t> cache_;
  int64_t added_;
  size_t elementBytes_;
};

/// The row strides, per dim of `x` but the last, of a rotary table of `sizes` broadcast to `x`;
/// nullopt unless it broadcasts with its last dim x's (D) whole.
std::optional<std::vector<int64_t>> tableRowStrides(const std::vector<int64_t> &sizes, const std::vector<int64_t> &x) {
  std::optional<std::vector<int64_t>> strides = broadcastStrides(sizes, x);
  if (!strides || sizes.empty() || sizes.back() != x.back()) return std::nullopt;
  strides->pop_back();
  for (int64_t &stride : *strides) stride /= x.back();
  return strides;
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerRotaryEmbedding(LowerContext &ctx) {
  if (ctx.numInputs() != 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2)) {
    return makeError(ErrorCode::InvalidModel, "RotaryEmbedding: needs inputs X, Cos and Sin; got {}",
                     ctx.numInputs());
  }
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.inputDType(i) != DType::Float32) return std::unique_ptr<Step>();  // The reference covers the rest.
  }
  const std::vector<int64_t> x = ctx.inputSizes(0);
  if (x.empty() || x.back() % 2 != 0) {
    return makeError(ErrorCode::ShapeMismatch, "RotaryEmbedding: X is {}; its last dim must be even", formatSizes(x));
  }
  const std::vector<int64_t> leading(x.begin(), x.end() - 1);
  const auto cosStrides = tableRowStrides(ctx.inputSizes(1), x);
  const auto sinStrides = tableRowStrides(ctx.inputSizes(2), x);
  if (!cosStrides || !sinStrides) return std::unique_ptr<Step>();  // Tables broadcast along D: the reference.
  return std::unique_ptr<Step>(
      std::make_unique<RotaryEmbeddingStep>(RotaryTables{leading, *cosStrides, *sinStrides}, x.back()));
}

Expected<std::unique_ptr<Step>> lowerKvCacheUpdate(LowerContext &ctx) {
  if (ctx.numInputs() != 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return makeError(ErrorCode::InvalidModel, "KvCacheUpdate: needs inputs Cache, New and Position; got {}",
                     ctx.numInputs());
  const std::vector<int64_t> cache = ctx.inputSizes(0), added = ctx.inputSizes(1);
  if (cache.size() != 4 || added.size() != 4 || added[0] != cache[0] || added[1] != cache[1] ||
      added[3] != cache[3] || ctx.inputDType(0) != ctx.inputDType(1) || ctx.inputDType(2) != DType::Int64 ||
      numElements(ctx.inputSizes(2)) != 1)
    return makeError(ErrorCode::ShapeMismatch,
                     "KvCacheUpdate: Cache {}, New {} and Position {} do not form [B,H,C,D], [B,H,N,D] and one int64",
                     formatSizes(cache), formatSizes(added), formatSizes(ctx.inputSizes(2)));
  return std::unique_ptr<Step>(std::make_unique<KvCacheUpdateStep>(cache, added[2], dtypeSize(ctx.inputDType(0))));
}

Expected<std::unique_ptr<Step>> lowerAttention(LowerContext &ctx) {
  if (ctx.numInputs() < 3 || !ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2)) {
    return makeError(ErrorCode::InvalidModel, "Attention: needs inputs Q, K and V; got {}", ctx.numInputs());
  }
  const bool hasMask = ctx.numInputs() > 3 && ctx.hasInput(3);
  for (size_t i = 0; i < (hasMask ? 4u : 3u); ++i) {
    if (ctx.inputDType(i) != DType::Float32) return std::unique_ptr<Step>();  // The reference covers the rest.
  }
  if (ctx.outputDType(0) != DType::Float32) return std::unique_ptr<Step>();
  const std::vector<int64_t> q = ctx.inputSizes(0), k = ctx.inputSizes(1), v = ctx.inputSizes(2);
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || k[0] != q[0] || k[1] <= 0 || q[1] % k[1] != 0 ||
      k[3] != q[3] || v[0] != q[0] || v[1] != k[1] || v[2] != k[2]) {
    return makeError(ErrorCode::ShapeMismatch,
                     "Attention: Q {}, K {} and V {} do not form [B,H,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv] with Hkv "
                     "dividing H",
                     formatSizes(q), formatSizes(k), formatSizes(v));
  }
  AttentionShape shape{q[0], q[1], q[2], k[2], q[3], v[3]};
  shape.kvHeads = k[1];
  const std::vector<int64_t> outSizes = {q[0], q[1], q[2], v[3]};
  if (ctx.outputSizes(0) != outSizes) {
    return makeError(ErrorCode::ShapeMismatch, "Attention: output is {}; Q and V give {}",
                     formatSizes(ctx.outputSizes(0)), formatSizes(outSizes));
  }
  const float scale = ctx.node().attrFloat("scale", 0.0f);
  shape.scale = scale != 0.0f ? scale : float(1.0 / std::sqrt(double(std::max<int64_t>(shape.depth, 1))));
  shape.causal = ctx.node().attrInt("causal", 0) != 0;
  if (hasMask) {
    const std::vector<int64_t> mask = ctx.inputSizes(3);
    const std::vector<int64_t> scores = {shape.batch, shape.heads, shape.queries, shape.keys};
    const std::optional<std::vector<int64_t>> strides = broadcastStrides(mask, scores);
    if (!strides) {
      return makeError(ErrorCode::ShapeMismatch, "Attention: Mask has shape {}; expected one that broadcasts to {}",
                       formatSizes(mask), formatSizes(scores));
    }
    std::copy(strides->begin(), strides->end(), shape.maskStrides);
  }
  return std::unique_ptr<Step>(
      std::make_unique<AttentionStep>(shape, selectedAttentionKernels(), hasMask, ctx.threads()));
}

}  // namespace tessel::cpu
