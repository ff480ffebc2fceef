// If, Loop and Scan as nested cpu plans (see control_flow.h): the optimization loop that inlines
// folded Ifs and types control-flow outputs, then the three steps and their planning.
#include "targets/cpu/control_flow.h"

#include <cstring>
#include <set>

#include "passes/infer_shapes.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"
#include "targets/cpu/subgraph.h"

namespace tessel::cpu {
namespace {

// Each round can only uncover Ifs one nesting level deeper; real models nest three or four.
constexpr int kMaxOptimizeRounds = 8;

/// A nested plan's view of the outer constant store: its node names are scoped by the If and the
/// branch, so that two branches (or two Ifs) with equally named nodes never share packed weights.
class ScopedConstants final : public ConstantStore {
 public:
  ScopedConstants(ConstantStore &base, std::string prefix) : base_(base), prefix_(std::move(prefix)) {}
  Expected<const std::byte *> packed(const std::string &node, std::string_view key, size_t bytes,
                                     const std::function<void(std::byte *)> &fill) override {
    return base_.packed(prefix_ + node, key, bytes, fill);
  }

 private:
  ConstantStore &base_;
  std::string prefix_;
};

Status runPasses(Model &model, int optLevel) {
  if (optLevel == 0) {
    // Best effort, as compileCpu does at -O0: a model inference rejects runs with the types it has.
    (void)inferShapes(model);
    return Status::success();
  }
  PassManager passes;
  TESSEL_RETURN_IF_ERROR(addOptimizationPipeline(passes, optLevel));
  return passes.run(model).status();
}

/// The pipeline, through Ifs that inference rejects once shapes are static. ONNX's inference of
/// an If checks both branches, and the branch a static shape rules out may be invalid for that
/// shape (torch's `if x.dim() == 3: x = x.squeeze(1)`). Inference has typed the nodes before the
/// If by then, so folding shapes and constants usually settles its condition: inline it, retry.
Status runPipeline(Model &model, int optLevel) {
  Status status = runPasses(model, optLevel);
  for (int round = 0; !status.ok() && round < kMaxOptimizeRounds; ++round) {
    PassManager folds;
    TESSEL_RETURN_IF_ERROR(folds.addPass("fold-shapes"));
    TESSEL_RETURN_IF_ERROR(folds.addPass("fold-constants"));
    if (!folds.run(model).ok()) return status;
    auto inlined = inlineConstantIfs(model);
    if (!inlined.ok() || !*inlined) return status;
    status = runPasses(model, optLevel);
  }
  return status;
}

bool isStaticTensor(const Type &type) { return type.isTensor() && type.shape().sizes().has_value(); }

/// What optimizing a branch as a standalone model tells about its outputs.
struct BranchTypes {
  bool invalid = false;             // The branch does not optimize for these shapes (an error).
  std::optional<std::vector<Type>> types;  // Its output types, when every one is static.
};

BranchTypes plannedOutputTypes(const Model &outer, const Graph &branch, int optLevel) {
  std::vector<const Value *> inputsFrom;
  Model model = subgraphModel(outer, branch, {}, inputsFrom);
  for (const Value *input : model.graph->inputs()) {
    if (!isStaticTensor(input->type())) return {};
  }
  if (!optimizeForCpu(model, optLevel).ok()) return {.invalid = true, .types = std::nullopt};
  std::vector<Type> types;
  for (const Value *output : model.graph->outputs()) {
    if (!isStaticTensor(output->type())) return {};
    types.push_back(output->type());
  }
  return {.types = std::move(types)};
}

/// Gives the outputs of each If the static types its branches agree on, or those of the one
/// branch that is valid for these shapes (the other fails where it runs). Returns whether any
/// changed.
bool typeIfOutputs(Model &model, int optLevel) {
  bool changed = false;
  for (const auto &node : model.graph->nodes()) {
    if (node->opType() != "If" || !node->domain().empty()) continue;
    bool allStatic = true;
    for (const Value *output : node->outputs()) allStatic = allStatic && (!output || isStaticTensor(output->type()));
    if (allStatic) continue;
    const Graph *thenBranch = node->attrGraph("then_branch");
    const Graph *elseBranch = node->attrGraph("else_branch");
    if (!thenBranch || !elseBranch) continue;
    BranchTypes thenTypes = plannedOutputTypes(model, *thenBranch, optLevel);
    BranchTypes elseTypes = plannedOutputTypes(model, *elseBranch, optLevel);
    std::optional<std::vector<Type>> types;
    if (thenTypes.types && (elseTypes.invalid || thenTypes.types == elseTypes.types)) types = thenTypes.types;
    if (elseTypes.types && thenTypes.invalid) types = elseTypes.types;
    if (!types || types->size() != node->outputs().size()) continue;
    for (size_t o = 0; o < node->outputs().size(); ++o) {
      Value *output = node->output(o);
      if (output && !isStaticTensor(output->type())) {
        output->setType((*types)[o]);
        changed = true;
      }
    }
  }
  return changed;
}

/// The static types of a Loop body's own inputs (iteration number, condition, carried values), or
/// none when an initial carried value has no static type.
std::optional<std::vector<Type>> loopBodyInputTypes(const Node &node) {
  std::vector<Type> types = {Type::tensor(DType::Int64, Shape::fromSizes({})), Type::tensor(DType::Bool, Shape::fromSizes({}))};
  for (size_t i = 2; i < node.inputs().size(); ++i) {
    const Value *initial = node.input(i);
    if (!initial || !isStaticTensor(initial->type())) return std::nullopt;
    types.push_back(initial->type());
  }
  const Graph *body = node.attrGraph("body");
  if (!body || body->inputs().size() != types.size()) return std::nullopt;
  return types;
}

bool isConstantTrue(const Value *value) {
  return value && value->hasInitializer() && !value->isGraphInput() && value->initializer().dtype() == DType::Bool &&
         value->initializer().numel() == 1 && *static_cast<const uint8_t *>(value->initializer().rawData()) != 0;
}

/// The number of iterations a Loop runs, when known before it runs: a constant M, no condition
/// or a constant true one, and a body (optimized, as `body`) whose condition output is constant
/// true or its condition input passed through.
std::optional<int64_t> fixedTripCount(const Node &node, const Model &body) {
  const Value *m = node.input(0);
  if (!m || !m->hasInitializer() || m->isGraphInput() || m->initializer().numel() != 1 ||
      !isInteger(m->initializer().dtype())) {
    return std::nullopt;
  }
  if (node.input(1) && !isConstantTrue(node.input(1))) return std::nullopt;
  const Value *condOut = body.graph->outputs().empty() ? nullptr : body.graph->outputs()[0];
  while (condOut && condOut->producer() && condOut->producer()->opType() == "Identity") {
    condOut = condOut->producer()->input(0);
  }
  if (!isConstantTrue(condOut) && condOut != body.graph->inputs()[1]) return std::nullopt;
  return std::max<int64_t>(0, m->initializer().scalarAsInt64());
}

/// Gives a Loop's outputs static types: the carried values keep their initial types when the body
/// returns them unchanged in type, and scan outputs stack as many rows as a fixed trip count.
bool typeLoopOutputs(Model &model, int optLevel) {
  bool changed = false;
  for (const auto &node : model.graph->nodes()) {
    if (node->opType() != "Loop" || !node->domain().empty()) continue;
    bool allStatic = true;
    for (const Value *output : node->outputs()) allStatic = allStatic && (!output || isStaticTensor(output->type()));
    auto ownTypes = loopBodyInputTypes(*node);
    if (allStatic || !ownTypes) continue;
    std::vector<const Value *> inputsFrom;
    Model body = subgraphModel(model, *node->attrGraph("body"), *ownTypes, inputsFrom);
    bool readsStatic = true;
    for (const Value *input : body.graph->inputs()) readsStatic = readsStatic && isStaticTensor(input->type());
    if (!readsStatic || !optimizeForCpu(body, optLevel).ok()) continue;
    const size_t carried = ownTypes->size() - 2;
    const auto &outputs = body.graph->outputs();
    if (outputs.size() < carried + 1) continue;
    const std::optional<int64_t> trips = fixedTripCount(*node, body);
    for (size_t o = 0; o < node->outputs().size() && 1 + o < outputs.size(); ++o) {
      Value *output = node->output(o);
      const Type &inner = outputs[1 + o]->type();
      if (!output || isStaticTensor(output->type()) || !isStaticTensor(inner)) continue;
      if (o < carried) {
        if (!(inner == (*ownTypes)[2 + o])) continue;
        output->setType(inner);
      } else {
        if (!trips) continue;
        std::vector<int64_t> sizes = *inner.shape().sizes();
        sizes.insert(sizes.begin(), *trips);
        output->setType(Type::tensor(inner.dtype(), Shape::fromSizes(sizes)));
      }
      changed = true;
    }
  }
  return changed;
}

/// A Scan's per-input (per-output) attribute list, defaulted to zeros, or none when malformed.
std::optional<std::vector<int64_t>> scanAttr(const Node &node, const char *name, size_t count) {
  std::vector<int64_t> values = node.attrInts(name, std::vector<int64_t>(count, 0));
  if (values.size() != count) return std::nullopt;
  return values;
}

/// The static types of a Scan body's own inputs (states, then one element of each scan input),
/// the scan length and the normalized input axes, or none.
struct ScanShape {
  std::vector<Type> bodyInputs;
  std::vector<int64_t> inputAxes;
  int64_t length = -1;
  size_t states = 0;
};

std::optional<ScanShape> scanShapeOf(const Node &node, int64_t opset) {
  const int64_t numScanInputs = node.attrInt("num_scan_inputs", 0);
  const Graph *body = node.attrGraph("body");
  if (opset < 9 || !body || numScanInputs < 1 || static_cast<size_t>(numScanInputs) > node.inputs().size()) {
    return std::nullopt;
  }
  ScanShape shape;
  shape.states = node.inputs().size() - static_cast<size_t>(numScanInputs);
  auto axes = scanAttr(node, "scan_input_axes", static_cast<size_t>(numScanInputs));
  if (!axes) return std::nullopt;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Value *input = node.input(i);
    if (!input || !isStaticTensor(input->type())) return std::nullopt;
    if (i < shape.states) {
      shape.bodyInputs.push_back(input->type());
      continue;
    }
    std::vector<int64_t> sizes = *input->type().shape().sizes();
    const int64_t rank = static_cast<int64_t>(sizes.size());
    int64_t axis = (*axes)[i - shape.states];
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || (shape.length >= 0 && sizes[axis] != shape.length)) return std::nullopt;
    shape.length = sizes[axis];
    shape.inputAxes.push_back(axis);
    sizes.erase(sizes.begin() + axis);
    shape.bodyInputs.push_back(Type::tensor(input->type().dtype(), Shape::fromSizes(sizes)));
  }
  if (body->inputs().size() != shape.bodyInputs.size()) return std::nullopt;
  return shape;
}

