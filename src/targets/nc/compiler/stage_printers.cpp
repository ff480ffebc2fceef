// What each compiler stage decided, as text (`tessel compile --emit=STAGE`): the partition into host
// and device stages, the layout of each activation (which axis on partitions, every relayout and
// how it is done), the memory of each device program, the lowering of each node into
// instructions, each engine's order of work (the schedule), and the programs as assembly. The
// printers read only the executable, so an artifact prints the same as the compile that wrote it;
// the compile report (`--report`) is made of the same parts.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "targets/nc/compiler/executable.h"
#include "targets/nc/isa/disassembler.h"
#include "targets/nc/machine/engine.h"

namespace tessel::nc::compiler {

namespace {

std::string nodeLabel(const NcExecutable &exe, int32_t node) {
  return node >= 0 && static_cast<size_t>(node) < exe.nodeNames().size() ? exe.nodeNames()[static_cast<size_t>(node)]
                                                                         : "(host <-> device transfer)";
}

std::string printFallbacks(const NcExecutable &exe) {
  std::string text = fmt::format("host fallbacks: {}\n", exe.fallbacks().size());
  for (const Fallback &f : exe.fallbacks()) text += fmt::format("  {} ({}): {}\n", f.node, f.opType, f.reason);
  return text;
}

int64_t relayoutCount(const DeviceProgram &prog) {
  return std::count_if(prog.layout.begin(), prog.layout.end(),
                       [](const LayoutNote &n) { return n.relayout; });
}

std::string printPartition(const NcExecutable &exe, const std::vector<NcExecutable::StageRef> &stages) {
  std::string text;
  const Graph &graph = *exe.model().graph;
  std::vector<const Node *> nodes;
  for (const auto &node : graph.nodes()) nodes.push_back(node.get());
  const std::vector<std::string> hostPlans = exe.hostStagePlans();
  size_t host = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const NcExecutable::StageRef &stage = stages[s];
    text += fmt::format("stage {}: {}", s, s < exe.stageText().size() ? exe.stageText()[s] : "");
    if (stage.onDevice) {
      text += fmt::format("; programs {}..{} ({} core{})\n", stage.program, stage.program + stage.cores - 1, stage.cores,
                          stage.cores > 1 ? "s" : "");
      // The device stage's nodes, in the order their instructions first appear.
      std::vector<int32_t> order;
      for (int32_t node : exe.programs()[static_cast<size_t>(stage.program)].instructionNode)
        if (node >= 0 && std::find(order.begin(), order.end(), node) == order.end()) order.push_back(node);
      for (int32_t node : order) text += fmt::format("  {}\n", nodeLabel(exe, node));
    } else {
      text += fmt::format("; on {}\n", host < hostPlans.size() ? hostPlans[host] : "the host");
      ++host;
      for (int64_t index : stage.nodes)
        if (index >= 0 && static_cast<size_t>(index) < nodes.size())
          text += fmt::format("  {} ({})\n", nodes[static_cast<size_t>(index)]->name(), nodes[static_cast<size_t>(index)]->opType());
    }
  }
  return text + printFallbacks(exe);
}

std::string printLayout(const NcExecutable &exe) {
  std::string text;
  for (size_t p = 0; p < exe.programs().size(); ++p) {
    const DeviceProgram &prog = exe.programs()[p];
    const int64_t relayouts = relayoutCount(prog);
    text += fmt::format("program {}: {} relayout{}\n", p, relayouts, relayouts == 1 ? "" : "s");
    const std::string *node = nullptr;
    for (const LayoutNote &note : prog.layout) {
      if (!node || *node != note.node) text += fmt::format("  {}\n", note.node);
      node = &note.node;
      text += fmt::format("    {}\n", note.text);
    }
  }
  if (exe.programs().empty()) text += "no device program\n";
  return text;
}

std::string printMemory(const NcExecutable &exe) {
  std::string text;
  const MachineProfile &profile = exe.profile();
  for (size_t p = 0; p < exe.programs().size(); ++p) {
    const DeviceProgram &prog = exe.programs()[p];
    text += fmt::format("program {}: SBUF peak {} of {} bytes per partition; PSUM peak {} of {}; HBM {} bytes ({} of "
                        "constants); {} activations spilled to HBM\n",
                        p, prog.peakSbufBytesPerPartition, profile.sbuf.bytesPerPartition, prog.peakPsumBytesPerPartition,
                        profile.psum.bytesPerPartition, prog.hbmBytes, prog.constantBytes, prog.spilledActivations);
    for (const tile::HbmPlacement &t : prog.hbmTensors) {
      auto listed = [&](const std::vector<std::string> &names) { return std::find(names.begin(), names.end(), t.name) != names.end(); };
      const char *role = listed(prog.inputs)              ? "stage input"
                         : listed(prog.outputs)           ? "stage output"
                         : t.name.starts_with("spill/")   ? "spilled activation"
                         : t.isOutput                     ? "scratch"
                                                          : "constant";
      text += fmt::format("  hbm {:>10}  {}[{}]  {}  {}\n", t.offsetBytes, dtypeName(t.dtype), fmt::join(t.shape, ","), t.name,
                          role);
    }
  }
  if (exe.programs().empty()) text += "no device program\n";
  return text;
}

std::string printLowering(const NcExecutable &exe) {
  std::string text;
  for (size_t p = 0; p < exe.programs().size(); ++p) {
    const DeviceProgram &prog = exe.programs()[p];
    text += fmt::format("program {}: {} instructions\n", p, prog.program.size());
    // Per node (in order of first instruction), its instructions by opcode.
    std::vector<int32_t> order;
    std::map<int32_t, std::map<std::string, int>> counts;
    for (size_t i = 0; i < prog.program.size() && i < prog.instructionNode.size(); ++i) {
      const int32_t node = prog.instructionNode[i];
      if (!counts.count(node)) order.push_back(node);
      ++counts[node][std::string(mnemonic(prog.program[i].opcode))];
    }
    for (int32_t node : order) {
      std::vector<std::string> parts;
      for (const auto &[op, n] : counts[node]) parts.push_back(fmt::format("{} {}", op, n));
      text += fmt::format("  {}: {}\n", nodeLabel(exe, node), fmt::join(parts, ", "));
    }
  }
  if (exe.programs().empty()) text += "no device program\n";
  return text;
}

std::string printSchedule(const NcExecutable &exe) {
  std::string text;
  for (size_t p = 0; p < exe.programs().size(); ++p) {
    const DeviceProgram &prog = exe.programs()[p];
    text += fmt::format("program {}: scheduler estimate {:.3f} us\n", p, prog.estimatedNs / 1000.0);
    // Each engine's instructions in program order (its queue order), runs of one node merged.
    std::map<std::string, std::vector<std::pair<int32_t, int>>> runs;
    for (size_t i = 0; i < prog.program.size() && i < prog.instructionNode.size(); ++i) {
      const Instruction &insn = prog.program[i];
      const std::string engine = insn.opcode == Opcode::DmaCopy ? fmt::format("DMA.q{}", insn.queue)
                                                                : std::string(engineName(insn.engine));
      auto &list = runs[engine];
      if (!list.empty() && list.back().first == prog.instructionNode[i]) {
        ++list.back().second;
      } else {
        list.emplace_back(prog.instructionNode[i], 1);
      }
    }
    for (const auto &[engine, list] : runs) {
      std::vector<std::string> parts;
      for (const auto &[node, n] : list) parts.push_back(n > 1 ? fmt::format("{} x{}", nodeLabel(exe, node), n) : nodeLabel(exe, node));
      text += fmt::format("  {}: {}\n", engine, fmt::join(parts, "; "));
    }
  }
  if (exe.programs().empty()) text += "no device program\n";
  return text;
}

std::string printAsm(const NcExecutable &exe) {
  std::string text;
  for (size_t p = 0; p < exe.programs().size(); ++p)
    text += fmt::format("# program {}\n{}", p, disassemble(exe.programs()[p].program));
  if (exe.programs().empty()) text += "# no device program\n";
  return text;
}

}  // namespace

