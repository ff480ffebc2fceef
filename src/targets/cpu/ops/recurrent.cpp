// cpu lowering of LSTM, GRU and RNN to kernels/recurrent.h: f32, the ONNX default activations,
// any direction, layout 0 or 1, clip, initial states and sequence_lens fed at run time. Weights
// are packed (W transposed for the projection GEMM, R transposed per direction for the per-step
// products, the state-independent biases summed): once when constant, by each run when fed.
// Custom activations and LSTM's input_forget run the reference kernel.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "targets/cpu/kernels/recurrent.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

Expected<std::unique_ptr<Step>> notCovered() { return std::unique_ptr<Step>(); }

constexpr size_t kLensBytes = 64;  // sequence_lens as int64, at the start of scratch, per 8 entries.

size_t lensBytes(int64_t batch) { return (static_cast<size_t>(batch) * 8 + kLensBytes - 1) / kLensBytes * kLensBytes; }

const void *inputAt(const StepIo &io, size_t i) { return i < io.inputs.size() ? io.inputs[i] : nullptr; }
void *outputAt(const StepIo &io, size_t i) { return i < io.outputs.size() ? io.outputs[i] : nullptr; }

// The packed weights, from the raw W, R, B (null: zeros) of a node with `shape`.
void packW(const GemmKernel &kernel, const RecurrentShape &shape, const float *w, std::byte *dst) {
  packBInto(kernel, shape.input, shape.directions * shape.gates * shape.hidden, w, shape.input,
            reinterpret_cast<float *>(dst), /*transposed=*/true);
}

/// Wb + Rb per gate; GRU's h-gate recurrent bias sits inside r * (...) or next to R_h (r * h), so
/// it is not summed here but kept apart (packRbh).
void packBias(const RecurrentShape &shape, const float *b, std::byte *dst) {
  auto *out = reinterpret_cast<float *>(dst);
  const int64_t h = shape.hidden, gh = shape.gates * h;
  for (int64_t dir = 0; dir < shape.directions; ++dir) {
    for (int64_t i = 0; i < gh; ++i) {
      const bool keepOut = shape.cell == RecurrentCell::Gru && i >= 2 * h;
      out[dir * gh + i] = b ? b[dir * 2 * gh + i] + (keepOut ? 0.0f : b[dir * 2 * gh + gh + i]) : 0.0f;
    }
  }
}

void packRt(const RecurrentShape &shape, const float *r, std::byte *dst) {
  auto *out = reinterpret_cast<float *>(dst);
  const int64_t h = shape.hidden, gh = shape.gates * h;
  for (int64_t dir = 0; dir < shape.directions; ++dir) {
    for (int64_t row = 0; row < gh; ++row) {
      for (int64_t k = 0; k < h; ++k) out[(dir * h + k) * gh + row] = r[(dir * gh + row) * h + k];
    }
  }
}

void packRbh(const RecurrentShape &shape, const float *b, std::byte *dst) {
  auto *out = reinterpret_cast<float *>(dst);
  const int64_t h = shape.hidden, gh = shape.gates * h;
  for (int64_t dir = 0; dir < shape.directions; ++dir) {
    for (int64_t i = 0; i < h; ++i) out[dir * h + i] = b ? b[dir * 2 * gh + gh + 2 * h + i] : 0.0f;
  }
}

size_t alignBytes(size_t n) { return (n + 63) / 64 * 64; }

/// Bytes of each packed weight, in the order they are laid out when packed at run time.
struct PackedSizes {
  size_t w, bias, rt, rbh;
  explicit PackedSizes(const RecurrentShape &shape)
      : w(packedBSize(selectedGemmKernel(), shape.input, shape.directions * shape.gates * shape.hidden)),
        bias(alignBytes(shape.directions * shape.gates * shape.hidden * sizeof(float))),
        rt(alignBytes(shape.directions * shape.hidden * shape.gates * shape.hidden * sizeof(float))),
        rbh(alignBytes(shape.directions * shape.hidden * sizeof(float))) {}
  size_t total() const { return w + bias + rt + rbh; }
};

class RecurrentStep final : public Step {
 public:
  /// `packAtRun`: W, R and B are fed at run time, so every run packs them into scratch first.
  RecurrentStep(RecurrentShape shape, RecurrentWeights weights, DType lensType, int threads, bool packAtRun)
      : shape_(shape), weights_(weights), lensType_(lensType), threads_(threads), packAtRun_(packAtRun) {}