/// Gives a Scan's outputs static types: final states keep their initial types when the body
/// returns them unchanged in type, scan outputs stack the scan length at their output axis.
bool typeScanOutputs(Model &model, int optLevel) {
  bool changed = false;
  for (const auto &node : model.graph->nodes()) {
    if (node->opType() != "Scan" || !node->domain().empty()) continue;
    bool allStatic = true;
    for (const Value *output : node->outputs()) allStatic = allStatic && (!output || isStaticTensor(output->type()));
    auto shape = scanShapeOf(*node, model.opsetFor(""));
    if (allStatic || !shape) continue;
    std::vector<const Value *> inputsFrom;
    Model body = subgraphModel(model, *node->attrGraph("body"), shape->bodyInputs, inputsFrom);
    bool readsStatic = true;
    for (const Value *input : body.graph->inputs()) readsStatic = readsStatic && isStaticTensor(input->type());
    if (!readsStatic || !optimizeForCpu(body, optLevel).ok()) continue;
    const auto &outputs = body.graph->outputs();
    if (outputs.size() < shape->states) continue;
    auto outputAxes = scanAttr(*node, "scan_output_axes", outputs.size() - shape->states);
    if (!outputAxes) continue;
    for (size_t o = 0; o < node->outputs().size() && o < outputs.size(); ++o) {
      Value *output = node->output(o);
      const Type &inner = outputs[o]->type();
      if (!output || isStaticTensor(output->type()) || !isStaticTensor(inner)) continue;
      if (o < shape->states) {
        if (!(inner == shape->bodyInputs[o])) continue;
        output->setType(inner);
      } else {
        std::vector<int64_t> sizes = *inner.shape().sizes();
        const int64_t rank = static_cast<int64_t>(sizes.size()) + 1;
        int64_t axis = (*outputAxes)[o - shape->states];
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank) continue;
        sizes.insert(sizes.begin() + axis, shape->length);
        output->setType(Type::tensor(inner.dtype(), Shape::fromSizes(sizes)));
      }
      changed = true;
    }
  }
  return changed;
}

