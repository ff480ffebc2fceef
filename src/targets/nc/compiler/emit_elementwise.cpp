// Elementwise ops on DVE and ACT: single ONNX ops (Add, Mul, Relu, HardSwish, ...), tessel Gelu, and tessel
// FusedElementwise, whose body is evaluated op by op (kernels::emitElementwiseOp, the elementwise
// family's emit) on each partition block of the output, so a fused chain reads its inputs once and
// keeps its intermediates in SBUF. This file decides the layout and the operands' forms.
//
// Operands are full tiles (activations, in the output's layout), per-partition scalars (a constant that
// varies only along the partition axis; an activation of one element broadcast to every partition; a
// per-channel activation [1, C, 1, 1], channels then on partitions: ACT and DVE take a [P, 1] operand), or immediates (one-element constants). Other constants are broadcast to the output's shape at compile time and loaded.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/elementwise.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::compiler {
namespace {

using tile::TileView;

/// The ops of `node`'s computation: its body for FusedElementwise, else the node itself.
std::vector<const Node *> opsOf(const Node &node) {
  std::vector<const Node *> ops;
  if (node.opType() == "FusedElementwise") {
    for (const auto &n : node.attrGraph("body")->nodes()) ops.push_back(n.get());
  } else {
    ops.push_back(&node);
  }
  return ops;
}

std::string checkOp(const Node &op) {
  const std::string &t = op.opType();
  // Max and Min are variadic; the device computes the two-input form.
  if ((t == "Max" || t == "Min") && op.inputs().size() != 2)
    return fmt::format("{} of {} inputs (the device takes two)", t, op.inputs().size());
  if (t == "Clip") {
    for (size_t i = 1; i < op.inputs().size(); ++i)
      if (op.input(i) && !op.input(i)->hasInitializer()) return "Clip bounds are not constants";
    return "";
  }
  if (t == "Cast") {
    const int64_t to = op.attrInt("to", 0);
    return to == static_cast<int64_t>(tessel::DType::Float32) ? "" : "Cast to other than float32";
  }
  const std::span<const std::string_view> types = kernels::elementwiseOpTypes();
  if (std::find(types.begin(), types.end(), t) != types.end()) return "";
  const std::string_view why = hostOnlyReason(op.domain(), t);
  return fmt::format("{}: {}", t, why.empty() ? "no accelerator form inside a fused elementwise op" : why);
}

/// Whether `v`, an operand of an op of `node` (of its body, for FusedElementwise), is a constant of
/// one element: what the emitter reads as an immediate.
bool isScalarConstant(const Node &node, const Value *v) {
  if (node.opType() == "FusedElementwise") {
    const std::vector<Value *> &bodyInputs = node.attrGraph("body")->inputs();
    if (auto it = std::find(bodyInputs.begin(), bodyInputs.end(), v); it != bodyInputs.end())
      v = node.input(static_cast<size_t>(it - bodyInputs.begin()));
  }
  if (!v || !v->hasInitializer()) return false;
  const std::vector<int64_t> shape = staticShape(v);
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()) == 1;
}

/// Whether `v` has one element: an activation of one element (a scale computed at run time) is read
/// as a per-partition scalar, broadcast to every partition.
bool isOneElement(const Value *v) {
  const std::vector<int64_t> shape = staticShape(v);
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()) == 1;
}

/// Whether activation `v` is one value per channel of a [1, C, H, W] output (a squeeze-excitation
/// gate [1, C, 1, 1]): with the channels on partitions it is a per-partition scalar.
bool isChannelVector(const Value *v, const std::vector<int64_t> &outShape) {
  const std::vector<int64_t> shape = staticShape(v);
  return outShape.size() == 4 && outShape[0] == 1 && outShape[2] * outShape[3] > 1 && shape.size() == 4 &&
         shape[0] == 1 && shape[1] == outShape[1] && shape[2] == 1 && shape[3] == 1;
}

/// Whether activation `in` is read as a one-element per-partition scalar of output `y` (a scale
/// computed at run time), broadcast to every partition: the Evaluator's rule, which the check repeats.
bool isScalarOfOutput(const Value *in, const Value *y) {
  return !in->hasInitializer() && isOneElement(in) && !staticShape(y).empty() && !isOneElement(y);
}