  Status run(const StepIo &io) const override {
    RecurrentWeights weights = weights_;
    std::byte *scratch = static_cast<std::byte *>(io.scratch) + lensBytes(shape_.batch);
    if (packAtRun_) {
      const PackedSizes sizes(shape_);
      const auto *b = static_cast<const float *>(inputAt(io, 3));
      packW(*weights.w.kernel, shape_, static_cast<const float *>(io.inputs[1]), scratch);
      packBias(shape_, b, scratch + sizes.w);
      packRt(shape_, static_cast<const float *>(io.inputs[2]), scratch + sizes.w + sizes.bias);
      weights.w.data = reinterpret_cast<const float *>(scratch);
      weights.bias = reinterpret_cast<const float *>(scratch + sizes.w);
      weights.rt = reinterpret_cast<const float *>(scratch + sizes.w + sizes.bias);
      if (shape_.cell == RecurrentCell::Gru) {
        packRbh(shape_, b, scratch + sizes.w + sizes.bias + sizes.rt);
        weights.rbh = reinterpret_cast<const float *>(scratch + sizes.w + sizes.bias + sizes.rt);
      }
      weights.p = static_cast<const float *>(inputAt(io, 7));
      scratch += sizes.total();
    }
    const int64_t *lens = nullptr;
    if (const void *fed = inputAt(io, 4)) {
      auto *converted = static_cast<int64_t *>(io.scratch);
      for (int64_t b = 0; b < shape_.batch; ++b) {
        const int64_t len = lensType_ == DType::Int32 ? static_cast<const int32_t *>(fed)[b]
                                                      : static_cast<const int64_t *>(fed)[b];
        if (len < 0 || len > shape_.seq) {
          return makeError(ErrorCode::InvalidArgument, "sequence_lens value {} is outside [0, {}]", len, shape_.seq);
        }
        converted[b] = len;
      }
      lens = converted;
    }
    RecurrentIo rio;
    rio.x = static_cast<const float *>(io.inputs[0]);
    rio.seqLens = lens;
    rio.h0 = static_cast<const float *>(inputAt(io, 5));
    rio.c0 = shape_.cell == RecurrentCell::Lstm ? static_cast<const float *>(inputAt(io, 6)) : nullptr;
    rio.y = static_cast<float *>(outputAt(io, 0));
    rio.yh = static_cast<float *>(outputAt(io, 1));
    rio.yc = shape_.cell == RecurrentCell::Lstm ? static_cast<float *>(outputAt(io, 2)) : nullptr;
    runRecurrent(recurrentKernels(), shape_, weights, rio, scratch, io.pool);
    return Status::success();
  }

  size_t scratchBytes() const override {
    return lensBytes(shape_.batch) + (packAtRun_ ? PackedSizes(shape_).total() : 0) +
           recurrentScratchBytes(shape_, threads_);
  }

  std::string kernelName() const override {
    static constexpr const char *kCells[] = {"rnn", "gru", "lstm"};
    const char *direction = shape_.directions == 2 ? "bidirectional" : shape_.reverse ? "reverse" : "forward";
    return fmt::format("{}_{}{} {} {}", kCells[static_cast<int>(shape_.cell)], direction,
                       packAtRun_ ? " (weights packed per run)" : "", recurrentKernels().name, weights_.w.kernel->name);
  }

 private:
  RecurrentShape shape_;
  RecurrentWeights weights_;
  DType lensType_;
  int threads_;
  bool packAtRun_;
};

bool isDefaultActivationList(const Node &node, const std::vector<std::string> &defaults, int64_t directions) {
  const std::vector<std::string> names = node.attrStrings("activations");
  if (names.empty()) return true;
  if (names.size() != defaults.size() && names.size() != defaults.size() * directions) return false;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name = names[i], want = defaults[i % defaults.size()];
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    std::transform(want.begin(), want.end(), want.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (name != want) return false;
  }
  return true;
}

const float *floats(const Tensor *t) { return t ? static_cast<const float *>(t->rawData()) : nullptr; }