const void *slotData(const CpuExecutable::Impl &impl, int s) {
  const Slot &slot = impl.slots[s];
  return slot.kind == Slot::Kind::Constant ? slot.constant : impl.arena.get() + slot.offset;
}

}  // namespace

Status optimizeForCpu(Model &model, int optLevel) {
  TESSEL_RETURN_IF_ERROR(runPipeline(model, optLevel));
  for (int round = 0; round < kMaxOptimizeRounds; ++round) {
    TESSEL_ASSIGN_OR_RETURN(bool inlined, inlineConstantIfs(model));
    const bool typed = typeIfOutputs(model, optLevel);
    const bool loopTyped = typeLoopOutputs(model, optLevel);
    const bool scanTyped = typeScanOutputs(model, optLevel);
    if (!inlined && !typed && !loopTyped && !scanTyped) break;
    TESSEL_RETURN_IF_ERROR(runPipeline(model, optLevel));
  }
  // The pipeline's inference may have merged an If's types with its branches' symbolic ones.
  typeIfOutputs(model, optLevel);
  typeLoopOutputs(model, optLevel);
  typeScanOutputs(model, optLevel);
  return Status::success();
}

IfStep::IfStep(Branch thenBranch, Branch elseBranch, CpuExecutable::Impl &outer, size_t stepIndex)
    : branches_{std::move(thenBranch), std::move(elseBranch)}, outer_(outer), stepIndex_(stepIndex) {}

