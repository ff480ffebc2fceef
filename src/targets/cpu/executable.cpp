// Planning and running a cpu plan: slots for every value, a step per node (a library kernel, or
// the reference kernel where the library has none), buffers with lifetimes, one arena.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include "ops/registry.h"
#include "passes/constant_values.h"
#include "passes/infer_shapes.h"
#include "passes/pass_manager.h"
#include "passes/promote_half.h"
#include "passes/pipelines.h"
#include "targets/cpu/control_flow.h"
#include "targets/cpu/kernels/fma_peak.h"
#include "targets/cpu/memory_plan.h"
#include "targets/cpu/plan.h"
#include "support/memory_budget.h"

namespace tessel::cpu {
namespace {

std::byte *alignedBytes(size_t bytes) {
  size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  auto *p = static_cast<std::byte *>(std::aligned_alloc(64, rounded));
  TESSEL_CHECK(p != nullptr, "out of memory allocating {} bytes", bytes);
  return p;
}

/// A Tensor over memory the plan owns, for handing planned buffers to reference kernels.
class ViewStorage final : public Storage {
 public:
  ViewStorage(void *data, size_t bytes) : data_(static_cast<uint8_t *>(data)), bytes_(bytes) {}
  uint8_t *data() override { return data_; }
  size_t sizeBytes() const override { return bytes_; }

