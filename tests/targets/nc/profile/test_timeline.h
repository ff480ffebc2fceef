// A small hand-made Timeline and its program for the profiler tests, with every number the tests
// expect worked out in the comments, plus a generator of large timelines.
#pragma once

#include <iterator>
#include <string>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/sim/timeline.h"

namespace tessel::nc::testing {

inline AccessPattern sbuf(uint8_t partitions, uint32_t elements, DType dtype = DType::BF16) {
  AccessPattern ap;
  ap.space = MemSpace::SBUF;
  ap.partitionCount = partitions;
  ap.dims = {FreeDim{1, elements}};
  ap.dtype = dtype;
  return ap;
}

inline AccessPattern psum(uint8_t partitions, uint32_t elements) {
  AccessPattern ap = sbuf(partitions, elements, DType::F32);
  ap.space = MemSpace::PSUM;
  return ap;
}

inline AccessPattern hbm(uint64_t offsetBytes, uint32_t elements) {
  AccessPattern ap;
  ap.space = MemSpace::HBM;
  ap.offsetBytes = offsetBytes;
  ap.dims = {FreeDim{1, elements}};
  ap.dtype = DType::BF16;
  return ap;
}

inline Instruction makeInstruction(Opcode opcode, Engine engine, std::vector<AccessPattern> operands) {
  Instruction insn;
  insn.opcode = opcode;
  insn.engine = engine;
  for (size_t i = 0; i < operands.size(); ++i) insn.operands[i] = operands[i];
  return insn;
}

/// Program of the small timeline: 0 nc_matmul, 1 nc_transpose (PE), 2-3 activation, 4-6 dma_copy,
/// 7 tensor_tensor.
inline std::vector<Instruction> smallProgram() {
  std::vector<Instruction> program;
  program.push_back(makeInstruction(Opcode::NcMatmul, Engine::PE, {psum(128, 512), sbuf(128, 128), sbuf(128, 512)}));
  program.push_back(makeInstruction(Opcode::NcTranspose, Engine::PE, {psum(128, 128), sbuf(128, 128)}));
  Instruction act = makeInstruction(Opcode::Activation, Engine::ACT, {sbuf(128, 512), psum(128, 512)});
  act.func = ActFunc::Exp;
  program.push_back(act);
  program.push_back(act);
  program.push_back(makeInstruction(Opcode::DmaCopy, Engine::DMA, {sbuf(128, 32), hbm(0, 4096)}));
  program.push_back(makeInstruction(Opcode::DmaCopy, Engine::DMA, {sbuf(128, 16), hbm(8192, 2048)}));
  program.push_back(makeInstruction(Opcode::DmaCopy, Engine::DMA, {hbm(65536, 8192), sbuf(128, 64)}));
  program.push_back(makeInstruction(Opcode::TensorTensor, Engine::DVE, {sbuf(128, 64), sbuf(128, 64), sbuf(128, 64)}));
  return program;
}

inline TimelineEvent makeEvent(size_t instruction, std::string track, std::string name, double readyNs,
                               double startNs, double endNs, double completeNs, StallReason stall = StallReason::None) {
  TimelineEvent event;
  event.instruction = instruction;
  event.track = std::move(track);
  event.name = std::move(name);
  event.readyNs = readyNs;
  event.startNs = startNs;
  event.endNs = endNs;
  event.completeNs = completeNs;
  event.stall = stall;
  return event;
}

inline TimelineEvent dmaEvent(size_t instruction, std::string queue, double readyNs, double startNs, double endNs,
                              double completeNs, uint64_t bytes, uint64_t chunks, bool toHbm) {
  TimelineEvent event = makeEvent(instruction, std::move(queue), "dma_copy", readyNs, startNs, endNs, completeNs,
                                  startNs > readyNs ? StallReason::DmaEngine : StallReason::None);
  event.dmaBytes = bytes;
  event.dmaChunks = chunks;
  (toHbm ? event.hbmWriteBytes : event.hbmReadBytes) = bytes;
  return event;
}

/// 1000 ns run, PE peak 1e12 FLOP/s (1e6 FLOPs in the run), HBM peak 100 B/ns (1e5 B in the run).
///   PE:   LS [0,100], MM [100,400] (3e5 matmul FLOPs), transpose [500,600] (5e4 PE FLOPs, port stall
///         100 ns) -> PE.LoadStationary 10 %, PE.Matmul 40 %, PE 50 %; MFU 30 %, HFU 35 %.
///   ACT:  [450,550] (semaphore stall 250 ns on s3>=2), [550,700] -> 25 %.
///   DMA:  q0 [0,300] 8192 B read / 4 chunks and [200,500] 4096 B read / 2 chunks (dma_engine stall
///         100 ns; overlaps the first: two lanes), q1 [600,900] 16384 B written / 8 chunks
///         -> DMA 80 % (bounding), q0 50 %, q1 30 %; MBU 28672 / 1e5 = 28.672 %; average DMA 28672/3 B,
///         average chunk 2048 B.
///   DVE:  [750.5, 800.25] (port stall 50.5 ns) -> 4.975 %.
inline Timeline smallTimeline() {
  Timeline timeline;
  timeline.profileName = "nc-v2";
  timeline.totalNs = 1000;
  timeline.pePeakFlopsPerSec = 1e12;
  timeline.hbmPeakBytesPerNs = 100;
  std::vector<TimelineEvent> &events = timeline.events;
  events.push_back(makeEvent(0, "PE.LoadStationary", "LoadStationary", 0, 0, 100, 100));
  events.push_back(dmaEvent(4, "DMA.q0", 0, 0, 300, 350, 8192, 4, /*toHbm=*/false));
  TimelineEvent matmul = makeEvent(0, "PE.Matmul", "Matmul", 100, 100, 400, 450);
  matmul.matmulFlops = 3e5;
  matmul.peFlops = 3e5;
  events.push_back(matmul);
  events.push_back(dmaEvent(5, "DMA.q0", 100, 200, 500, 550, 4096, 2, /*toHbm=*/false));
  TimelineEvent act = makeEvent(2, "ACT", "activation", 200, 450, 550, 600, StallReason::Semaphore);
  act.waitedOn = SemaphoreWait{3, 2};
  events.push_back(act);
  TimelineEvent transpose = makeEvent(1, "PE.Matmul", "nc_transpose", 400, 500, 600, 650, StallReason::Port);
  transpose.peFlops = 5e4;
  events.push_back(transpose);
  events.push_back(makeEvent(3, "ACT", "activation", 550, 550, 700, 750));
  events.push_back(dmaEvent(6, "DMA.q1", 600, 600, 900, 1000, 16384, 8, /*toHbm=*/true));
  events.push_back(makeEvent(7, "DVE", "tensor_tensor", 700, 750.5, 800.25, 850, StallReason::Port));
  return timeline;
}

/// A timeline of `count` events spread round-robin over DVE, ACT, POOL, PE.Matmul and 4 DMA queues
/// (instruction i is event i), for size and speed tests.
inline Timeline largeTimeline(size_t count) {
  Timeline timeline;
  timeline.profileName = "nc-v3";
  timeline.pePeakFlopsPerSec = 1e12;
  timeline.hbmPeakBytesPerNs = 100;
  const char *tracks[] = {"DVE", "ACT", "POOL", "DMA.q0", "DMA.q1", "DMA.q2", "DMA.q3", "PE.Matmul"};
  constexpr size_t kTracks = std::size(tracks);
  for (size_t i = 0; i < count; ++i) {
    double start = static_cast<double>(i / kTracks) * 100.0;
    std::string track = tracks[i % kTracks];
    bool dma = track.starts_with("DMA");
    TimelineEvent event = dma ? dmaEvent(i, track, start - 10, start, start + 80, start + 90, 4096, 8, false)
                              : makeEvent(i, track, track == "PE.Matmul" ? "Matmul" : "tensor_copy", start, start,
                                          start + 60, start + 70);
    timeline.events.push_back(std::move(event));
  }
  timeline.totalNs = count ? static_cast<double>((count - 1) / kTracks) * 100.0 + 90 : 0;
  return timeline;
}

}  // namespace tessel::nc::testing