Status IfStep::run(const StepIo &io) const {
  const Branch &taken = branches_[*static_cast<const uint8_t *>(io.inputs[0]) != 0 ? 0 : 1];
  if (!taken.plan) return outer_.runReferenceStep(outer_.steps[stepIndex_]);
  CpuExecutable::Impl &plan = *taken.plan;
  for (size_t i = 0; i < plan.inputSlots.size(); ++i) {
    const Slot &slot = plan.slots[plan.inputSlots[i]];
    std::memcpy(plan.arena.get() + slot.offset, io.inputs[1 + taken.captureOf[i]], slot.bytes);
  }
  TESSEL_RETURN_IF_ERROR(plan.execute());
  for (size_t o = 0; o < plan.outputSlots.size(); ++o) {
    if (io.outputs[o]) std::memcpy(io.outputs[o], slotData(plan, plan.outputSlots[o]), plan.slots[plan.outputSlots[o]].bytes);
  }
  return Status::success();
}

Expected<std::unique_ptr<Step>> planIf(CpuExecutable::Impl &outer, const PlannedStep &planned, size_t stepIndex,
                                       const std::vector<const Value *> &captures, std::string &reason) {
  const Node &node = *planned.node;
  if (planned.inputs.empty() || planned.inputs[0] < 0 || outer.slots[planned.inputs[0]].dtype != DType::Bool ||
      outer.slots[planned.inputs[0]].bytes != 1) {
    reason = "its condition is not one bool";
    return std::unique_ptr<Step>();
  }
  IfStep::Branch branches[2];
  std::vector<std::string> fallbacks;
  int fallbackSteps = 0, invalid = 0;
  for (int b = 0; b < 2; ++b) {
    IfStep::Branch &branch = branches[b];
    branch.name = b == 0 ? "then_branch" : "else_branch";
    const Graph *graph = node.attrGraph(branch.name);
    if (!graph || !graph->inputs().empty() || graph->outputs().size() != node.outputs().size()) {
      reason = fmt::format("its {} is missing or does not match the If's outputs", branch.name);
      return std::unique_ptr<Step>();
    }
    std::vector<const Value *> inputsFrom;
    Model model = subgraphModel(outer.model, *graph, {}, inputsFrom);
    // A branch invalid for these shapes (a torch branch for other input ranks, say) gets no plan:
    // where it is taken, the reference interpreter runs the If and reports what is wrong.
    auto withoutPlan = [&](const Status &why) {
      ++invalid;
      fallbacks.push_back(fmt::format("node '{}' (If) {}: runs on the reference interpreter where taken, as it "
                                      "does not plan for these shapes: {}",
                                      node.name(), branch.name, why.diag().message));
      ++fallbackSteps;
    };
    Status optimized = optimizeForCpu(model, outer.options.optLevel);
    if (!optimized.ok()) {
      withoutPlan(optimized);
      continue;
    }
    for (const Value *output : model.graph->outputs()) {
      if (!isStaticTensor(output->type())) {
        reason = fmt::format("its {} returns '{}', which has no static shape", branch.name, output->name());
        return std::unique_ptr<Step>();
      }
    }
    for (const Value *from : inputsFrom) {
      auto it = std::find(captures.begin(), captures.end(), from);
      TESSEL_CHECK(it != captures.end(), "If '{}': '{}' is read by {} but not captured", node.name(), from->name(),
                   branch.name);
      branch.captureOf.push_back(static_cast<int>(it - captures.begin()));
    }
    model.graph->nameNodesUniquely();
    auto plan = std::make_unique<CpuExecutable::Impl>();
    plan->model = std::move(model);
    plan->options = outer.options;
    plan->pool = outer.pool;
    plan->scopedStore = std::make_unique<ScopedConstants>(*outer.store, fmt::format("{}/{}/", node.name(), branch.name));
    plan->store = plan->scopedStore.get();
    if (Status lowered = plan->plan(); !lowered.ok()) {
      withoutPlan(lowered);
      branch.captureOf.clear();
      continue;
    }
    for (int s : plan->inputSlots) {
      if (plan->slots[s].kind != Slot::Kind::Arena) {
        reason = fmt::format("its {} reads '{}', which has no static shape", branch.name, plan->slots[s].value->name());
        return std::unique_ptr<Step>();
      }
    }
    for (size_t o = 0; o < plan->outputSlots.size(); ++o) {
      const Slot &inner = plan->slots[plan->outputSlots[o]];
      if (planned.outputs[o] < 0) continue;
      const Slot &want = outer.slots[planned.outputs[o]];
      if (inner.kind == Slot::Kind::Dynamic || inner.dtype != want.dtype || inner.sizes != want.sizes) {
        reason = fmt::format("its {} returns {}{} as output {}; the If's is {}{}", branch.name, dtypeName(inner.dtype),
                             formatSizes(inner.sizes), o, dtypeName(want.dtype), formatSizes(want.sizes));
        return std::unique_ptr<Step>();
      }
    }
    for (const std::string &fallback : plan->summary.fallbacks) {
      fallbacks.push_back(fmt::format("node '{}' (If) {}: {}", node.name(), branch.name, fallback));
    }
    fallbackSteps += plan->summary.fallbackSteps;
    branch.plan = std::move(plan);
  }
  if (invalid == 2) {
    reason = "neither branch plans for these shapes";
    return std::unique_ptr<Step>();
  }
  outer.summary.fallbacks.insert(outer.summary.fallbacks.end(), fallbacks.begin(), fallbacks.end());
  outer.summary.fallbackSteps += fallbackSteps;
  return std::unique_ptr<Step>(
      std::make_unique<IfStep>(std::move(branches[0]), std::move(branches[1]), outer, stepIndex));
}

