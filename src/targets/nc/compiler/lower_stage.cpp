// Lowering and compiling one device stage; see lower_stage.h.
#include "targets/nc/compiler/lower_stage.h"

#include <fmt/format.h>

#include "ops/flops.h"
#include "targets/nc/kernels/runner.h"
#include "targets/nc/tile/compile.h"

namespace tessel::nc::compiler {
namespace {

/// The share of SBUF live activations may take before the one read again the latest is spilled to
/// HBM; the rest holds weights in flight, per-op temporaries and the constants.
constexpr double kActivationSbufShare = 0.5;


}  // namespace

Expected<DeviceProgram> lowerStage(const Stage &stage, size_t stageIndex, const MachineProfile &profile,
                                   const LoweringOptions &options, std::map<std::string, int32_t> &nodeIds,
                                   std::vector<std::string> &nodeNames) {
  tile::KernelBuilder builder(fmt::format("stage{}", stageIndex), profile);
  LoweringContext ctx(builder, options);
  DeviceProgram program;
  for (const Value *in : stage.inputs) {
    // Only a launch input (OpLowering::launchInput) reaches a device stage as an int64 graph input.
    if (isLaunchValue(*in)) {
      ctx.bindLaunchRegister(in, static_cast<int>(program.launchRegisters.size()));
      program.launchRegisters.push_back(in->name());
      continue;
    }
    ctx.bindInput(in, DType::F32);
    program.inputs.push_back(in->name());
  }
  // Where each value is read last (stage outputs: at the end), for spilling.
  std::map<const Value *, size_t> lastUse;
  for (size_t i = 0; i < stage.nodes.size(); ++i)
    for (const Value *in : stage.nodes[i]->inputs())
      if (in) lastUse[in] = i;
  for (const Value *out : stage.outputs) lastUse[out] = stage.nodes.size();
  ctx.setStageOutputs(std::set<const Value *>(stage.outputs.begin(), stage.outputs.end()));
  auto nextUse = [&](const Value *v, size_t after) {
    for (size_t i = after + 1; i < stage.nodes.size(); ++i)
      for (const Value *in : stage.nodes[i]->inputs())
        if (in == v) return i;
    return stage.nodes.size();
  };
  const int64_t budget = static_cast<int64_t>(profile.sbuf.bytesPerPartition * kActivationSbufShare);
  std::vector<const Value *> defined;
  std::vector<int32_t> opNode;
  size_t index = 0;
  ctx.setReadAfter([&](const Value *v) {
    auto last = lastUse.find(v);
    return last != lastUse.end() && last->second > index;
  });
  for (; index < stage.nodes.size(); ++index) {
    const Node *node = stage.nodes[index];
    const std::string label = node->name().empty() ? fmt::format("#{} {}", nodeNames.size(), node->opType())
                                                   : fmt::format("{} ({})", node->name(), node->opType());
    ctx.beginNode(label);
    const OpLowering *lowering = findOpLowering(*node);
    Status emitted = lowering ? lowering->emit(ctx, *node) : ctx.unsupported(*node, "no lowering");
    if (emitted.ok() && builder.failed()) emitted = builder.finish().status();  // A tile op it recorded.
    if (!emitted.ok()) {
      Diagnostic diag = emitted.diag();
      if (diag.loc.node.empty()) {
        diag.loc.node = node->name();
        diag.loc.opType = node->opType();
      }
      return diag;
    }
    auto [it, added] = nodeIds.try_emplace(label, static_cast<int32_t>(nodeNames.size()));
    if (added) nodeNames.push_back(label);
    opNode.resize(builder.kernel().ops.size(), it->second);

    // Spill: while the live activations take more than their share of SBUF, the one read again
    // the latest goes to HBM until then (never one the next node reads).
    for (const Value *out : node->outputs())
      if (out) defined.push_back(out);
    for (;;) {
      std::map<int32_t, int64_t> tiles;
      const Value *victim = nullptr;
      size_t victimUse = index + 1;
      for (const Value *v : defined) {
        auto last = lastUse.find(v);
        if (last == lastUse.end() || last->second <= index) continue;
        for (const auto &[tile, bytes] : ctx.sbufTilesOf(v)) tiles[tile] = bytes;
        const size_t use = nextUse(v, index);
        if (use > victimUse && !ctx.sbufTilesOf(v).empty()) victim = v, victimUse = use;
      }
      int64_t live = 0;
      for (const auto &[tile, bytes] : tiles) live += bytes;
      if (live <= budget || !victim) break;
      Status spilled = ctx.spill(victim);
      if (spilled.ok() && builder.failed()) spilled = builder.finish().status();
      if (!spilled.ok()) return spilled.diag();
      ++program.spilledActivations;
    }
  }
  ctx.beginNode("stage outputs");
  for (const Value *out : stage.outputs) {
    if (const Value *buffer = ctx.inPlaceInputOf(out)) {
      program.inPlaceOutputs.emplace_back(out->name(), buffer->name());
      program.outputs.push_back(out->name());
      continue;
    }
    tile::HbmView hbm = builder.output(out->name(), DType::F32, hbmShape(staticShape(out)));
    auto t = ctx.activation(out);
    Status stored = t.ok() ? storeToHbm(ctx, *t, hbm) : t.status();
    if (stored.ok() && builder.failed()) stored = builder.finish().status();
    if (!stored.ok()) return stored.diag();
    program.outputs.push_back(out->name());
  }
  opNode.resize(builder.kernel().ops.size(), -1);
  TESSEL_ASSIGN_OR_RETURN(tile::Kernel kernel, builder.finish());
  if (options.pinnedConstants) kernel.pinnedConstants = *options.pinnedConstants;
  TESSEL_ASSIGN_OR_RETURN(tile::CompiledKernel compiled, tile::compileKernel(kernel, profile));
  program.program = std::move(compiled.program);
  program.hbmTensors = std::move(compiled.hbmTensors);
  program.hbmBytes = compiled.hbmBytes;
  program.peakSbufBytesPerPartition = compiled.peakSbufBytesPerPartition;
  program.peakPsumBytesPerPartition = compiled.peakPsumBytesPerPartition;
  program.estimatedNs = compiled.estimatedNs;
  for (const tile::InstructionTiming &t : compiled.timing)
    program.instructionNode.push_back(t.op >= 0 && t.op < static_cast<int32_t>(opNode.size()) ? opNode[t.op] : -1);
  for (const LoweringContext::ConstantData &c : ctx.constants()) {
    auto bytes = c.encoded ? c.encoded : std::make_shared<const std::vector<uint8_t>>(kernels::encodeValues(c.dtype, c.values));
    program.constantBytes += bytes->size();
    program.constantImage.emplace_back(program.hbmTensors[static_cast<size_t>(c.tensor)].offsetBytes, std::move(bytes));
  }
  for (const Node *node : stage.nodes) program.modelFlops += static_cast<double>(contractionFlops(*node).value_or(0));
  program.layout = ctx.layoutNotes();
  return program;
}

}  // namespace tessel::nc::compiler