 private:
  uint8_t *data_;
  size_t bytes_;
};

bool hasFixedSize(DType dtype) { return dtype != DType::String && dtype != DType::Undefined; }

std::string typeString(const Slot &slot) { return std::string(dtypeName(slot.dtype)) + formatSizes(slot.sizes); }

/// Values of the main graph that the subgraphs of `node` read (at any depth).
void collectCaptures(const Node &node, const Graph &main, std::vector<const Value *> &out) {
  for (const Graph *sub : node.subgraphs()) {
    for (const auto &inner : sub->nodes()) {
      for (const Value *input : inner->inputs()) {
        if (input && input->graph() == &main && std::find(out.begin(), out.end(), input) == out.end()) {
          out.push_back(input);
        }
      }
      collectCaptures(*inner, main, out);
    }
  }
}

/// Fast kernels trust the static types on a node's outputs. Those come from the model or from
/// inference over the whole graph; this re-runs the op's own inference on the node and checks every
/// dim it can tell, so a model whose declared types are wrong never reaches a kernel.
bool declaredTypesHold(Node &node, int64_t opset) {
  const OpInfo *info = findOp(node.domain(), node.opType(), opset);
  if (!info || !info->infer) return true;
  std::vector<Type> declared;
  for (const Value *output : node.outputs()) declared.push_back(output ? output->type() : Type());
  bool holds = info->infer(node, opset).ok();
  for (size_t i = 0; i < declared.size(); ++i) {
    Value *output = node.output(i);
    if (!output) continue;
    const Type &inferred = output->type();
    if (holds && inferred.isTensor()) {
      if (inferred.dtype() != DType::Undefined && inferred.dtype() != declared[i].dtype()) holds = false;
      const Shape &shape = inferred.shape();
      const Shape &want = declared[i].shape();
      if (shape.rankKnown() && (!want.rankKnown() || shape.rank() != want.rank())) holds = false;
      for (size_t d = 0; holds && shape.rankKnown() && d < shape.rank(); ++d) {
        if (shape[d].isStatic() && shape[d].size != want[d].size) holds = false;
      }
    }
    output->setType(declared[i]);
  }
  return holds;
}

}  // namespace

// ----- Packed constants -----

Expected<const std::byte *> PackedConstants::packed(const std::string &node, std::string_view key, size_t bytes,
                                                    const std::function<void(std::byte *)> &fill) {
  // Plans for several shapes share a store: a node may pack the same key at another size for
  // another shape (a constant A packed for M rows), so size is part of what identifies an entry.
  const Entry *sameKey = nullptr;
  for (const Entry &entry : entries_) {
    if (entry.node != node || entry.key != key) continue;
    if (entry.bytes == bytes) return entry.data;
    sameKey = &entry;
  }
  if (loaded_ && !grows_) {
    if (sameKey) {
      return makeError(ErrorCode::InvalidModel,
                       "packed constant '{}' of node '{}' holds {} bytes; this build expects {} (the artifact "
                       "comes from another tessel version: compile it again)",
                       key, node, sameKey->bytes, bytes);
    }
    return makeError(ErrorCode::InvalidModel, "the artifact has no packed constant '{}' for node '{}'", key, node);
  }
  std::byte *data = alignedBytes(bytes);
  owned_.emplace_back(data);
  fill(data);
  entries_.push_back(Entry{node, std::string(key), bytes, data, 0});
  return static_cast<const std::byte *>(data);
}

void PackedConstants::useLoaded(std::vector<Entry> entries, std::shared_ptr<Storage> file, bool grows) {
  loaded_ = true;
  grows_ = grows;
  entries_ = std::move(entries);
  owned_.clear();
  file_ = std::move(file);
}

size_t PackedConstants::totalBytes() const {
  size_t total = 0;
  for (const Entry &entry : entries_) total += entry.bytes;
  return total;
}

// ----- Planning -----

Status CpuExecutable::Impl::plan() {
  Graph &graph = *model.graph;
  if (!pool) {
    ownedPool = std::make_unique<ThreadPool>(options.threads);
    pool = ownedPool.get();
  }
  if (!store) store = sharedConstants ? static_cast<ConstantStore *>(sharedConstants) : &constants;

  // Constant nodes become initializers, evaluated once: lowering then sees their values (a Slice's
  // bounds, a Clip's limits) and nothing runs for them per call. One that fails stays a node and
  // reports its error when it runs.
  std::vector<Node *> constantNodes;
  for (const auto &node : graph.nodes()) {
    if (node->opType() == "Constant" && node->domain().empty() && node->inputs().empty() &&
        node->outputs().size() == 1 && node->output(0)) {
      constantNodes.push_back(node.get());
    }
  }
  for (Node *node : constantNodes) {
    auto value = ReferenceInterpreter(model).runSingleNode(*node, {});
    if (!value.ok() || !(*value)[0].isTensor()) continue;
    passes::replaceWithInitializers(graph, node, {(*value)[0].tensor()});
  }

  auto addSlot = [&](const Value *value) -> int {
    Slot slot;
    slot.value = value;
    const Type &type = value->type();
    auto sizes = type.isTensor() ? type.shape().sizes() : std::nullopt;
    bool fixed = sizes.has_value() && hasFixedSize(type.dtype());
    if (value->hasInitializer() && !value->isGraphInput()) {
      const Tensor &init = value->initializer();
      fixed = hasFixedSize(init.dtype());
      if (fixed) {
        slot.kind = Slot::Kind::Constant;
        slot.dtype = init.dtype();
        slot.sizes = init.sizes();
        slot.bytes = init.numBytes();
        slot.constant = init.rawData();
      }
    } else if (fixed) {
      slot.kind = Slot::Kind::Arena;
      slot.dtype = type.dtype();
      slot.sizes = *sizes;
      slot.bytes = static_cast<size_t>(numElements(*sizes)) * dtypeSize(type.dtype());
    }
    if (!fixed) {
      slot.kind = Slot::Kind::Dynamic;
      slot.dynamic = static_cast<int>(dynamicValues.size());
      dynamicValues.emplace_back(value->hasInitializer() ? RuntimeValue(value->initializer()) : RuntimeValue());
    }
    slots.push_back(std::move(slot));
    slotOf[value] = static_cast<int>(slots.size()) - 1;
    return static_cast<int>(slots.size()) - 1;
  };
  auto slotFor = [&](const Value *value) -> int {
    auto it = slotOf.find(value);
    return it != slotOf.end() ? it->second : addSlot(value);
  };

  for (const Value *input : graph.inputs()) inputSlots.push_back(addSlot(input));
  for (const Value *init : graph.initializers()) slotFor(init);

  const int64_t threads = pool->size();
  for (const auto &nodePtr : graph.nodes()) {
    const Node &node = *nodePtr;
    PlannedStep planned;
    planned.node = &node;
    for (const Value *input : node.inputs()) planned.inputs.push_back(input ? slotFor(input) : -1);
    for (const Value *output : node.outputs()) planned.outputs.push_back(output ? addSlot(output) : -1);
    std::vector<const Value *> captures;
    collectCaptures(node, graph, captures);
    for (const Value *captured : captures) planned.captured.push_back(slotFor(captured));

    std::string reason;
    auto dynamicSlot = [&](int s) { return s >= 0 && slots[s].kind == Slot::Kind::Dynamic; };
    auto anyDynamic = [&](const std::vector<int> &list) { return std::any_of(list.begin(), list.end(), dynamicSlot); };
    const bool isIf = node.opType() == "If" && node.domain().empty();
    const bool isLoop = node.opType() == "Loop" && node.domain().empty();
    const bool isScan = node.opType() == "Scan" && node.domain().empty();
    LowerFn lower = findLowering(node.domain(), node.opType());
    if (!isIf && !isLoop && !isScan && (!captures.empty() || (!lower && !node.subgraphs().empty()))) {
      reason = fmt::format("{} runs on the reference interpreter (If, Loop and Scan have nested cpu plans)",
                           node.opType());
    } else if (anyDynamic(planned.inputs) || anyDynamic(planned.outputs) || anyDynamic(planned.captured)) {
      reason = "a value has no static shape";
    } else if (isIf) {
      TESSEL_ASSIGN_OR_RETURN(planned.step, planIf(*this, planned, steps.size(), captures, reason));
    } else if (isLoop) {
      TESSEL_ASSIGN_OR_RETURN(planned.step, planLoop(*this, planned, captures, reason));
    } else if (isScan) {
      TESSEL_ASSIGN_OR_RETURN(planned.step, planScan(*this, planned, captures, reason));
    } else if (lower && !declaredTypesHold(*nodePtr, model.opsetFor(node.domain()))) {
      reason = "its declared output types disagree with the op's shape inference";
    } else if (lower) {
      LowerContext ctx(node, model.opsetFor(node.domain()), *store, static_cast<int>(threads), options.products,
                       options.castEverywhere);
      auto step = lower(ctx);
      if (!step.ok()) return withLocation(Status(step.diag()), locationOf(node, model.sourcePath));
      planned.step = std::move(*step);
      planned.released = ctx.releasedInputs();
      if (planned.step && ctx.offeredCast()) ++summary.castableSteps;
      if (planned.step && ctx.castProducts()) summary.bf16Nodes.push_back(node.name());
      if (!planned.step) reason = "the cpu kernels do not cover this node's types or attributes";
    } else {
      const std::string_view why = referenceReason(node.domain(), node.opType());
      reason = why.empty() ? "no cpu kernel for this op" : std::string(why);
    }
    if (!planned.step) {
      summary.fallbacks.push_back(fmt::format("node '{}' ({}): {}", node.name(), node.opType(), reason));
    }
    steps.push_back(std::move(planned));
  }

  // Lifetimes, in positions: 0 = graph inputs, step i at i + 1, graph outputs at the end.
  const int endPosition = static_cast<int>(steps.size()) + 1;
  std::vector<int> lastUse(slots.size(), 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const int position = static_cast<int>(i) + 1;
    for (int s : steps[i].inputs) if (s >= 0) lastUse[s] = position;
    for (int s : steps[i].captured) lastUse[s] = position;
    for (int s : steps[i].outputs) if (s >= 0) lastUse[s] = std::max(lastUse[s], position);
  }
  for (const Value *output : graph.outputs()) {
    outputSlots.push_back(slotFor(output));
    lastUse.resize(slots.size(), 0);
    lastUse[outputSlots.back()] = endPosition;
  }

  std::vector<BufferLifetime> buffers;
  std::vector<std::vector<int>> members;
  auto newBuffer = [&](int s, int position) {
    slots[s].buffer = static_cast<int>(buffers.size());
    buffers.push_back({slots[s].bytes, position, std::max(position, lastUse[s])});
    members.push_back({s});
  };
  auto join = [&](int s, int buffer) {
    slots[s].buffer = buffer;
    buffers[buffer].last = std::max(buffers[buffer].last, lastUse[s]);
    members[buffer].push_back(s);
  };
  for (int s : inputSlots) if (slots[s].kind == Slot::Kind::Arena) newBuffer(s, 0);

  for (size_t i = 0; i < steps.size(); ++i) {
    PlannedStep &planned = steps[i];
    const int position = static_cast<int>(i) + 1;
    for (size_t o = 0; o < planned.outputs.size(); ++o) {
      int s = planned.outputs[o];
      if (s < 0 || slots[s].kind != Slot::Kind::Arena) continue;
      const int alias = (o == 0 && planned.step) ? planned.step->aliasInput() : -1;
      const int inPlace = (o == 0 && planned.step) ? planned.step->inPlaceInput() : -1;
      if (alias >= 0) {
        const Slot &source = slots[planned.inputs[alias]];
        if (source.kind == Slot::Kind::Constant) {
          slots[s].kind = Slot::Kind::Constant;
          slots[s].constant = source.constant;
        } else {
          join(s, source.buffer);
        }
        continue;
      }
      if (inPlace >= 0) {
        int in = planned.inputs[inPlace];
        // Another input in the same memory (the same value, or an alias of it) would be read after
        // its elements were overwritten: a convolution reads a whole window of X per output.
        auto sharesMemory = [&](size_t j) {
          const int other = planned.inputs[j];
          return int(j) != inPlace && other >= 0 && slots[other].kind == Slot::Kind::Arena &&
                 slots[other].buffer == slots[in].buffer;
        };
        bool shared = false;
        for (size_t j = 0; in >= 0 && j < planned.inputs.size(); ++j) shared = shared || sharesMemory(j);
        if (in >= 0 && !shared && slots[in].kind == Slot::Kind::Arena && slots[in].bytes == slots[s].bytes &&
            buffers[slots[in].buffer].last == position) {
          join(s, slots[in].buffer);
          continue;
        }
      }
      newBuffer(s, position);
    }
  }

  MemoryPlan memory = planMemory(buffers);
  for (Slot &slot : slots) {
    if (slot.kind == Slot::Kind::Arena) slot.offset = memory.offsets[slot.buffer];
  }
  // Declared sizes can ask for any amount; say so rather than fail the allocation.
  TESSEL_RETURN_IF_ERROR(
      withLocation(checkFitsMemory("the plan's buffers", memory.arenaBytes), SourceLoc::inFile(model.sourcePath)));
  arena.reset(alignedBytes(memory.arenaBytes));
  std::memset(arena.get(), 0, std::max<size_t>(memory.arenaBytes, 1));

  summary.arenaBytes = memory.arenaBytes;
  summary.products = options.products;
  summary.castEverywhere = options.castEverywhere;
  for (const BufferLifetime &buffer : buffers) summary.unplannedBytes += buffer.bytes;
  summary.constantBytes = (sharedConstants ? *sharedConstants : constants).totalBytes();
  // Raw constants count when some step still reads them (not every reader packed its own copy).
  std::vector<bool> readRaw(slots.size(), false);
  for (const PlannedStep &planned : steps) {
    for (size_t i = 0; i < planned.inputs.size(); ++i) {
      bool released = std::find(planned.released.begin(), planned.released.end(), i) != planned.released.end();
      if (planned.inputs[i] >= 0 && !released) readRaw[planned.inputs[i]] = true;
    }
    for (int s : planned.captured) readRaw[s] = true;
  }
  for (int s : outputSlots) readRaw[s] = true;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (slots[s].kind == Slot::Kind::Constant && readRaw[s]) summary.constantBytes += slots[s].bytes;
  }