namespace {

// As the reference interpreter: a bound above this is no bound (PyTorch exports `while` loops
// with M = INT64_MAX), so without a condition input it is an error, and with one the loop may
// run at most this many iterations.
constexpr int64_t kMaxTripCount = int64_t{1} << 31;

void *slotMemory(CpuExecutable::Impl &impl, int s) { return impl.arena.get() + impl.slots[s].offset; }

}  // namespace

/// Optimizes `graph` (the body of `node`, a Loop or Scan) with its own inputs typed `ownTypes`
/// and plans it into `body`. Returns false and sets `reason` when it has no static plan.
Expected<bool> planBody(CpuExecutable::Impl &outer, const Node &node, const Graph &graph,
                        const std::vector<Type> &ownTypes, const std::vector<const Value *> &captures,
                        LoopStep::Body &body, std::string &reason) {
  std::vector<const Value *> inputsFrom;
  Model model = subgraphModel(outer.model, graph, ownTypes, inputsFrom);
  Status optimized = optimizeForCpu(model, outer.options.optLevel);
  if (!optimized.ok()) {
    reason = fmt::format("its body does not optimize: {}", optimized.diag().message);
    return false;
  }
  for (const Value *value : model.graph->outputs()) {
    if (!isStaticTensor(value->type())) {
      reason = fmt::format("its body returns '{}', which has no static shape", value->name());
      return false;
    }
  }
  for (const Value *from : inputsFrom) {
    auto it = std::find(captures.begin(), captures.end(), from);
    TESSEL_CHECK(it != captures.end(), "{} '{}': '{}' is read by its body but not captured", node.opType(), node.name(),
                 from->name());
    body.captureOf.push_back(static_cast<int>(it - captures.begin()));
  }
  model.graph->nameNodesUniquely();
  auto plan = std::make_unique<CpuExecutable::Impl>();
  plan->model = std::move(model);
  plan->options = outer.options;
  plan->pool = outer.pool;
  plan->scopedStore = std::make_unique<ScopedConstants>(*outer.store, fmt::format("{}/body/", node.name()));
  plan->store = plan->scopedStore.get();
  if (Status lowered = plan->plan(); !lowered.ok()) {
    reason = fmt::format("its body does not plan: {}", lowered.diag().message);
    return false;
  }
  for (int s : plan->inputSlots) {
    if (plan->slots[s].kind != Slot::Kind::Arena) {
      reason = "its body reads a value without a static shape";
      return false;
    }
  }
  for (int s : plan->outputSlots) {
    if (plan->slots[s].kind == Slot::Kind::Dynamic) {
      reason = "its body returns a value without a static shape";
      return false;
    }
  }
  body.plan = std::move(plan);
  return true;
}

void reportBodyFallbacks(CpuExecutable::Impl &outer, const Node &node, const CpuExecutable::Impl &body) {
  for (const std::string &fallback : body.summary.fallbacks) {
    outer.summary.fallbacks.push_back(fmt::format("node '{}' ({}) body: {}", node.name(), node.opType(), fallback));
  }
  outer.summary.fallbackSteps += body.summary.fallbackSteps;
}

size_t stagingBytes(const CpuExecutable::Impl &body, size_t firstInput, size_t count) {
  size_t bytes = 0;
  for (size_t c = 0; c < count; ++c) bytes += (body.slots[body.inputSlots[firstInput + c]].bytes + 63) / 64 * 64;
  return std::max<size_t>(bytes, 64);
}

/// Moves body outputs [firstOutput, +count) into body inputs [firstInput, +count) through
/// `staging`: a carried output may share memory with another carried input.
void carryOver(CpuExecutable::Impl &body, size_t firstOutput, size_t firstInput, size_t count, std::byte *staging) {
  size_t offset = 0;
  for (size_t c = 0; c < count; ++c) {
    const size_t bytes = body.slots[body.inputSlots[firstInput + c]].bytes;
    std::memcpy(staging + offset, slotData(body, body.outputSlots[firstOutput + c]), bytes);
    offset += (bytes + 63) / 64 * 64;
  }
  offset = 0;
  for (size_t c = 0; c < count; ++c) {
    const size_t bytes = body.slots[body.inputSlots[firstInput + c]].bytes;
    std::memcpy(slotMemory(body, body.inputSlots[firstInput + c]), staging + offset, bytes);
    offset += (bytes + 63) / 64 * 64;
  }
}