std::string checkElementwise(const Node &node, const LoweringOptions &options) {
  // Which values derive from an activation read whole (the rest from constants, or from activations
  // read as per-partition scalars: one element, or one per channel): every op needs one such operand,
  // so that the emitter writes the output from a tile; ops on constants alone are left to constant
  // folding, and a one-element activation times a constant goes to the host.
  const Graph *body = node.opType() == "FusedElementwise" ? node.attrGraph("body") : nullptr;
  const std::vector<int64_t> outShape = staticShape(node.output(0));
  std::set<const Value *> fromActivation;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Value *in = node.input(i);
    if (!in || in->hasInitializer() || isScalarOfOutput(in, node.output(0)) || isChannelVector(in, outShape)) continue;
    fromActivation.insert(body ? body->inputs()[i] : in);
  }
  for (const Node *op : opsOf(node)) {
    if (std::string why = checkOp(*op); !why.empty()) return why;
    // DVE raises to an immediate power only.
    if (op->opType() == "Pow" && !isScalarConstant(node, op->input(1))) return "Pow with a tensor exponent";
    // A unary op and Pow take their first operand from a tile; another binary op either one.
    const bool eitherOperand = kernels::isBinaryElementwiseOp(op->opType()) && op->opType() != "Pow";
    if (!fromActivation.count(op->input(0)) && !(eitherOperand && fromActivation.count(op->input(1))))
      return fmt::format("{} '{}' reads no activation whole (only constants, or activations of one element or one "
                         "per channel, which are per-partition scalars): no tile to compute its output from",
                         op->opType(), op->name());
    fromActivation.insert(op->output(0));
  }
  bool channelVector = false;
  for (const Value *in : node.inputs()) {
    if (!in || in->hasInitializer() || isOneElement(in)) continue;
    if (isChannelVector(in, outShape)) {
      channelVector = true;
      continue;
    }
    if (staticShape(in) != outShape) return fmt::format("input '{}' broadcasts to the output's shape", in->name());
  }
  // A channel vector fixes the layout: channels on partitions, for the other inputs and the output too.
  if (channelVector && options.profile) {
    int64_t bytes = f32BlockBytes(outShape, 1);
    for (const Value *in : node.inputs())
      if (in && !in->hasInitializer() && staticShape(in) == outShape) bytes += f32BlockBytes(outShape, 1);
    if (bytes > options.profile->sbuf.bytesPerPartition)
      return fmt::format("with a per-channel input, a block of its inputs and output with channels on partitions needs "
                         "{} bytes per partition of SBUF; {} has {}",
                         bytes, options.profile->name, options.profile->sbuf.bytesPerPartition);
  }
  return "";
}

using Operand = kernels::ElementwiseOperand;

class Evaluator {
 public:
  Evaluator(LoweringContext &ctx, const Node &node) : ctx_(ctx), b_(ctx.builder()), node_(node) {}

  Status run() {
    const Value *y = node_.output(0);
    const std::vector<int64_t> shape = staticShape(y);
    const int64_t rank = static_cast<int64_t>(shape.size());
    // The layout: that of the first activation input when it is standard, else the default.
    int64_t axis = rank == 4 ? 1 : rank - 1;
    for (const Value *in : node_.inputs()) {
      if (!in || in->hasInitializer()) continue;
      if (ctx_.isUnloadedInput(in)) {
        axis = ctx_.roomyAxis(shape, axis);
        break;
      }
      TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx_.activation(in));
      if (int64_t a = t.partitionAxis(); a >= 0 && t.isStandard(a)) axis = a;
      break;
    }
    if (rank == 0) axis = 0;
    for (const Value *in : node_.inputs())
      if (in && !in->hasInitializer() && isChannelVector(in, shape)) axis = 1;
    const int64_t P = ctx_.profile().partitions;