  for (PlannedStep &planned : steps) {
    if (!planned.step) {
      ++summary.steps;
      ++summary.fallbackSteps;
      continue;
    }
    const bool alias = planned.step->aliasInput() >= 0;
    if (alias && !planned.step->checksAtRunTime()) continue;
    if (!alias) ++summary.steps;
    scratchBytes = std::max(scratchBytes, planned.step->scratchBytes());
    auto pointer = [&](int s) -> std::byte * {
      if (s < 0) return nullptr;
      const Slot &slot = slots[s];
      if (slot.kind == Slot::Kind::Constant) return const_cast<std::byte *>(static_cast<const std::byte *>(slot.constant));
      return arena.get() + slot.offset;
    };
    for (int s : planned.inputs) planned.inputPointers.push_back(pointer(s));
    for (int s : planned.captured) planned.inputPointers.push_back(pointer(s));  // An If's branches read them.
    for (int s : planned.outputs) planned.outputPointers.push_back(pointer(s));
  }
  if (scratchBytes > 0) scratch.reset(alignedBytes(scratchBytes));
  return Status::success();
}

// ----- Running -----

Status CpuExecutable::Impl::runReferenceStep(PlannedStep &planned) {
  // A dynamic output (a sequence, say) may hold on to an input tensor; one that views the arena
  // would see its buffer reused by later steps, so such steps get copies.
  const bool keepsInputs = std::any_of(planned.outputs.begin(), planned.outputs.end(),
                                       [&](int s) { return s >= 0 && slots[s].kind == Slot::Kind::Dynamic; });
  auto runtimeValue = [&](int s) -> RuntimeValue {
    const Slot &slot = slots[s];
    if (slot.kind == Slot::Kind::Dynamic) return dynamicValues[slot.dynamic];
    if (slot.kind == Slot::Kind::Constant && slot.value->hasInitializer()) return slot.value->initializer();
    void *data = slot.kind == Slot::Kind::Constant ? const_cast<void *>(slot.constant)
                                                   : static_cast<void *>(arena.get() + slot.offset);
    Tensor view(slot.dtype, slot.sizes, std::make_shared<ViewStorage>(data, slot.bytes));
    return keepsInputs ? view.clone() : view;
  };
  std::vector<std::pair<const Value *, RuntimeValue>> values;
  for (size_t i = 0; i < planned.inputs.size(); ++i) {
    if (planned.inputs[i] >= 0) values.emplace_back(planned.node->input(i), runtimeValue(planned.inputs[i]));
  }
  for (int s : planned.captured) values.emplace_back(slots[s].value, runtimeValue(s));
  TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> outputs,
                          ReferenceInterpreter(model).runSingleNode(*planned.node, std::move(values)));
  for (size_t o = 0; o < planned.outputs.size(); ++o) {
    int s = planned.outputs[o];
    if (s < 0) continue;
    const Slot &slot = slots[s];
    if (slot.kind == Slot::Kind::Dynamic) {
      dynamicValues[slot.dynamic] = std::move(outputs[o]);
      continue;
    }
    if (!outputs[o].isTensor() || outputs[o].tensor().dtype() != slot.dtype || outputs[o].tensor().sizes() != slot.sizes) {
      return withLocation(makeError(ErrorCode::RuntimeError, "output {} is {}; the plan expected {}", o,
                                    outputs[o].describe(), typeString(slot)),
                          locationOf(*planned.node, model.sourcePath));
    }
    std::memmove(arena.get() + slot.offset, outputs[o].tensor().rawData(), slot.bytes);
  }
  return Status::success();
}