/// Copies the captured values into the body's inputs from `first` on.
void bindCaptures(CpuExecutable::Impl &body, const std::vector<int> &captureOf, size_t first, const StepIo &io,
                  size_t nodeInputs) {
  for (size_t j = 0; j < captureOf.size(); ++j) {
    const int s = body.inputSlots[first + j];
    std::memcpy(slotMemory(body, s), io.inputs[nodeInputs + captureOf[j]], body.slots[s].bytes);
  }
}

LoopStep::LoopStep(Body body, size_t nodeInputs, size_t carried, size_t scanOutputs, int64_t scanRows,
                   DType tripCountType)
    : body_(std::move(body)), nodeInputs_(nodeInputs), carried_(carried), scanOutputs_(scanOutputs),
      scanRows_(scanRows), tripCountType_(tripCountType) {
  staging_.reset(static_cast<std::byte *>(std::aligned_alloc(64, stagingBytes(*body_.plan, 2, carried_))));
}

Status LoopStep::run(const StepIo &io) const {
  CpuExecutable::Impl &body = *body_.plan;
  std::optional<int64_t> trips;
  if (const void *m = io.inputs[0]) {
    trips = tripCountType_ == DType::Int32 ? *static_cast<const int32_t *>(m) : *static_cast<const int64_t *>(m);
  }
  bool cond = io.inputs[1] ? *static_cast<const uint8_t *>(io.inputs[1]) != 0 : true;
  if (trips && *trips > kMaxTripCount && !io.inputs[1]) {
    return makeError(ErrorCode::InvalidArgument, "Loop trip count M = {} exceeds the limit of {} iterations and "
                     "there is no condition input to end it sooner", *trips, kMaxTripCount);
  }
  auto input = [&](size_t i) { return slotMemory(body, body.inputSlots[i]); };
  auto output = [&](size_t i) { return slotData(body, body.outputSlots[i]); };
  auto bytesOf = [&](int s) { return body.slots[s].bytes; };
  for (size_t c = 0; c < carried_; ++c) std::memcpy(input(2 + c), io.inputs[2 + c], bytesOf(body.inputSlots[2 + c]));
  int64_t iteration = 0;
  for (; (!trips || iteration < *trips) && cond; ++iteration) {
    if (iteration >= kMaxTripCount) {
      return makeError(ErrorCode::RuntimeError, "Loop ran {} iterations and its condition is still true", iteration);
    }
    if (scanRows_ >= 0 && iteration >= scanRows_) {
      return makeError(ErrorCode::RuntimeError, "Loop runs past the {} iterations its scan outputs were planned for",
                       scanRows_);
    }
    *static_cast<int64_t *>(input(0)) = iteration;
    *static_cast<uint8_t *>(input(1)) = cond ? 1 : 0;
    // Every iteration: a step of the body may have written over an input it read last.
    bindCaptures(body, body_.captureOf, 2 + carried_, io, nodeInputs_);
    TESSEL_RETURN_IF_ERROR(body.execute());
    cond = *static_cast<const uint8_t *>(output(0)) != 0;
    for (size_t k = 0; k < scanOutputs_; ++k) {
      const size_t bytes = bytesOf(body.outputSlots[1 + carried_ + k]);
      if (void *stacked = carried_ + k < io.outputs.size() ? io.outputs[carried_ + k] : nullptr) {
        std::memcpy(static_cast<std::byte *>(stacked) + iteration * bytes, output(1 + carried_ + k), bytes);
      }
    }
    carryOver(body, 1, 2, carried_, staging_.get());
  }
  if (scanRows_ >= 0 && iteration != scanRows_) {
    return makeError(ErrorCode::RuntimeError, "Loop ran {} iterations; its scan outputs were planned for {}", iteration,
                     scanRows_);
  }
  for (size_t c = 0; c < carried_; ++c) {
    if (io.outputs[c]) std::memcpy(io.outputs[c], input(2 + c), bytesOf(body.inputSlots[2 + c]));
  }
  return Status::success();
}