    // Per input: its device form, or how the constant is read.
    std::vector<std::optional<DeviceTensor>> full(node_.inputs().size());
    std::vector<Operand> fixed(node_.inputs().size());
    std::vector<std::vector<TileView>> perPartition(node_.inputs().size());
    for (size_t i = 0; i < node_.inputs().size(); ++i) {
      const Value *in = node_.input(i);
      if (!in) continue;
      if (isScalarOfOutput(in, y)) {
        TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx_.activation(in));
        TileView row = t.partitions(t.partitionBase, 1).cols(t.freeBase, 1);
        if (row.dtype() != DType::F32) {
          TileView f32 = b_.sbuf(fmt::format("{}/s{}", node_.name(), i), DType::F32, 1, {1});
          b_.copy(f32, row);
          row = f32;
        }
        const TileView everywhere = ctx_.broadcastRow(row, fmt::format("{}/s{}", node_.name(), i));
        for (int64_t start = 0; start < shape[axis]; start += P)
          perPartition[i].push_back(everywhere.partitionSlice(0, std::min(P, shape[axis] - start)));
        fixed[i].kind = Operand::PartitionScalar;
        continue;
      }
      if (!in->hasInitializer() && isChannelVector(in, shape)) {
        TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx_.standard(in, 1));
        for (int64_t start = 0; start < shape[1]; start += P) {
          TileView column = t.partitions(start, std::min(P, shape[1] - start));
          if (column.dtype() != DType::F32) {
            TileView f32 = b_.sbuf(fmt::format("{}/v{}", node_.name(), i), DType::F32, column.partitions(), {1});
            b_.copy(f32, column);
            column = f32;
          }
          perPartition[i].push_back(column);
        }
        fixed[i].kind = Operand::PartitionScalar;
        continue;
      }
      if (!in->hasInitializer()) {
        TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx_.standard(in, axis));
        full[i] = t;
        continue;
      }
      std::vector<float> values = ctx_.constantFloats(in);
      if (values.size() == 1) {
        fixed[i] = Operand{Operand::Immediate, values[0], {}};
        continue;
      }
      // Broadcast the constant to the output's shape (row-major), then see whether it varies only
      // along the partition axis.
      std::vector<float> expanded = broadcast(values, staticShape(in), shape);
      const int64_t partitions = rank ? shape[axis] : 1;
      std::vector<int64_t> strides(shape.size(), 1);
      for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
      const int64_t axisStride = rank ? strides[axis] : 1;
      std::vector<float> column(static_cast<size_t>(partitions));
      for (int64_t c = 0; c < partitions; ++c) column[static_cast<size_t>(c)] = expanded[static_cast<size_t>(c * axisStride)];
      bool perChannel = true;
      for (int64_t e = 0; perChannel && e < static_cast<int64_t>(expanded.size()); ++e)
        perChannel = expanded[static_cast<size_t>(e)] == column[static_cast<size_t>((e / axisStride) % partitions)];
      if (perChannel) {
        perPartition[i] = ctx_.channelVector(column);
        fixed[i].kind = Operand::PartitionScalar;
        continue;
      }
      tile::HbmView hbm = ctx_.constantHbm(fmt::format("{}/c{}", node_.name(), i), DType::F32, shape, expanded);
      full[i] = ctx_.loadStandard(fmt::format("{}/c{}", node_.name(), i), hbm, shape, axis, DType::F32);
    }
    // An input split over the cores (a column-parallel matmul's output whose readers take it split, emit_matmul.cpp):
    // each core computes its own blocks, reading those of the other inputs, and the output stays split.
    int sharded = 1;
    for (const std::optional<DeviceTensor> &t : full)
      if (t) sharded = std::max(sharded, t->shardedCores);
    for (const std::optional<DeviceTensor> &t : full)
      if (sharded > 1 && t && t->shardedCores > 1 && (t->shardedCores != sharded || !t->isStandard(axis)))
        return ctx_.unsupported(node_, "inputs split over the cores differently");
    DeviceTensor out = sharded > 1 ? ctx_.allocate(y, axis) : outputTensor(y, axis, full);
    out.shardedCores = sharded;

    const std::vector<const Node *> ops = opsOf(node_);
    const Graph *body = node_.opType() == "FusedElementwise" ? node_.attrGraph("body") : nullptr;
    for (size_t k = 0; k < out.blocks.size(); ++k) {
      if (sharded > 1 && static_cast<int>(k) % sharded != ctx_.options().core) continue;
      const int64_t pc = out.blocks[k].partitions();
      for (const kernels::Span &cols : kernels::splitRange(out.freeSize, kColumnChunk)) {
        std::map<const Value *, Operand> env;
        for (size_t i = 0; i < node_.inputs().size(); ++i) {
          const Value *in = node_.input(i);
          if (!in) continue;
          const Value *key = body ? body->inputs()[i] : in;
          if (full[i]) {
            env[key] = Operand{Operand::Full, 0, full[i]->partitions(static_cast<int64_t>(k) * P, pc).cols(cols.start, cols.count)};
          } else if (fixed[i].kind == Operand::PartitionScalar) {
            env[key] = Operand{Operand::PartitionScalar, 0, perPartition[i][k]};
          } else {
            env[key] = fixed[i];
          }
        }
        if (body) {
          for (const Value *init : body->initializers()) {
            std::vector<float> v = ctx_.constantFloats(init);
            env[init] = Operand{Operand::Immediate, v.empty() ? 0.0f : v[0], {}};
          }
        }
        TileView dst = out.blocks[k].cols(cols.start, cols.count);
        for (size_t n = 0; n < ops.size(); ++n) {
          const bool last = n + 1 == ops.size();
          TileView target = last ? dst : b_.sbuf(node_.name() + "/t", DType::F32, pc, {cols.count});
          std::vector<Operand> operands;
          for (size_t i = 0; i < (kernels::isBinaryElementwiseOp(ops[n]->opType()) ? 2 : 1); ++i) {
            auto it = env.find(ops[n]->input(i));
            if (it == env.end())
              return makeError(ErrorCode::Internal, "elementwise operand '{}' not found", ops[n]->input(i)->name());
            operands.push_back(it->second);
          }
          TESSEL_ASSIGN_OR_RETURN(Operand result, kernels::emitElementwiseOp(b_, node_.name(), describe(*ops[n]),
                                                                            operands, target));
          env[ops[n]->output(0)] = result;
        }
      }
    }
    ctx_.define(y, out);
    return Status::success();
  }

 private:
  static std::vector<float> broadcast(const std::vector<float> &values, std::vector<int64_t> from,
                                      const std::vector<int64_t> &to) {
    while (from.size() < to.size()) from.insert(from.begin(), 1);
    int64_t total = 1;
    for (int64_t d : to) total *= d;
    std::vector<float> out(static_cast<size_t>(total));
    for (int64_t e = 0; e < total; ++e) {
      int64_t rem = e, src = 0, stride = 1;
      for (size_t d = to.size(); d-- > 0;) {
        const int64_t idx = rem % to[d];
        rem /= to[d];
        if (from[d] != 1) src += idx * stride;
        stride *= from[d];
      }
      out[static_cast<size_t>(e)] = values[static_cast<size_t>(src)];
    }
    return out;
  }

  /// The output's storage: for a tensor that crowds SBUF, that of an input read for the last time
  /// when it has the output's form (each chunk of it is read before the same chunk is written), so
  /// that an op on a tensor of more than half of SBUF fits; else new tiles, which leave the next
  /// producer free to run ahead of this op's readers.
  DeviceTensor outputTensor(const Value *y, int64_t axis, const std::vector<std::optional<DeviceTensor>> &full) {
    const std::vector<int64_t> shape = staticShape(y);
    if (shape.empty() || !ctx_.crowdsSbuf(shape, axis)) return ctx_.allocate(y, axis);
    for (size_t i = 0; i < full.size(); ++i) {
      const Value *in = node_.input(i);
      if (!full[i] || in->hasInitializer() || full[i]->shape != shape || !full[i]->isStandard(axis) ||
          full[i]->dtype != ctx_.activationDtype() || !ctx_.canOverwrite(in, *full[i]))
        continue;
      return *full[i];
    }
    return ctx_.allocate(y, axis);
  }

  /// `op` with the attributes and constant bounds the emit reads.
  kernels::ElementwiseOp describe(const Node &op) const {
    kernels::ElementwiseOp e{op.opType()};
    e.tanhApproximation = op.attrString("approximate", "none") == "tanh";
    e.alpha = op.attrFloat("alpha", e.alpha);
    e.beta = op.attrFloat("beta", e.beta);
    if (op.opType() == "Clip") {
      if (op.input(1)) e.low = ctx_.constantFloats(op.input(1))[0];
      if (op.input(2)) e.high = ctx_.constantFloats(op.input(2))[0];
      if (op.hasAttr("min")) e.low = op.attrFloat("min", e.low);
      if (op.hasAttr("max")) e.high = op.attrFloat("max", e.high);
    }
    return e;
  }

  LoweringContext &ctx_;
  tile::KernelBuilder &b_;
  const Node &node_;
};

Status emitElementwise(LoweringContext &ctx, const Node &node) { return Evaluator(ctx, node).run(); }

}  // namespace

std::vector<OpLowering> elementwiseLowerings() {
  std::vector<OpLowering> v;
  for (std::string_view op : kernels::elementwiseOpTypes()) {
    // A lone Identity is a view (emit_shape.cpp); a lone Cast stays on the host.
    if (op == "Identity" || op == "Cast") continue;
    v.push_back({op == "Gelu" ? "tessel" : "", std::string(op), checkElementwise, emitElementwise});
  }
  v.push_back({"tessel", "FusedElementwise", checkElementwise, emitElementwise});
  return v;
}

}  // namespace tessel::nc::compiler