Status CpuExecutable::Impl::execute() {
  using Clock = std::chrono::steady_clock;
  for (PlannedStep &planned : steps) {
    if (planned.step && planned.step->aliasInput() >= 0 && !planned.step->checksAtRunTime()) continue;
    auto start = profiling ? Clock::now() : Clock::time_point();
    if (planned.step) {
      StepIo io{planned.inputPointers, planned.outputPointers, scratch.get(), pool};
      Status status = planned.step->run(io);
      if (!status.ok()) return withLocation(status, locationOf(*planned.node, model.sourcePath));
    } else {
      TESSEL_RETURN_IF_ERROR(runReferenceStep(planned));
    }
    if (profiling) {
      planned.totalMs += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      ++planned.runs;
    }
  }
  return Status::success();
}

Expected<NamedValues> CpuExecutable::run(const NamedValues &feeds) {
  Impl &impl = *impl_;
  const Graph &graph = *impl.model.graph;
  for (const auto &[name, value] : feeds) {
    bool known = std::any_of(graph.inputs().begin(), graph.inputs().end(), [&](const Value *v) { return v->name() == name; });
    if (!known) return makeFileError(ErrorCode::InvalidArgument, impl.model.sourcePath, "the model has no input named '{}'", name);
  }
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value *input = graph.inputs()[i];
    const RuntimeValue *fed = nullptr;
    for (const auto &[name, value] : feeds) if (name == input->name()) fed = &value;
    RuntimeValue defaulted;
    if (!fed) {
      if (!input->hasInitializer()) {
        return makeFileError(ErrorCode::InvalidArgument, impl.model.sourcePath, "input '{}' ({}) was not given",
                             input->name(), input->type().str());
      }
      defaulted = RuntimeValue(input->initializer());
      fed = &defaulted;
    }
    const Slot &slot = impl.slots[impl.inputSlots[i]];
    if (slot.kind == Slot::Kind::Dynamic) {
      Status matches = checkInputMatches(*input, *fed);
      if (!matches.ok()) return withLocation(matches, SourceLoc::inFile(impl.model.sourcePath)).diag();
      impl.dynamicValues[slot.dynamic] = *fed;
      continue;
    }
    if (!fed->isTensor() || fed->tensor().dtype() != slot.dtype || fed->tensor().sizes() != slot.sizes) {
      return makeFileError(ErrorCode::ShapeMismatch, impl.model.sourcePath,
                           "input '{}' was compiled for {}; got {}", input->name(), typeString(slot), fed->describe());
    }
    std::memcpy(impl.arena.get() + slot.offset, fed->tensor().rawData(), slot.bytes);
  }

  TESSEL_RETURN_IF_ERROR(impl.execute());

  NamedValues outputs;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Slot &slot = impl.slots[impl.outputSlots[i]];
    RuntimeValue value;
    if (slot.kind == Slot::Kind::Dynamic) {
      value = impl.dynamicValues[slot.dynamic];
    } else {
      Tensor tensor(slot.dtype, slot.sizes);
      const void *source = slot.kind == Slot::Kind::Constant ? slot.constant : impl.arena.get() + slot.offset;
      std::memcpy(tensor.rawData(), source, slot.bytes);
      value = std::move(tensor);
    }
    outputs.emplace_back(graph.outputs()[i]->name(), std::move(value));
  }
  return outputs;
}