Expected<std::unique_ptr<Step>> planLoop(CpuExecutable::Impl &outer, const PlannedStep &planned,
                                         const std::vector<const Value *> &captures, std::string &reason) {
  const Node &node = *planned.node;
  auto notPlanned = [&](std::string why) {
    reason = std::move(why);
    return std::unique_ptr<Step>();
  };
  const Graph *graph = node.attrGraph("body");
  auto ownTypes = loopBodyInputTypes(node);
  if (!graph || !ownTypes || planned.inputs.size() < 2) return notPlanned("its body or loop-carried values are not static");
  const size_t carried = ownTypes->size() - 2;
  if (graph->outputs().size() < 1 + carried || node.outputs().size() > graph->outputs().size() - 1) {
    return notPlanned("its body's outputs do not match the node's");
  }
  const size_t scanOutputs = graph->outputs().size() - 1 - carried;
  DType tripCountType = DType::Undefined;
  if (planned.inputs[0] >= 0) {
    tripCountType = outer.slots[planned.inputs[0]].dtype;
    if ((tripCountType != DType::Int64 && tripCountType != DType::Int32) || outer.slots[planned.inputs[0]].sizes.size() > 1) {
      return notPlanned("its trip count is not one int64 or int32");
    }
  }
  if (planned.inputs[1] >= 0 && (outer.slots[planned.inputs[1]].dtype != DType::Bool || outer.slots[planned.inputs[1]].bytes != 1)) {
    return notPlanned("its condition is not one bool");
  }
  LoopStep::Body body;
  TESSEL_ASSIGN_OR_RETURN(bool bodyPlanned, planBody(outer, node, *graph, *ownTypes, captures, body, reason));
  if (!bodyPlanned) return std::unique_ptr<Step>();
  const CpuExecutable::Impl *plan = body.plan.get();
  const Slot &condOut = plan->slots[plan->outputSlots[0]];
  if (condOut.kind == Slot::Kind::Dynamic || condOut.dtype != DType::Bool || condOut.bytes != 1) {
    return notPlanned("its body's condition output is not one bool");
  }
  for (size_t c = 0; c < carried; ++c) {
    const Slot &in = plan->slots[plan->inputSlots[2 + c]], &out = plan->slots[plan->outputSlots[1 + c]];
    if (out.kind == Slot::Kind::Dynamic || out.dtype != in.dtype || out.sizes != in.sizes) {
      return notPlanned(fmt::format("its body returns carried value {} as {}{}; it comes in as {}{}", c,
                                    dtypeName(out.dtype), formatSizes(out.sizes), dtypeName(in.dtype), formatSizes(in.sizes)));
    }
  }
  int64_t scanRows = -1;
  for (size_t k = 0; k < scanOutputs && carried + k < node.outputs().size(); ++k) {
    if (planned.outputs[carried + k] < 0) continue;
    const Slot &row = plan->slots[plan->outputSlots[1 + carried + k]];
    const Slot &stacked = outer.slots[planned.outputs[carried + k]];
    std::vector<int64_t> rowSizes = stacked.sizes;
    if (!rowSizes.empty()) rowSizes.erase(rowSizes.begin());
    if (row.kind == Slot::Kind::Dynamic || stacked.sizes.empty() || row.dtype != stacked.dtype || row.sizes != rowSizes ||
        (scanRows >= 0 && stacked.sizes[0] != scanRows)) {
      return notPlanned(fmt::format("its scan output {} does not stack to the planned {}{}", k, dtypeName(stacked.dtype),
                                    formatSizes(stacked.sizes)));
    }
    scanRows = stacked.sizes[0];
  }
  reportBodyFallbacks(outer, node, *plan);
  return std::unique_ptr<Step>(std::make_unique<LoopStep>(std::move(body), node.inputs().size(), carried, scanOutputs,
                                                          scanRows, tripCountType));
}

ScanStep::ScanStep(LoopStep::Body body, size_t nodeInputs, size_t states, std::vector<AxisView> inputs,
                   std::vector<AxisView> outputs)
    : body_(std::move(body)), nodeInputs_(nodeInputs), states_(states), inputs_(std::move(inputs)),
      outputs_(std::move(outputs)) {
  staging_.reset(static_cast<std::byte *>(std::aligned_alloc(64, stagingBytes(*body_.plan, 0, states_))));
}

Status ScanStep::run(const StepIo &io) const {
  CpuExecutable::Impl &body = *body_.plan;
  for (size_t s = 0; s < states_; ++s) {
    std::memcpy(slotMemory(body, body.inputSlots[s]), io.inputs[s], body.slots[body.inputSlots[s]].bytes);
  }
  const int64_t length = inputs_.empty() ? 0 : inputs_[0].length;
  for (int64_t step = 0; step < length; ++step) {
    for (size_t m = 0; m < inputs_.size(); ++m) {
      const AxisView &view = inputs_[m];
      const int64_t t = view.reverse ? length - 1 - step : step;
      const auto *source = static_cast<const std::byte *>(io.inputs[states_ + m]);
      auto *element = static_cast<std::byte *>(slotMemory(body, body.inputSlots[states_ + m]));
      for (int64_t o = 0; o < view.outer; ++o) {
        std::memcpy(element + o * view.innerBytes, source + (o * view.length + t) * view.innerBytes, view.innerBytes);
      }
    }
    bindCaptures(body, body_.captureOf, states_ + inputs_.size(), io, nodeInputs_);
    TESSEL_RETURN_IF_ERROR(body.execute());
    for (size_t k = 0; k < outputs_.size(); ++k) {
      auto *stacked = states_ + k < io.outputs.size() ? static_cast<std::byte *>(io.outputs[states_ + k]) : nullptr;
      if (!stacked) continue;
      const AxisView &view = outputs_[k];
      const int64_t t = view.reverse ? length - 1 - step : step;
      const auto *element = static_cast<const std::byte *>(slotData(body, body.outputSlots[states_ + k]));
      for (int64_t o = 0; o < view.outer; ++o) {
        std::memcpy(stacked + (o * view.length + t) * view.innerBytes, element + o * view.innerBytes, view.innerBytes);
      }
    }
    carryOver(body, 0, 0, states_, staging_.get());
  }
  for (size_t s = 0; s < states_ && s < io.outputs.size(); ++s) {
    if (io.outputs[s]) std::memcpy(io.outputs[s], slotMemory(body, body.inputSlots[s]), body.slots[body.inputSlots[s]].bytes);
  }
  return Status::success();
}

