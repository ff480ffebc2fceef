// Elementwise ops on DVE and ACT: single ONNX ops (Add, Mul, Relu, HardSwish, ...), tessel Gelu, and tessel
// FusedElementwise, whose body is evaluated op by op on each partition block of the output, so a
// fused chain reads its inputs once and keeps its intermediates in SBUF.
//
// Operands are full tiles (activations, in the output's layout), per-partition scalars (a constant that
// varies only along the partition axis: ACT and DVE take a [P, 1] operand), or immediates (one-element
// constants). Other constants are broadcast to the output's shape at compile time and loaded.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "targets/nc/compiler/epilogue.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/elementwise.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::compiler {
namespace {

using tile::TileView;

/// Columns per instruction (well under the 64K-element limit of section 4.2, so that the chunks of
/// one block pipeline across engines).
constexpr int64_t kColumnChunk = 8192;

const std::map<std::string, ActFunc> &unaryActFuncs() {
  static const std::map<std::string, ActFunc> kFuncs = {
      {"Relu", ActFunc::Relu}, {"Sigmoid", ActFunc::Sigmoid}, {"Tanh", ActFunc::Tanh},
      {"Exp", ActFunc::Exp},   {"Erf", ActFunc::Erf},         {"Sqrt", ActFunc::Sqrt},
      {"Abs", ActFunc::Abs},   {"Log", ActFunc::Log},         {"Reciprocal", ActFunc::Reciprocal},
      {"Softplus", ActFunc::Softplus}, {"Sign", ActFunc::Sign}};
  return kFuncs;
}

/// The binary ops the device computes: one ALU op (kernels::kBinaryAluOps), Div (a reciprocal, then a
/// multiply) and Pow (an immediate power).
const std::set<std::string> &binaryOps() {
  static const std::set<std::string> kOps = [] {
    std::set<std::string> ops = {"Div", "Pow"};
    for (const kernels::BinaryAluOp &entry : kernels::kBinaryAluOps) ops.emplace(entry.onnx);
    return ops;
  }();
  return kOps;
}

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
  if (unaryActFuncs().count(t) || binaryOps().count(t) || t == "Neg" || t == "Identity" || t == "Gelu" ||
      t == "HardSigmoid" || t == "HardSwish")
    return "";
  if (t == "Clip") {
    for (size_t i = 1; i < op.inputs().size(); ++i)
      if (op.input(i) && !op.input(i)->hasInitializer()) return "Clip bounds are not constants";
    return "";
  }
  if (t == "Cast") {
    const int64_t to = op.attrInt("to", 0);
    return to == static_cast<int64_t>(tessel::DType::Float32) ? "" : "Cast to other than float32";
  }
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

std::string checkElementwise(const Node &node, const LoweringOptions &) {
  for (const Node *op : opsOf(node)) {
    if (std::string why = checkOp(*op); !why.empty()) return why;
    // DVE raises to an immediate power only.
    if (op->opType() == "Pow" && !isScalarConstant(node, op->input(1))) return "Pow with a tensor exponent";
  }
  const std::vector<int64_t> outShape = staticShape(node.output(0));
  for (const Value *in : node.inputs()) {
    if (!in || in->hasInitializer()) continue;
    if (staticShape(in) != outShape) return fmt::format("input '{}' broadcasts to the output's shape", in->name());
  }
  return "";
}

/// One operand within a block.
struct Operand {
  enum Kind { Immediate, PartitionScalar, Full } kind = Full;
  float value = 0;
  TileView view;  // PartitionScalar: [pc, 1]; Full: [pc, cols].
};

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
        axis = roomyAxis(shape, axis);
        break;
      }
      TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx_.activation(in));
      if (int64_t a = t.partitionAxis(); a >= 0 && t.isStandard(a)) axis = a;
      break;
    }
    if (rank == 0) axis = 0;
    const int64_t P = ctx_.profile().partitions;

    // Per input: its device form, or how the constant is read.
    std::vector<std::optional<DeviceTensor>> full(node_.inputs().size());
    std::vector<Operand> fixed(node_.inputs().size());
    std::vector<std::vector<TileView>> perPartition(node_.inputs().size());
    for (size_t i = 0; i < node_.inputs().size(); ++i) {
      const Value *in = node_.input(i);
      if (!in) continue;
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
          TESSEL_ASSIGN_OR_RETURN(Operand result, apply(*ops[n], env, target));
          env[ops[n]->output(0)] = result;
          if (last && !(result.kind == Operand::Full && result.view.tile() == dst.tile())) {
            return ctx_.unsupported(node_, "the result does not depend on an activation");
          }
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

  /// `axis`, unless it leaves a partition more than a quarter of SBUF while another axis spreads the
  /// tensor over more partitions (a [1, 1, H, W] map: H rather than the one channel).
  int64_t roomyAxis(const std::vector<int64_t> &shape, int64_t axis) const {
    if (shape.empty() || !crowdsSbuf(shape, axis)) return axis;
    int64_t best = axis;
    for (int64_t a = 0; a < static_cast<int64_t>(shape.size()); ++a)
      if (bytesPerPartition(shape, a) < bytesPerPartition(shape, best)) best = a;
    return best;
  }

  /// Bytes per partition of a tensor of `shape` with `axis` on the partitions.
  int64_t bytesPerPartition(const std::vector<int64_t> &shape, int64_t axis) const {
    const int64_t P = ctx_.profile().partitions;
    const int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    return (shape[axis] + P - 1) / P * (numel / shape[axis]) * dtypeSizeBytes(ctx_.activationDtype());
  }

  /// More than a quarter of SBUF per partition.
  bool crowdsSbuf(const std::vector<int64_t> &shape, int64_t axis) const {
    return bytesPerPartition(shape, axis) * 4 > static_cast<int64_t>(ctx_.profile().sbuf.bytesPerPartition);
  }

  /// The output's storage: for a tensor that crowds SBUF, that of an input read for the last time
  /// when it has the output's form (each chunk of it is read before the same chunk is written), so
  /// that an op on a tensor of more than half of SBUF fits; else new tiles, which leave the next
  /// producer free to run ahead of this op's readers.
  DeviceTensor outputTensor(const Value *y, int64_t axis, const std::vector<std::optional<DeviceTensor>> &full) {
    const std::vector<int64_t> shape = staticShape(y);
    if (shape.empty() || !crowdsSbuf(shape, axis)) return ctx_.allocate(y, axis);
    for (size_t i = 0; i < full.size(); ++i) {
      const Value *in = node_.input(i);
      if (!full[i] || in->hasInitializer() || full[i]->shape != shape || !full[i]->isStandard(axis) ||
          full[i]->dtype != ctx_.activationDtype() || !ctx_.canOverwrite(in, *full[i]))
        continue;
      return *full[i];
    }
    return ctx_.allocate(y, axis);
  }

  Operand fullOf(const TileView &view) { return Operand{Operand::Full, 0, view}; }

  tile::ScalarOperand scalarOf(const Operand &o) {
    if (o.kind == Operand::Immediate) return o.value;
    return o.view;
  }

  /// 1 / s for a scalar operand.
  Operand reciprocal(const Operand &s) {
    if (s.kind == Operand::Immediate) return Operand{Operand::Immediate, 1.0f / s.value, {}};
    TileView r = b_.sbuf(node_.name() + "/rcp", DType::F32, s.view.partitions(), s.view.freeShape());
    b_.activation(r, s.view, ActFunc::Reciprocal);
    return Operand{s.kind, 0, r};
  }

  Expected<Operand> apply(const Node &op, std::map<const Value *, Operand> &env, const TileView &dst) {
    auto operand = [&](size_t i) -> Expected<Operand> {
      auto it = env.find(op.input(i));
      if (it == env.end()) return makeError(ErrorCode::Internal, "elementwise operand '{}' not found", op.input(i)->name());
      return it->second;
    };
    const std::string &t = op.opType();
    TESSEL_ASSIGN_OR_RETURN(Operand a, operand(0));
    if (t == "Identity" || t == "Cast") {
      if (a.kind != Operand::Full) return a;
      b_.copy(dst, a.view);
      return fullOf(dst);
    }
    if (a.kind != Operand::Full && !binaryOps().count(t)) return ctx_.unsupported(node_, t + " of a constant");
    if (auto it = unaryActFuncs().find(t); it != unaryActFuncs().end()) {
      b_.activation(dst, a.view, it->second);
      return fullOf(dst);
    }
    if (t == "Gelu") {
      b_.activation(dst, a.view, op.attrString("approximate", "none") == "tanh" ? ActFunc::GeluApprxTanh : ActFunc::Gelu);
      return fullOf(dst);
    }
    if (t == "Neg") {
      b_.tensorScalar(dst, a.view, AluOp::Multiply, -1.0f);
      return fullOf(dst);
    }
    if (t == "HardSigmoid") {
      emitHardSigmoid(b_, dst, a.view, op.attrFloat("alpha", 0.2f), op.attrFloat("beta", 0.5f));
      return fullOf(dst);
    }
    if (t == "HardSwish") {
      TileView gate = b_.sbuf(node_.name() + "/gate", DType::F32, dst.partitions(), dst.freeShape());
      emitHardSigmoid(b_, gate, a.view, 1.0f / 6.0f, 0.5f);
      b_.tensorTensor(dst, a.view, gate, AluOp::Multiply);
      return fullOf(dst);
    }
    if (t == "Clip") {
      float lo = -INFINITY, hi = INFINITY;
      if (op.input(1)) lo = ctx_.constantFloats(op.input(1))[0];
      if (op.input(2)) hi = ctx_.constantFloats(op.input(2))[0];
      if (op.hasAttr("min")) lo = op.attrFloat("min", lo);
      if (op.hasAttr("max")) hi = op.attrFloat("max", hi);
      b_.tensorScalar(dst, a.view, AluOp::Maximum, std::max(lo, -3.0e38f), AluOp::Minimum, std::min(hi, 3.0e38f),
                      Engine::DVE);
      return fullOf(dst);
    }
    // Binary.
    TESSEL_ASSIGN_OR_RETURN(Operand c, operand(1));
    if (a.kind != Operand::Full && c.kind != Operand::Full) return ctx_.unsupported(node_, t + " of two constants");
    if (t == "Pow") {
      if (a.kind != Operand::Full || c.kind != Operand::Immediate) return ctx_.unsupported(node_, "Pow with a tensor exponent");
      if (c.value == 2.0f) {
        b_.activation(dst, a.view, ActFunc::Square);
      } else if (c.value == 0.5f) {
        b_.activation(dst, a.view, ActFunc::Sqrt);
      } else if (c.value == 1.0f) {
        b_.copy(dst, a.view);
      } else {
        b_.tensorScalar(dst, a.view, AluOp::Power, c.value, AluOp::None, 0.0f, Engine::DVE);
      }
      return fullOf(dst);
    }
    if (t == "Div") {
      if (c.kind == Operand::Full) {
        TileView r = b_.sbuf(node_.name() + "/rcp", DType::F32, c.view.partitions(), c.view.freeShape());
        b_.activation(r, c.view, ActFunc::Reciprocal);
        if (a.kind == Operand::Full) {
          b_.tensorTensor(dst, a.view, r, AluOp::Multiply);
        } else {
          b_.tensorScalar(dst, r, AluOp::Multiply, scalarOf(a));
        }
        return fullOf(dst);
      }
      b_.tensorScalar(dst, a.view, AluOp::Multiply, scalarOf(reciprocal(c)));
      return fullOf(dst);
    }
    const AluOp alu = *kernels::binaryAluOp(t);  // Add, Sub, Mul, Max, Min: the rest returned above.
    if (a.kind == Operand::Full && c.kind == Operand::Full) {
      b_.tensorTensor(dst, a.view, c.view, alu);
    } else if (a.kind == Operand::Full) {
      b_.tensorScalar(dst, a.view, alu, scalarOf(c));
    } else if (t == "Sub") {
      b_.tensorScalar(dst, c.view, AluOp::Multiply, -1.0f, AluOp::Add, scalarOf(a));
    } else {
      b_.tensorScalar(dst, c.view, alu, scalarOf(a));
    }
    return fullOf(dst);
  }

  LoweringContext &ctx_;
  tile::KernelBuilder &b_;
  const Node &node_;
};

Status emitElementwise(LoweringContext &ctx, const Node &node) { return Evaluator(ctx, node).run(); }

}  // namespace

std::vector<OpLowering> elementwiseLowerings() {
  std::vector<OpLowering> v;
  for (const auto &[op, func] : unaryActFuncs()) v.push_back({"", op, checkElementwise, emitElementwise});
  for (const std::string &op : binaryOps()) v.push_back({"", op, checkElementwise, emitElementwise});
  for (const char *op : {"Neg", "Clip", "HardSigmoid", "HardSwish"}) v.push_back({"", op, checkElementwise, emitElementwise});
  v.push_back({"tessel", "Gelu", checkElementwise, emitElementwise});
  v.push_back({"tessel", "FusedElementwise", checkElementwise, emitElementwise});
  return v;
}

}  // namespace tessel::nc::compiler