// ----- The rest of the API -----

CpuExecutable::CpuExecutable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuExecutable::~CpuExecutable() = default;

namespace {

void setStepProfiling(CpuExecutable::Impl &impl, bool on) {
  impl.profiling = on;
  for (PlannedStep &planned : impl.steps) {
    planned.totalMs = 0;
    planned.runs = 0;
    if (const auto *ifStep = dynamic_cast<const IfStep *>(planned.step.get())) {
      for (int b = 0; b < 2; ++b) {
        if (ifStep->branch(b).plan) setStepProfiling(*ifStep->branch(b).plan, on);
      }
    }
    if (const auto *loopStep = dynamic_cast<const LoopStep *>(planned.step.get())) {
      setStepProfiling(*loopStep->body().plan, on);
    }
    if (const auto *scanStep = dynamic_cast<const ScanStep *>(planned.step.get())) {
      setStepProfiling(*scanStep->body().plan, on);
    }
  }
}

/// The steps of `impl` in plan order, those of an If's branches (a Loop's body) after it, named
/// "If/branch/node" ("Loop/body/node"), timed over every iteration.
void collectProfile(const CpuExecutable::Impl &impl, const std::string &prefix, std::vector<StepProfile> &result) {
  for (const PlannedStep &planned : impl.steps) {
    if (planned.step && planned.step->aliasInput() >= 0) continue;
    StepProfile entry;
    entry.node = prefix + planned.node->name();
    entry.opType = planned.node->opType();
    entry.kernel = planned.step ? planned.step->kernelName() : "reference";
    int out = planned.outputs.empty() ? -1 : planned.outputs[0];
    if (out >= 0) {
      const Slot &slot = impl.slots[out];
      entry.outputType = slot.kind == Slot::Kind::Dynamic ? slot.value->type().str() : typeString(slot);
    }
    entry.totalMs = planned.totalMs;
    entry.runs = planned.runs;
    const size_t at = result.size();
    result.push_back(std::move(entry));
    if (const auto *ifStep = dynamic_cast<const IfStep *>(planned.step.get())) {
      for (int b = 0; b < 2; ++b) {
        const IfStep::Branch &branch = ifStep->branch(b);
        if (!branch.plan) continue;
        collectProfile(*branch.plan, fmt::format("{}{}/{}/", prefix, planned.node->name(), branch.name), result);
      }
    }
    if (const auto *loopStep = dynamic_cast<const LoopStep *>(planned.step.get())) {
      collectProfile(*loopStep->body().plan, fmt::format("{}{}/body/", prefix, planned.node->name()), result);
    }
    if (const auto *scanStep = dynamic_cast<const ScanStep *>(planned.step.get())) {
      collectProfile(*scanStep->body().plan, fmt::format("{}{}/body/", prefix, planned.node->name()), result);
    }
    // A control-flow step's own entry keeps only its own time (picking, copying), so that times
    // add up; nested steps count the runs of the step around them, so ms per run is per model run
    // (a branch not taken, an iteration more or less, all average in).
    for (size_t i = at + 1; i < result.size(); ++i) {
      result[at].totalMs -= result[i].totalMs;
      result[i].runs = planned.runs;
    }
  }
}

}  // namespace