Expected<std::unique_ptr<Step>> planScan(CpuExecutable::Impl &outer, const PlannedStep &planned,
                                         const std::vector<const Value *> &captures, std::string &reason) {
  const Node &node = *planned.node;
  auto notPlanned = [&](std::string why) {
    reason = std::move(why);
    return std::unique_ptr<Step>();
  };
  auto shape = scanShapeOf(node, outer.model.opsetFor(""));
  if (!shape) return notPlanned("its inputs are not static, or it is the batched Scan of opset 8");
  const Graph *graph = node.attrGraph("body");
  if (graph->outputs().size() < shape->states || node.outputs().size() > graph->outputs().size()) {
    return notPlanned("its body's outputs do not match the node's");
  }
  const size_t scanOutputs = graph->outputs().size() - shape->states;
  auto inputDirections = scanAttr(node, "scan_input_directions", shape->inputAxes.size());
  auto outputAxes = scanAttr(node, "scan_output_axes", scanOutputs);
  auto outputDirections = scanAttr(node, "scan_output_directions", scanOutputs);
  if (!inputDirections || !outputAxes || !outputDirections) return notPlanned("its axis or direction lists are malformed");
  LoopStep::Body body;
  TESSEL_ASSIGN_OR_RETURN(bool bodyPlanned, planBody(outer, node, *graph, shape->bodyInputs, captures, body, reason));
  if (!bodyPlanned) return std::unique_ptr<Step>();
  const CpuExecutable::Impl *plan = body.plan.get();
  for (size_t s = 0; s < shape->states; ++s) {
    const Slot &in = plan->slots[plan->inputSlots[s]], &out = plan->slots[plan->outputSlots[s]];
    if (out.dtype != in.dtype || out.sizes != in.sizes) {
      return notPlanned(fmt::format("its body returns state {} as {}{}; it comes in as {}{}", s, dtypeName(out.dtype),
                                    formatSizes(out.sizes), dtypeName(in.dtype), formatSizes(in.sizes)));
    }
  }
  auto viewAround = [](const std::vector<int64_t> &sizes, int64_t axis, DType dtype) {
    ScanStep::AxisView view;
    for (int64_t d = 0; d < axis; ++d) view.outer *= sizes[d];
    view.length = sizes[axis];
    int64_t inner = 1;
    for (size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
    view.innerBytes = static_cast<size_t>(inner) * dtypeSize(dtype);
    return view;
  };
  std::vector<ScanStep::AxisView> inputs, outputs;
  for (size_t m = 0; m < shape->inputAxes.size(); ++m) {
    const Slot &slot = outer.slots[planned.inputs[shape->states + m]];
    inputs.push_back(viewAround(slot.sizes, shape->inputAxes[m], slot.dtype));
    inputs.back().reverse = (*inputDirections)[m] == 1;
  }
  for (size_t k = 0; k < scanOutputs; ++k) {
    const Slot &element = plan->slots[plan->outputSlots[shape->states + k]];
    std::vector<int64_t> sizes = element.sizes;
    const int64_t rank = static_cast<int64_t>(sizes.size()) + 1;
    int64_t axis = (*outputAxes)[k] < 0 ? (*outputAxes)[k] + rank : (*outputAxes)[k];
    if (axis < 0 || axis >= rank) return notPlanned(fmt::format("its scan_output_axes value {} is out of range", (*outputAxes)[k]));
    sizes.insert(sizes.begin() + axis, shape->length);
    const int s = shape->states + k < planned.outputs.size() ? planned.outputs[shape->states + k] : -1;
    if (s >= 0 && (outer.slots[s].sizes != sizes || outer.slots[s].dtype != element.dtype)) {
      return notPlanned(fmt::format("its scan output {} does not stack to the planned {}{}", k,
                                    dtypeName(outer.slots[s].dtype), formatSizes(outer.slots[s].sizes)));
    }
    outputs.push_back(viewAround(sizes, axis, element.dtype));
    outputs.back().reverse = (*outputDirections)[k] == 1;
  }
  reportBodyFallbacks(outer, node, *plan);
  return std::unique_ptr<Step>(std::make_unique<ScanStep>(std::move(body), node.inputs().size(), shape->states,
                                                          std::move(inputs), std::move(outputs)));
}

}  // namespace tessel::cpu
