// cpu lowering of the elementwise family to the kernels of kernels/elementwise.h: unary ops (and
// Pow with a constant exponent of 0.5, 1, 2 or 3) as one flat threaded loop; binary ops with ONNX
// multidirectional broadcasting as rows of a BroadcastLayout (same shape, scalar, and leading or
// trailing blocks such as [B,S,768] + [768] or [B,C,H,W] * [1,C,1,1] all run whole vector rows);
// Where and FusedElementwise (tessel) as a register program (kernels/elementwise_program.h)
// compiled from the node or its `body` graph; Cast among f32, i64, i32 and bool. Covered: f32 data
// (bool for Where's condition); anything else, pre-opset-7 broadcasting and ops outside the list
// run the reference kernel.
#include "targets/cpu/kernels/elementwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>

#include "targets/cpu/kernels/elementwise_program.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {

Expected<std::unique_ptr<Step>> lowerBinaryElementwise(LowerContext &ctx);

namespace {

/// What a lowering returns for a node its kernels do not cover: the reference kernel runs it.
Expected<std::unique_ptr<Step>> notCovered() { return std::unique_ptr<Step>(); }

int64_t numElementsOf(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// A Diagnostic naming the node's op: "Add: input 1 has size 3 at dim 0; ...".
Diagnostic opError(const LowerContext &ctx, const Diagnostic &diag) {
  return makeError(diag.code, "{} '{}': {}", ctx.node().opType(), ctx.node().name(), diag.message);
}

/// What a lowering knows about an input slot that must be a scalar constant (Clip's bounds, Pow's
/// exponent): whether it is used, and its value when it is a one-element f32 constant.
struct ScalarInput {
  bool present = false;  // The input slot is used.
  bool known = false;    // Its value is a known one-element constant.
  float value = 0;
};
using ScalarLookup = std::function<ScalarInput(size_t input)>;

struct UnaryChoice {
  UnaryOp op;
  UnaryParams params;
};

/// The unary op a node computes, or nullopt when it is not one the loops cover. `scalar` reads
/// constant inputs (Clip's bounds, Pow's exponent).
std::optional<UnaryChoice> unaryChoiceFor(const Node &node, const ScalarLookup &scalar) {
  const std::string &op = node.opType();
  const bool tessel = node.domain() == "tessel";
  if (tessel) {
    if (op != "Gelu") return std::nullopt;
    const std::string approximate = node.attrString("approximate", "none");
    if (approximate == "none") return UnaryChoice{UnaryOp::Gelu, {}};
    if (approximate == "tanh") return UnaryChoice{UnaryOp::GeluTanh, {}};
    return std::nullopt;
  }
  if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
  static const std::unordered_map<std::string, UnaryOp> kPlain = {{"Relu", UnaryOp::Relu},
                                                                  {"Sigmoid", UnaryOp::Sigmoid},
                                                                  {"Tanh", UnaryOp::Tanh},
                                                                  {"Exp", UnaryOp::Exp},
                                                                  {"Log", UnaryOp::Log},
                                                                  {"Sqrt", UnaryOp::Sqrt},
                                                                  {"Neg", UnaryOp::Neg},
                                                                  {"Reciprocal", UnaryOp::Reciprocal},
                                                                  {"Abs", UnaryOp::Abs},
                                                                  {"Erf", UnaryOp::Erf},
                                                                  {"HardSwish", UnaryOp::HardSwish},
                                                                  {"Softplus", UnaryOp::Softplus},
                                                                  {"Round", UnaryOp::Round},
                                                                  {"Floor", UnaryOp::Floor},
                                                                  {"Ceil", UnaryOp::Ceil},
                                                                  {"Identity", UnaryOp::Identity}};
  if (auto it = kPlain.find(op); it != kPlain.end()) return UnaryChoice{it->second, {}};
  if (op == "LeakyRelu") return UnaryChoice{UnaryOp::LeakyRelu, {node.attrFloat("alpha", 0.01f), 0}};
  if (op == "HardSigmoid") {
    return UnaryChoice{UnaryOp::HardSigmoid, {node.attrFloat("alpha", 0.2f), node.attrFloat("beta", 0.5f)}};
  }
  if (op == "Clip") {
    UnaryParams bounds{-__builtin_inff(), __builtin_inff()};
    if (node.inputs().size() > 1) {
      // Opset 11+: optional constant inputs min and max.
      for (size_t i : {size_t{1}, size_t{2}}) {
        const ScalarInput bound = scalar(i);
        if (!bound.present) continue;
        if (!bound.known) return std::nullopt;
        (i == 1 ? bounds.alpha : bounds.beta) = bound.value;
      }
    } else {
      if (node.hasAttr("min")) bounds.alpha = node.attrFloat("min", 0);
      if (node.hasAttr("max")) bounds.beta = node.attrFloat("max", 0);
    }
    return UnaryChoice{UnaryOp::Clip, bounds};
  }
  if (op == "Pow") {
    const ScalarInput exponent = scalar(1);
    if (!exponent.known) return std::nullopt;
    if (exponent.value == 2.0f) return UnaryChoice{UnaryOp::Square, {}};
    if (exponent.value == 0.5f) return UnaryChoice{UnaryOp::Sqrt, {}};
    if (exponent.value == 3.0f) return UnaryChoice{UnaryOp::Cube, {}};
    if (exponent.value == 1.0f) return UnaryChoice{UnaryOp::Identity, {}};
    return std::nullopt;
  }
  if (op == "Cast" && node.attrInt("to", 0) == static_cast<int64_t>(DType::Float32)) {
    return UnaryChoice{UnaryOp::Identity, {}};
  }
  return std::nullopt;
}

std::optional<BinaryOp> binaryOpFor(const Node &node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
  if (node.inputs().size() != 2) return std::nullopt;
  static const std::unordered_map<std::string, BinaryOp> kOps = {
      {"Add", BinaryOp::Add}, {"Sub", BinaryOp::Sub}, {"Mul", BinaryOp::Mul}, {"Div", BinaryOp::Div},
      {"Pow", BinaryOp::Pow}, {"Max", BinaryOp::Max}, {"Min", BinaryOp::Min}};
  auto it = kOps.find(node.opType());
  if (it == kOps.end()) return std::nullopt;
  return it->second;
}

/// A one-element f32 tensor's value.
std::optional<float> scalarValueOf(const Tensor &t) {
  if (t.dtype() != DType::Float32 || t.numel() != 1) return std::nullopt;
  return t.data<float>()[0];
}

ScalarLookup contextScalars(const LowerContext &ctx) {
  return [&ctx](size_t i) {
    ScalarInput result;
    result.present = i < ctx.numInputs() && ctx.hasInput(i);
    if (!result.present) return result;
    if (const Tensor *t = ctx.constantInput(i)) {
      if (auto v = scalarValueOf(*t)) result = {true, true, *v};
    }
    return result;
  };
}

bool float32Output(const LowerContext &ctx) { return ctx.outputDType(0) == DType::Float32; }

/// The first f32 input with exactly the output's sizes, which the output may overwrite, or -1.
int sameShapeInput(const LowerContext &ctx, size_t count) {
  const std::vector<int64_t> out = ctx.outputSizes(0);
  for (size_t i = 0; i < count; ++i) {
    if (ctx.hasInput(i) && ctx.inputDType(i) == DType::Float32 && ctx.inputSizes(i) == out) return int(i);
  }
  return -1;
}

class UnaryStep final : public Step {
 public:
  UnaryStep(UnaryChoice choice, int64_t n) : choice_(choice), n_(n) {}
  Status run(const StepIo &io) const override {
    runUnary(elementwiseKernels(), choice_.op, choice_.params, static_cast<const float *>(io.inputs[0]),
             static_cast<float *>(io.outputs[0]), n_, io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return 0; }
  std::string kernelName() const override { return std::string("elementwise_unary ") + elementwiseKernels().name; }

 private:
  UnaryChoice choice_;
  int64_t n_;
};

class CastStep final : public Step {
 public:
  CastStep(CastType from, CastType to, int64_t n) : from_(from), to_(to), n_(n) {}
  Status run(const StepIo &io) const override {
    runCast(from_, to_, io.inputs[0], io.outputs[0], n_, io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return from_ == to_ ? 0 : -1; }
  std::string kernelName() const override { return "cast"; }

 private:
  CastType from_, to_;
  int64_t n_;
};

std::optional<CastType> castTypeOf(DType dtype) {
  switch (dtype) {
    case DType::Float32: return CastType::F32;
    case DType::Int64: return CastType::I64;
    case DType::Int32: return CastType::I32;
    case DType::Bool: return CastType::Bool;
    default: return std::nullopt;
  }
}

class BinaryStep final : public Step {
 public:
  BinaryStep(BinaryOp op, BroadcastLayout layout, int inPlace)
      : op_(op), layout_(std::move(layout)), inPlace_(inPlace) {}
  Status run(const StepIo &io) const override {
    runBinary(elementwiseKernels(), op_, layout_, static_cast<const float *>(io.inputs[0]),
              static_cast<const float *>(io.inputs[1]), static_cast<float *>(io.outputs[0]), io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return inPlace_; }
  std::string kernelName() const override {
    // Rows where one side is a repeated value, rows of two vectors, or one flat run.
    const bool scalarRows = !layout_.innerContiguous[0] || !layout_.innerContiguous[1];
    const char *form = scalarRows ? "scalar_rows" : layout_.rows > 1 ? "broadcast_rows" : "flat";
    return fmt::format("elementwise_binary_{} {}", form, elementwiseKernels().name);
  }

 private:
  BinaryOp op_;
  BroadcastLayout layout_;
  int inPlace_;
};

class ProgramStep final : public Step {
 public:
  ProgramStep(ElementwiseProgram program, int inPlace) : program_(std::move(program)), inPlace_(inPlace) {}
  Status run(const StepIo &io) const override {
    runElementwiseProgram(elementwiseKernels(), program_, io.inputs, static_cast<float *>(io.outputs[0]), io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return inPlace_; }
  std::string kernelName() const override { return program_.describe() + " " + elementwiseKernels().name; }

 private:
  ElementwiseProgram program_;
  int inPlace_;
};

/// Compiles a graph of elementwise ops into a register program; nullopt (no error) when something
/// in it is not covered.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(int64_t numel) { program_.numel = numel; }

  /// Sets up input i of `sizes` (bool when isBool) against the output's sizes.
  Status addInput(const std::vector<int64_t> &sizes, bool isBool, const std::vector<int64_t> &outSizes) {
    ProgramInput input;
    input.isBool = isBool;
    TESSEL_ASSIGN_OR_RETURN(input.layout, planBroadcast({sizes}, outSizes));
    const int64_t numel = numElementsOf(sizes);
    if (!isBool && numel == program_.numel) {
      input.load = ProgramLoad::Full;  // Broadcastable with as many elements: the same layout.
    } else if (!isBool && numel == 1) {
      input.load = ProgramLoad::Scalar;
    } else {
      input.load = ProgramLoad::Broadcast;
      input.gatherRegister = program_.temporaries++;
    }
    program_.inputs.push_back(std::move(input));
    return Status::success();
  }

  ProgramOperand inputOperand(size_t i) const {
    return {ProgramOperand::Kind::Input, int(i), program_.inputs[i].load == ProgramLoad::Scalar};
  }
  ProgramOperand constantOperand(float value) {
    program_.constants.push_back(value);
    return {ProgramOperand::Kind::Constant, int(program_.constants.size() - 1), true};
  }

  /// Appends an instruction reading `sources`; returns its result operand, or nullopt when the
  /// registers run out.
  std::optional<ProgramOperand> emit(ProgramInstruction instruction, int numSources) {
    instruction.scalar = true;
    for (int s = 0; s < numSources; ++s) instruction.scalar = instruction.scalar && instruction.sources[s].scalar;
    int reg;
    if (!free_.empty()) {
      reg = free_.back();
      free_.pop_back();
    } else {
      if (program_.temporaries >= kProgramMaxTemporaries) return std::nullopt;
      reg = program_.temporaries++;
    }
    instruction.destination = reg;
    program_.code.push_back(instruction);
    return ProgramOperand{ProgramOperand::Kind::Temporary, reg, instruction.scalar};
  }

  /// Returns a temporary to the free list once its value is dead.
  void release(const ProgramOperand &operand) {
    if (operand.kind == ProgramOperand::Kind::Temporary) free_.push_back(operand.index);
  }

  ElementwiseProgram finish() { return std::move(program_); }
  const ElementwiseProgram &program() const { return program_; }

 private:
  ElementwiseProgram program_;
  std::vector<int> free_;
};

/// Emits the instruction for one elementwise node whose inputs are `operands`; false when the
/// node is not covered.
bool emitNode(ProgramBuilder &builder, const Node &node, const std::vector<std::optional<ProgramOperand>> &operands,
              const std::vector<std::optional<float>> &constants, ProgramOperand *result) {
  ScalarLookup scalar = [&](size_t i) {
    ScalarInput r;
    r.present = i < operands.size() && operands[i].has_value();
    if (r.present && i < constants.size() && constants[i]) r = {true, true, *constants[i]};
    return r;
  };
  ProgramInstruction instruction;
  int numSources = 0;
  if (node.opType() == "Where" && (node.domain().empty() || node.domain() == "ai.onnx") && operands.size() == 3) {
    instruction.kind = ProgramInstruction::Kind::Select;
    numSources = 3;
  } else if (auto choice = unaryChoiceFor(node, scalar)) {
    instruction.kind = ProgramInstruction::Kind::Unary;
    instruction.unary = choice->op;
    instruction.params = choice->params;
    numSources = 1;
  } else if (auto binary = binaryOpFor(node)) {
    instruction.kind = ProgramInstruction::Kind::Binary;
    instruction.binary = *binary;
    numSources = 2;
  } else {
    return false;
  }
  for (int s = 0; s < numSources; ++s) {
    if (size_t(s) >= operands.size() || !operands[size_t(s)]) return false;
    instruction.sources[s] = *operands[size_t(s)];
  }
  auto emitted = builder.emit(instruction, numSources);
  if (!emitted) return false;
  *result = *emitted;
  return true;
}

/// Builds the program of a FusedElementwise body; nullopt when the body holds anything the
/// program does not cover.
Expected<std::optional<ElementwiseProgram>> compileBody(const LowerContext &ctx, const Graph &body) {
  const std::vector<int64_t> outSizes = ctx.outputSizes(0);
  ProgramBuilder builder(numElementsOf(outSizes));
  std::unordered_map<const Value *, ProgramOperand> operands;
  std::unordered_map<const Value *, float> constants;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) return std::optional<ElementwiseProgram>();
    const DType dtype = ctx.inputDType(i);
    if (dtype != DType::Float32 && dtype != DType::Bool) return std::optional<ElementwiseProgram>();
    Status status = builder.addInput(ctx.inputSizes(i), dtype == DType::Bool, outSizes);
    if (!status.ok()) return opError(ctx, status.diag());
    operands[body.inputs()[i]] = builder.inputOperand(i);
  }
  if (builder.program().temporaries > kProgramMaxTemporaries) return std::optional<ElementwiseProgram>();
  auto constantOf = [&](const Value *value) -> std::optional<float> {
    if (auto it = constants.find(value); it != constants.end()) return it->second;
    if (value->hasInitializer()) return scalarValueOf(value->initializer());
    return std::nullopt;
  };
  auto operandOf = [&](const Value *value) -> std::optional<ProgramOperand> {
    if (value == nullptr) return std::nullopt;
    if (auto it = operands.find(value); it != operands.end()) return it->second;
    // A one-element initializer of the body or of an enclosing graph.
    if (auto v = constantOf(value)) {
      ProgramOperand operand = builder.constantOperand(*v);
      operands[value] = operand;
      return operand;
    }
    return std::nullopt;
  };
  // Where each value is last read, so its register can be reused after that node.
  std::unordered_map<const Value *, const Node *> lastUse;
  for (const auto &node : body.nodes()) {
    for (const Value *input : node->inputs()) lastUse[input] = node.get();
  }
  const Value *result = body.outputs()[0];
  for (const auto &nodePtr : body.nodes()) {
    const Node &node = *nodePtr;
    if (node.outputs().size() != 1 || node.output(0) == nullptr) return std::optional<ElementwiseProgram>();
    if (node.opType() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx")) {
      const Tensor *value = node.attrTensor("value");
      std::optional<float> scalar = value ? scalarValueOf(*value) : std::nullopt;
      if (!scalar && node.hasAttr("value_float")) scalar = node.attrFloat("value_float", 0);
      if (!scalar) return std::optional<ElementwiseProgram>();
      constants[node.output(0)] = *scalar;
      continue;
    }
    std::vector<std::optional<ProgramOperand>> sources;
    std::vector<std::optional<float>> sourceConstants;
    for (const Value *input : node.inputs()) {
      sources.push_back(operandOf(input));
      sourceConstants.push_back(input ? constantOf(input) : std::nullopt);
      if (input != nullptr && !sources.back()) return std::optional<ElementwiseProgram>();
    }
    ProgramOperand out;
    if (!emitNode(builder, node, sources, sourceConstants, &out)) return std::optional<ElementwiseProgram>();
    // Sources whose last reader is this node free their registers (the result is never freed).
    std::vector<int> released;
    for (const Value *input : node.inputs()) {
      if (input == nullptr || input == result || lastUse[input] != &node) continue;
      const ProgramOperand &operand = operands[input];
      if (operand.kind != ProgramOperand::Kind::Temporary) continue;
      if (std::find(released.begin(), released.end(), operand.index) != released.end()) continue;
      released.push_back(operand.index);
      builder.release(operand);
    }
    operands[node.output(0)] = out;
  }
  auto resultOperand = operandOf(result);
  if (!resultOperand) return std::optional<ElementwiseProgram>();
  const auto &code = builder.program().code;
  const bool lastWritesResult = !code.empty() && resultOperand->kind == ProgramOperand::Kind::Temporary &&
                                code.back().destination == resultOperand->index;
  if (!lastWritesResult) {
    ProgramInstruction copy;
    copy.unary = UnaryOp::Identity;
    copy.sources[0] = *resultOperand;
    if (!builder.emit(copy, 1)) return std::optional<ElementwiseProgram>();
  }
  return std::optional<ElementwiseProgram>(builder.finish());
}

/// The program of a single Where node.
Expected<std::optional<ElementwiseProgram>> compileWhere(const LowerContext &ctx) {
  const std::vector<int64_t> outSizes = ctx.outputSizes(0);
  ProgramBuilder builder(numElementsOf(outSizes));
  for (size_t i = 0; i < 3; ++i) {
    const DType want = i == 0 ? DType::Bool : DType::Float32;
    if (!ctx.hasInput(i) || ctx.inputDType(i) != want) return std::optional<ElementwiseProgram>();
    Status status = builder.addInput(ctx.inputSizes(i), i == 0, outSizes);
    if (!status.ok()) return opError(ctx, status.diag());
  }
  ProgramInstruction select;
  select.kind = ProgramInstruction::Kind::Select;
  for (int s = 0; s < 3; ++s) select.sources[s] = builder.inputOperand(size_t(s));
  if (!builder.emit(select, 3)) return std::optional<ElementwiseProgram>();
  return std::optional<ElementwiseProgram>(builder.finish());
}

/// In place for a program: a Full f32 input with exactly the output's sizes.
int programInPlaceInput(const LowerContext &ctx, const ElementwiseProgram &program) {
  const std::vector<int64_t> out = ctx.outputSizes(0);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (program.inputs[i].load == ProgramLoad::Full && !program.inputs[i].isBool && ctx.inputSizes(i) == out) {
      return int(i);
    }
  }
  return -1;
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerUnaryElementwise(LowerContext &ctx) {
  if (!ctx.hasInput(0) || ctx.inputDType(0) != DType::Float32 || !float32Output(ctx)) return notCovered();
  const auto choice = unaryChoiceFor(ctx.node(), contextScalars(ctx));
  if (!choice) {
    // Pow with a general exponent is a binary op.
    if (ctx.node().opType() == "Pow") return lowerBinaryElementwise(ctx);
    return notCovered();
  }
  // Only input 0 is data (Clip's bounds and Pow's exponent were folded in), so the step reads it alone.
  if (ctx.inputSizes(0) != ctx.outputSizes(0)) {
    if (ctx.node().opType() != "Pow") return notCovered();
    return lowerBinaryElementwise(ctx);  // The exponent broadcasts the base up.
  }
  return std::unique_ptr<Step>(std::make_unique<UnaryStep>(*choice, numElementsOf(ctx.outputSizes(0))));
}

Expected<std::unique_ptr<Step>> lowerCast(LowerContext &ctx) {
  if (!ctx.hasInput(0)) return notCovered();
  const auto from = castTypeOf(ctx.inputDType(0)), to = castTypeOf(ctx.outputDType(0));
  if (!from || !to) return notCovered();
  // Only the `to` attribute form (opset 6+); the string form of Cast-1 is the reference's.
  const Attribute *attr = ctx.node().findAttr("to");
  if (attr == nullptr || !attr->is<int64_t>()) return notCovered();
  return std::unique_ptr<Step>(std::make_unique<CastStep>(*from, *to, numElementsOf(ctx.outputSizes(0))));
}

Expected<std::unique_ptr<Step>> lowerBinaryElementwise(LowerContext &ctx) {
  const auto op = binaryOpFor(ctx.node());
  if (!op || !float32Output(ctx)) return notCovered();
  // Before opset 7, binary ops broadcast only with `broadcast` = 1 and an `axis`; the reference has it.
  if (ctx.opset() < 7) return notCovered();
  for (size_t i = 0; i < 2; ++i) {
    if (!ctx.hasInput(i) || ctx.inputDType(i) != DType::Float32) return notCovered();
  }
  auto layout = planBroadcast({ctx.inputSizes(0), ctx.inputSizes(1)}, ctx.outputSizes(0));
  if (!layout.ok()) return opError(ctx, layout.diag());
  return std::unique_ptr<Step>(std::make_unique<BinaryStep>(*op, std::move(*layout), sameShapeInput(ctx, 2)));
}

Expected<std::unique_ptr<Step>> lowerWhere(LowerContext &ctx) {
  if (!float32Output(ctx)) return notCovered();
  TESSEL_ASSIGN_OR_RETURN(std::optional<ElementwiseProgram> program, compileWhere(ctx));
  if (!program) return notCovered();
  const int inPlace = programInPlaceInput(ctx, *program);
  return std::unique_ptr<Step>(std::make_unique<ProgramStep>(std::move(*program), inPlace));
}

Expected<std::unique_ptr<Step>> lowerFusedElementwise(LowerContext &ctx) {
  const Node &node = ctx.node();
  const Graph *body = node.attrGraph("body");
  if (body == nullptr)
    return makeError(ErrorCode::InvalidModel, "FusedElementwise '{}' has no body graph", node.name());
  if (body->inputs().size() != ctx.numInputs() || body->outputs().size() != 1) {
    return makeError(ErrorCode::InvalidModel,
                     "FusedElementwise '{}': the body has {} inputs and {} outputs; expected {} and 1", node.name(),
                     body->inputs().size(), body->outputs().size(), ctx.numInputs());
  }
  if (!float32Output(ctx)) return notCovered();
  TESSEL_ASSIGN_OR_RETURN(std::optional<ElementwiseProgram> program, compileBody(ctx, *body));
  if (!program) return notCovered();
  const int inPlace = programInPlaceInput(ctx, *program);
  return std::unique_ptr<Step>(std::make_unique<ProgramStep>(std::move(*program), inPlace));
}

}  // namespace tessel::cpu