void CpuExecutable::setProfiling(bool on) { setStepProfiling(*impl_, on); }

std::vector<StepProfile> CpuExecutable::profile() const {
  std::vector<StepProfile> result;
  collectProfile(*impl_, "", result);
  return result;
}

const Model &CpuExecutable::model() const { return impl_->model; }
const CpuPlanSummary &CpuExecutable::summary() const { return impl_->summary; }
ThreadPool &CpuExecutable::pool() { return *impl_->pool; }

bool castEverywhereOnThisHost() {
  // A bf16 variant halves the weight bytes; where the host's bf16 dot product is slower than its
  // fp32 FMA, only products of a few rows, bound by their weights rather than the arithmetic, gain.
  static const bool everywhere = [] {
    const char *env = std::getenv("TESSEL_BF16_PRODUCTS");
    return (env != nullptr && std::string_view(env) == "always") || bf16ThroughputRatio() >= 1.0;
  }();
  return everywhere;
}

Expected<std::unique_ptr<CpuExecutable>> compileCpu(Model model, const CpuCompileOptions &options) {
  for (const Value *input : model.graph->inputs()) {
    const Type &type = input->type();
    if (type.isTensor() && !type.shape().isStatic() && !input->hasInitializer()) {
      return makeFileError(ErrorCode::InvalidArgument, model.sourcePath,
                           "input '{}' has shape {}; the cpu target plans static shapes: give its sizes "
                           "(--shape {}=..., or --batch for the leading dim)",
                           input->name(), type.shape().str(), input->name());
    }
  }
  return planStaticModel(std::move(model), options, nullptr, nullptr);
}

Expected<std::unique_ptr<CpuExecutable>> planStaticModel(Model model, const CpuCompileOptions &options, ThreadPool *pool,
                                                         PackedConstants *shared) {
  // -O0 runs no passes but shape inference, so that sizes fixed at the inputs reach every value.
  const bool promotesHalf = options.optLevel >= 1 && computesHalf(*model.graph);
  TESSEL_RETURN_IF_ERROR(optimizeForCpu(model, options.optLevel));
  // Packed constants are keyed by node name, so every node needs a distinct one.
  model.graph->nameNodesUniquely();

  auto impl = std::make_unique<CpuExecutable::Impl>();
  impl->model = std::move(model);
  impl->options = options;
  impl->pool = pool;
  impl->sharedConstants = shared;
  TESSEL_RETURN_IF_ERROR(impl->plan());
  impl->summary.promotedHalf = promotesHalf;
  return std::make_unique<CpuExecutable>(std::move(impl));
}

}  // namespace tessel::cpu
