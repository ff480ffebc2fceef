// Text forms of a compiled kernel for tests and people: the allocation (its policy, then one line per
// tile with the tiles whose bytes it reuses, then one line per spill) and the schedule (per engine and
// DMA queue, its instructions in program order with the scheduler's estimated start and end times).
// Both are deterministic.
#include <map>

#include <fmt/format.h>

#include "targets/nc/isa/disassembler.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/schedule.h"

namespace tessel::nc::tile {

std::string printAllocation(const Kernel &kernel, const CompiledKernel &compiled) {
  std::string text = fmt::format("allocation '{}': SBUF peak {} bytes per partition, PSUM peak {}, policy {}",
                                 compiled.name, compiled.peakSbufBytesPerPartition, compiled.peakPsumBytesPerPartition,
                                 compiled.allocationPolicy);
  if (!compiled.spills.empty())
    text += fmt::format(", {} spill{} (furthest next use)", compiled.spills.size(), compiled.spills.size() == 1 ? "" : "s");
  text += "\n";
  for (const HbmPlacement &tensor : compiled.hbmTensors)
    text += fmt::format("  {} {}: HBM offset {} {}[{}]\n",
                        tensor.isScratch ? "scratch" : tensor.isOutput ? "output" : "input", tensor.name,
                        tensor.offsetBytes, dtypeName(tensor.dtype), fmt::join(tensor.shape, ", "));
  // The tiles the spills added are not in the kernel as written; their names are in the spills.
  auto tileName = [&](int32_t tile) -> std::string {
    if (tile >= 0 && static_cast<size_t>(tile) < kernel.tiles.size()) return kernel.tiles[tile].name;
    for (const Spill &spill : compiled.spills) {
      if (spill.reloadTile == tile) return spill.reloadName;
      if (spill.to == MemSpace::SBUF && spill.holder == tile) return spill.holderName;
    }
    return "?";
  };
  for (size_t t = 0; t < compiled.tiles.size(); ++t) {
    const TilePlacement &placement = compiled.tiles[t];
    const std::string name = tileName(placement.tile);
    if (placement.firstOp < 0) {
      text += fmt::format("  tile #{} {}: {} unused\n", t, name, placement.space == MemSpace::PSUM ? "PSUM" : "SBUF");
      continue;
    }
    text += fmt::format("  tile #{} {}: {} offset {} bytes {} ops #{}..#{}", t, name,
                        placement.space == MemSpace::PSUM ? "PSUM" : "SBUF", placement.offsetBytes,
                        placement.bytesPerPartition, placement.firstOp, placement.lastOp);
    // Whose bytes it takes over: the reuse the dependences order it after.
    if (t < compiled.tilePredecessors.size() && !compiled.tilePredecessors[t].empty())
      text += fmt::format(" reuses #{}", fmt::join(compiled.tilePredecessors[t], " #"));
    text += "\n";
  }
  for (const Spill &spill : compiled.spills) {
    if (spill.reloaded) {
      text += fmt::format("  spill #{} {} ({} bytes, SBUF full at op #{}): a copy of HBM {}, not saved; loaded again "
                          "before op #{} into tile #{} {}\n",
                          spill.tile, tileName(spill.tile), spill.bytesPerPartition, spill.pressureOp,
                          spill.holderName, spill.reloadBeforeOp, spill.reloadTile, spill.reloadName);
      continue;
    }
    const char *from = spill.from == MemSpace::PSUM ? "PSUM" : "SBUF";
    std::string holder = spill.to == MemSpace::HBM ? fmt::format("HBM {}", spill.holderName)
                                                   : fmt::format("SBUF tile #{} {}", spill.holder, spill.holderName);
    text += fmt::format("  spill #{} {} ({} bytes, {} full at op #{}): saved after op #{} to {}, back before op #{} "
                        "into tile #{} {}\n",
                        spill.tile, tileName(spill.tile), spill.bytesPerPartition, from, spill.pressureOp,
                        spill.saveAfterOp, holder, spill.reloadBeforeOp, spill.reloadTile, spill.reloadName);
  }
  return text;
}

std::string printSchedule(const CompiledKernel &compiled) {
  // Streams in the order PE, DVE, ACT, POOL, SP, then DMA queues by number.
  std::map<int, std::vector<size_t>> streams;
  for (size_t k = 0; k < compiled.program.size(); ++k) {
    const Instruction &insn = compiled.program[k];
    int stream = insn.engine == Engine::DMA ? kFirstDmaStream + insn.queue : static_cast<int>(insn.engine);
    streams[stream].push_back(k);
  }
  std::string text = fmt::format("schedule '{}': {} instructions, estimated {:.1f} ns\n", compiled.name,
                                 compiled.program.size(), compiled.estimatedNs);
  for (const auto &[stream, indices] : streams) {
    text += fmt::format("{}:\n", streamName(stream));
    for (size_t k : indices) {
      double start = k < compiled.timing.size() ? compiled.timing[k].startNs : 0;
      double end = k < compiled.timing.size() ? compiled.timing[k].endNs : 0;
      int32_t op = k < compiled.timing.size() ? compiled.timing[k].op : -1;
      text += fmt::format("  {:>10.1f} {:>10.1f}  #{} op{} {}\n", start, end, k, op,
                          formatInstruction(compiled.program[k]));
    }
  }
  return text;
}

}  // namespace tessel::nc::tile