std::string NcExecutable::report() const {
  std::string text = fmt::format("target {}; auto-cast {} ({}); {} stages\n", profile_.name,
                                 options_.lowering.autoCast == AutoCast::None   ? "none"
                                 : options_.lowering.autoCast == AutoCast::All ? "all"
                                                                                : "matmul",
                                 dtypeName(options_.lowering.castType), stages_.size());
  for (const std::string &line : stageText_) text += "  " + line + "\n";
  for (size_t p = 0; p < programs_.size(); ++p) {
    const DeviceProgram &prog = programs_[p];
    text += fmt::format(
        "device program {}: {} instructions; SBUF peak {} per partition of {} ({:.0f}%); PSUM peak {} of {}; HBM {} "
        "({} constants) of {}; {} activations spilled; {} relayouts; scheduler estimate {:.3f} us\n",
        p, prog.program.size(), bytesText(prog.peakSbufBytesPerPartition), bytesText(profile_.sbuf.bytesPerPartition),
        100.0 * static_cast<double>(prog.peakSbufBytesPerPartition) / static_cast<double>(profile_.sbuf.bytesPerPartition),
        bytesText(prog.peakPsumBytesPerPartition), bytesText(profile_.psum.bytesPerPartition), bytesText(prog.hbmBytes),
        bytesText(prog.constantBytes), bytesText(profile_.hbm.bytesPerCore), prog.spilledActivations,
        relayoutCount(prog), prog.estimatedNs / 1000.0);
  }
  if (programs_.empty()) text += "no device program: every node runs on the host (the fallbacks say why)\n";
  for (const std::string &plan : hostStagePlans()) text += fmt::format("host stage on {}\n", plan);
  return text + printFallbacks(*this);
}

Expected<std::string> NcExecutable::emit(const std::string &stage) const {
  if (stage == "partition") return printPartition(*this, stages_);
  if (stage == "layout") return printLayout(*this);
  if (stage == "memory") return printMemory(*this);
  if (stage == "lowering") return printLowering(*this);
  if (stage == "schedule") return printSchedule(*this);
  if (stage == "asm") return printAsm(*this);
  return makeError(ErrorCode::InvalidArgument,
                   "--emit={}: the accelerator prints partition, layout, memory, lowering, schedule or asm",
                   stage);
}

}  // namespace tessel::nc::compiler
