// The accelerator's model compiler, read top to bottom (compileNc): graph passes -> the HBM fit of the
// weights -> partition (partition.h: each node's exact check) -> per device stage and core, lowering and
// the memory plan (lower_stage.h: emitters, layouts, spills) and the kernel compile (tile/compile.h:
// allocation, dependences, schedule, semaphores) -> programs -> the host stages planned on the cpu
// target. The artifact and the run are executable.cpp's.
#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "passes/pipelines.h"
#include "support/memory_budget.h"
#include "targets/nc/compiler/executable.h"
#include "targets/nc/compiler/lower_stage.h"

namespace tessel::nc::compiler {
namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Bytes the constants of the device nodes will take in HBM, before lowering (weights in the cast type).
uint64_t estimateConstantBytes(const Graph &graph, const LoweringOptions &options) {
  const uint64_t castBytes =
      options.autoCast == AutoCast::None ? 4 : static_cast<uint64_t>(dtypeSizeBytes(options.castType));
  uint64_t total = 0;
  for (const Value *init : graph.initializers())
    if (init->type().dtype() == tessel::DType::Float32 && init->initializer().rank() >= 2)
      total += static_cast<uint64_t>(init->initializer().numel()) * castBytes;
  return total;
}

}  // namespace

Expected<std::unique_ptr<NcExecutable>> compileNc(Model model, const NcCompileOptions &options) {
  const Clock::time_point start = Clock::now();
  auto exe = std::make_unique<NcExecutable>();
  exe->options_ = options;
  TESSEL_ASSIGN_OR_RETURN(exe->profile_, loadProfile(options.target));
  if (options.lowering.cores < 1 || options.lowering.cores > exe->profile_.chip.coresPerChip) {
    return makeError(ErrorCode::InvalidArgument, "--cores {}: a {} chip has 1 to {} cores", options.lowering.cores,
                     exe->profile_.name, exe->profile_.chip.coresPerChip);
  }

  // The pass pipeline minus two cpu choices: assign-layout (the accelerator picks layouts per
  // tensor while lowering) and fuse-qdq (the int8 products are the cpu's VNNI kernels; the
  // accelerator computes a QDQ model's products in float, its weights folded). After the first
  // shape inference, a dynamically quantized model's integer products become float ones
  // (float-dynamic-quantization), before the fusions that take the Mul and Add after them.
  std::vector<std::string> passes;
  for (const PipelineStep &step : pipelineForLevel(options.optLevel)) {
    if (step.pass == "assign-layout" || step.pass == "fuse-qdq") continue;
    passes.emplace_back(step.pass);
    if (passes.size() == 1 && options.optLevel > 0) passes.emplace_back("float-dynamic-quantization");
  }
  for (const std::string &pass : passes) {
    const Clock::time_point t0 = Clock::now();
    PassManager manager;
    TESSEL_RETURN_IF_ERROR(manager.addPass(pass));
    TESSEL_RETURN_IF_ERROR(manager.run(model).status());
    exe->passTimes_.push_back(PassTime{pass, msSince(t0)});
  }
  Clock::time_point t0 = Clock::now();
  inlineConstantNodes(*model.graph);
  TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());

  const uint64_t constantBytes = estimateConstantBytes(*model.graph, options.lowering);
  const uint64_t hbmBytes = static_cast<uint64_t>(exe->profile_.hbm.bytesPerCore);
  if (constantBytes > hbmBytes) {
    return makeError(ErrorCode::InvalidModel,
                     "the model's weights need {} of HBM ({} bytes), but one {} core has {} ({} bytes): it does not fit "
                     "by {} bytes; use a narrower --auto-cast-type",
                     bytesText(constantBytes), constantBytes, exe->profile_.name, bytesText(hbmBytes), hbmBytes,
                     constantBytes - hbmBytes);
  }

  std::map<const Node *, int64_t> nodeIndex;
  for (const auto &node : model.graph->nodes()) nodeIndex.emplace(node.get(), static_cast<int64_t>(nodeIndex.size()));
  LoweringOptions lowering = options.lowering;
  lowering.profile = &exe->profile_;
  const Partition partition = partitionGraph(*model.graph, lowering);
  std::map<std::string, int32_t> nodeIds;
  for (size_t s = 0; s < partition.stages.size(); ++s) {
    const Stage &stage = partition.stages[s];
    NcExecutable::StageRef ref;
    ref.onDevice = stage.onDevice;
    if (!stage.onDevice) {
      for (const Node *n : stage.nodes) ref.nodes.push_back(nodeIndex.at(n));
    } else {
      ref.program = static_cast<int>(exe->programs_.size());
      ref.cores = lowering.cores;
      for (int core = 0; core < lowering.cores; ++core) {
        LoweringOptions perCore = lowering;
        perCore.core = core;
        if (exe->programs_.size() < options.constantLayouts.size())
          perCore.pinnedConstants = &options.constantLayouts[exe->programs_.size()];
        auto program = lowerStage(stage, s, exe->profile_, perCore, nodeIds, exe->nodeNames_);
        // The partition's checks are exact: a node they accept always lowers. A failure here is a
        // check that misses a case, reported as the compiler's fault rather than moved to the host.
        if (!program.ok())
          return makeError(ErrorCode::Internal,
                           "{}: device stage {} failed to compile although the partition accepted its nodes (a "
                           "missing check in the accelerator compiler; `--target cpu` runs the model): {}",
                           exe->profile_.name, s, program.diag().str());
        exe->programs_.push_back(std::move(*program));
      }
    }
    exe->stages_.push_back(std::move(ref));
  }
  exe->fallbacks_ = partition.fallbacks;
  exe->passTimes_.push_back(PassTime{"nc: partition, lower, allocate, schedule", msSince(t0)});
  for (size_t s = 0; s < partition.stages.size(); ++s) {
    const Stage &stage = partition.stages[s];
    std::vector<std::string> in, out;
    const DeviceProgram *program = stage.onDevice && s < exe->stages_.size() && exe->stages_[s].program >= 0
                                       ? &exe->programs_[static_cast<size_t>(exe->stages_[s].program)]
                                       : nullptr;
    for (const Value *v : stage.inputs) {
      const bool launch = program && std::find(program->launchRegisters.begin(), program->launchRegisters.end(),
                                                v->name()) != program->launchRegisters.end();
      in.push_back(launch ? v->name() + " (launch register)" : v->name());
    }
    for (const Value *v : stage.outputs) {
      std::string text = v->name();
      if (program)
        for (const auto &[output, buffer] : program->inPlaceOutputs)
          if (output == v->name()) text += fmt::format(" (written in place in {})", buffer);
      out.push_back(std::move(text));
    }
    exe->stageText_.push_back(fmt::format("{} stage: {} nodes; in: {}; out: {}", stage.onDevice ? "device" : "host",
                                          stage.nodes.size(), fmt::join(in, ", "), fmt::join(out, ", ")));
  }
  exe->model_ = std::move(model);
  // What the compile shared with other buckets is not the executable's.
  exe->options_.lowering.constantCache = nullptr;
  exe->options_.constantLayouts.clear();
  const Clock::time_point hostStart = Clock::now();
  exe->planHostStages();
  if (!exe->hostPlans_.empty()) exe->passTimes_.push_back(PassTime{"nc: host stages on the cpu target", msSince(hostStart)});
  exe->compileSeconds_ = msSince(start) / 1000.0;
  return exe;
}

}  // namespace tessel::nc::compiler
