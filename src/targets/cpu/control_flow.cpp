// If as nested cpu plans (see control_flow.h).
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
  Model model = branchModel(outer, branch, inputsFrom);
  for (const Value *input : model.graph->inputs()) {
    if (!isStaticTensor(input->type())) return {};
  }
  if (!optimizeForCpu(model, optLevel).ok()) return {.invalid = true};
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
    if (!inlined && !typed) break;
    TESSEL_RETURN_IF_ERROR(runPipeline(model, optLevel));
  }
  // The pipeline's inference may have merged an If's types with its branches' symbolic ones.
  typeIfOutputs(model, optLevel);
  return Status::success();
}

void nameNodesUniquely(Model &model) {
  std::set<std::string> names;
  for (const auto &node : model.graph->nodes()) {
    if (!node->name().empty() && names.insert(node->name()).second) continue;
    std::string base = node->name().empty() ? node->opType() : node->name();
    std::string candidate;
    for (int i = 0; !names.insert(candidate = fmt::format("{}_{}", base, i)).second; ++i) {
    }
    node->setName(candidate);
  }
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
    Model model = branchModel(outer.model, *graph, inputsFrom);
    Status optimized = optimizeForCpu(model, outer.options.optLevel);
    if (!optimized.ok()) {
      // Invalid for these shapes (a torch branch for other input ranks, say): where it is taken,
      // the reference interpreter runs the If and reports what is wrong.
      ++invalid;
      fallbacks.push_back(fmt::format("node '{}' (If) {}: runs on the reference interpreter where taken, as it "
                                      "does not plan for these shapes: {}",
                                      node.name(), branch.name, optimized.diag().message));
      ++fallbackSteps;
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
    nameNodesUniquely(model);
    auto plan = std::make_unique<CpuExecutable::Impl>();
    plan->model = std::move(model);
    plan->options = outer.options;
    plan->pool = outer.pool;
    plan->scopedStore = std::make_unique<ScopedConstants>(*outer.store, fmt::format("{}/{}/", node.name(), branch.name));
    plan->store = plan->scopedStore.get();
    TESSEL_RETURN_IF_ERROR(plan->plan());
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

}  // namespace tessel::cpu