Expected<std::unique_ptr<Step>> lowerRecurrent(LowerContext &ctx, RecurrentCell cell, int64_t gates,
                                               const std::vector<std::string> &defaultActivations) {
  const Node &node = ctx.node();
  if (ctx.inputDType(0) != DType::Float32 || ctx.inputSizes(0).size() != 3) return notCovered();
  // Constant W, R, B and P (every exported model) are packed once; W, R, B and P fed at run time
  // (the ONNX test cases) are packed by each run.
  const bool hasBias = ctx.hasInput(3), hasPeep = ctx.numInputs() > 7 && ctx.hasInput(7);
  const Tensor *w = ctx.constantInput(1), *r = ctx.constantInput(2);
  const Tensor *bias = hasBias ? ctx.constantInput(3) : nullptr;
  const Tensor *peep = hasPeep ? ctx.constantInput(7) : nullptr;
  const bool packAtRun = !w || !r || (hasBias && !bias) || (hasPeep && !peep);
  for (size_t i : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(6), size_t(7)}) {
    if (i < ctx.numInputs() && ctx.hasInput(i) && ctx.inputDType(i) != DType::Float32) return notCovered();
  }
  DType lensType = DType::Undefined;
  if (ctx.numInputs() > 4 && ctx.hasInput(4)) {
    lensType = ctx.inputDType(4);
    if (lensType != DType::Int32 && lensType != DType::Int64) return notCovered();
  }

  RecurrentShape shape;
  shape.cell = cell;
  shape.gates = gates;
  const std::string direction = node.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") return notCovered();
  shape.directions = direction == "bidirectional" ? 2 : 1;
  shape.reverse = direction == "reverse";
  const int64_t layout = node.attrInt("layout", 0);
  if (layout != 0 && layout != 1) return notCovered();
  shape.batchMajor = layout == 1;
  if (!isDefaultActivationList(node, defaultActivations, shape.directions)) return notCovered();
  if (cell == RecurrentCell::Lstm && node.attrInt("input_forget", 0) != 0) return notCovered();
  shape.linearBeforeReset = cell == RecurrentCell::Gru && node.attrInt("linear_before_reset", 0) != 0;
  if (node.hasAttr("clip")) {
    shape.clip = node.attrFloat("clip", 0.0f);
    if (!(shape.clip > 0)) return notCovered();
  }
  const std::vector<int64_t> x = ctx.inputSizes(0);
  shape.seq = shape.batchMajor ? x[1] : x[0];
  shape.batch = shape.batchMajor ? x[0] : x[1];
  shape.input = x[2];
  const std::vector<int64_t> rSizes = ctx.inputSizes(2);
  if (rSizes.size() != 3) return notCovered();
  shape.hidden = node.attrInt("hidden_size", rSizes[2]);
  const int64_t d = shape.directions, h = shape.hidden, gh = gates * h;
  if (h <= 0 || ctx.inputSizes(1) != std::vector<int64_t>{d, gh, shape.input} || rSizes != std::vector<int64_t>{d, gh, h} ||
      (hasBias && ctx.inputSizes(3) != std::vector<int64_t>{d, 2 * gh}) ||
      (hasPeep && ctx.inputSizes(7) != std::vector<int64_t>{d, 3 * h})) {
    return notCovered();  // The reference kernel reports the mismatch.
  }
  const std::vector<int64_t> state =
      shape.batchMajor ? std::vector<int64_t>{shape.batch, d, h} : std::vector<int64_t>{d, shape.batch, h};
  for (size_t i : {size_t(5), size_t(6)}) {
    if (i < ctx.numInputs() && ctx.hasInput(i) && ctx.inputSizes(i) != state) return notCovered();
  }
  if (ctx.numInputs() > 4 && ctx.hasInput(4) && ctx.inputSizes(4) != std::vector<int64_t>{shape.batch}) return notCovered();
  const std::vector<int64_t> y = shape.batchMajor ? std::vector<int64_t>{shape.batch, shape.seq, d, h}
                                                  : std::vector<int64_t>{shape.seq, d, shape.batch, h};
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    if (node.output(o) && ctx.outputSizes(o) != (o == 0 ? y : state)) return notCovered();
  }

  RecurrentWeights weights;
  const GemmKernel &kernel = selectedGemmKernel();
  weights.w = PackedBView{&kernel, shape.input, d * gh, nullptr};
  if (packAtRun) {
    return std::unique_ptr<Step>(std::make_unique<RecurrentStep>(shape, weights, lensType, ctx.threads(), true));
  }
  const PackedSizes sizes(shape);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packedW,
                          ctx.packed("w", sizes.w, [&](std::byte *dst) { packW(kernel, shape, floats(w), dst); }));
  weights.w.data = reinterpret_cast<const float *>(packedW);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *summed,
                          ctx.packed("bias", sizes.bias, [&](std::byte *dst) { packBias(shape, floats(bias), dst); }));
  weights.bias = reinterpret_cast<const float *>(summed);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *rt,
                          ctx.packed("rt", sizes.rt, [&](std::byte *dst) { packRt(shape, floats(r), dst); }));
  weights.rt = reinterpret_cast<const float *>(rt);
  if (cell == RecurrentCell::Gru) {
    TESSEL_ASSIGN_OR_RETURN(const std::byte *rbh,
                            ctx.packed("rbh", sizes.rbh, [&](std::byte *dst) { packRbh(shape, floats(bias), dst); }));
    weights.rbh = reinterpret_cast<const float *>(rbh);
  }
  if (peep) {
    TESSEL_ASSIGN_OR_RETURN(const std::byte *p, ctx.packed("p", d * 3 * h * sizeof(float), [&](std::byte *dst) {
      std::memcpy(dst, peep->rawData(), d * 3 * h * sizeof(float));
    }));
    weights.p = reinterpret_cast<const float *>(p);
  }
  ctx.releaseConstantInput(1);
  ctx.releaseConstantInput(2);
  if (bias) ctx.releaseConstantInput(3);
  if (peep) ctx.releaseConstantInput(7);
  return std::unique_ptr<Step>(std::make_unique<RecurrentStep>(shape, weights, lensType, ctx.threads(), false));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerLstm(LowerContext &ctx) {
  return lowerRecurrent(ctx, RecurrentCell::Lstm, 4, {"Sigmoid", "Tanh", "Tanh"});
}

Expected<std::unique_ptr<Step>> lowerGru(LowerContext &ctx) {
  return lowerRecurrent(ctx, RecurrentCell::Gru, 3, {"Sigmoid", "Tanh"});
}

Expected<std::unique_ptr<Step>> lowerRnn(LowerContext &ctx) { return lowerRecurrent(ctx, RecurrentCell::Rnn, 1, {"Tanh"}); }

}  // namespace tessel::cpu
