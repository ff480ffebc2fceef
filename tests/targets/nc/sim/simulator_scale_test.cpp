// The simulator on a full-size program: the naive tiled matmul [4096, 8192] x [8192, 8192] bf16
// (section 11 anchor 2's shape) as one nc_matmul per 128x128x512 block (1/8 of the rows in debug builds), each with its own stationary
// and moving loads (double-buffered through semaphores), a PSUM eviction on ACT and a store per
// output tile: ~100k instructions. It must simulate in seconds in timing-only mode and, with race
// detection on, report no race. The simulated time and the run time are printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

struct TiledMatmul {
  int64_t m = 4096, k = 8192, n = 8192;
};

// Debug and sanitizer builds run the same program with 1/8 of the rows (~12k instructions): the
// full size takes minutes there and tests nothing more.
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
constexpr int64_t kRows = 512;
#else
constexpr int64_t kRows = 4096;
#endif

AccessPattern sbuf(uint64_t offsetBytes, uint32_t freeElements, DType dtype) {
  AccessPattern ap;
  ap.partitionCount = 128;
  ap.offsetBytes = offsetBytes;
  ap.dims = {FreeDim{1, freeElements}};
  ap.dtype = dtype;
  return ap;
}

AccessPattern hbmRows(uint64_t offsetBytes, int64_t rowStrideElements, uint32_t rows, uint32_t columns) {
  AccessPattern ap;
  ap.space = MemSpace::HBM;
  ap.offsetBytes = offsetBytes;
  ap.dims = {FreeDim{rowStrideElements, rows}, FreeDim{1, columns}};
  ap.dtype = DType::BF16;
  return ap;
}

Instruction dma(const AccessPattern &dst, const AccessPattern &src, uint8_t queue) {
  Instruction insn;
  insn.opcode = Opcode::DmaCopy;
  insn.engine = Engine::DMA;
  insn.operands[0] = dst;
  insn.operands[1] = src;
  insn.queue = queue;
  return insn;
}

void addWait(Instruction &insn, uint16_t id, int64_t value) {
  if (value > 0) insn.waits.push_back({id, static_cast<uint32_t>(value)});
}

// Semaphores: A/B loads done, matmuls done, evictions done, stores done.
enum : uint16_t { kLoadA = 0, kLoadB = 1, kMatmuls = 2, kEvicted = 3, kStored = 4 };

std::vector<Instruction> tiledMatmul(const MachineProfile &profile, const TiledMatmul &shape) {
  const auto tileK = static_cast<uint32_t>(profile.pe.rows), tileM = static_cast<uint32_t>(profile.pe.cols);
  const auto tileN = static_cast<uint32_t>(profile.psum.bankFp32Elements);
  const uint64_t bankBytes = static_cast<uint64_t>(profile.psum.bytesPerPartition / profile.psum.banks);
  // HBM: A^T [k, m], B [k, n], C [m, n], all bf16. SBUF: two stationary, two moving, two output buffers.
  const uint64_t hbmA = 0, hbmB = hbmA + shape.k * shape.m * 2, hbmC = hbmB + shape.k * shape.n * 2;
  const uint64_t sbufA = 0, sbufB = 2 * tileM * 2, sbufOut = sbufB + 2 * tileN * 2;
  std::vector<Instruction> program;
  int64_t step = 0, tile = 0;
  for (int64_t m0 = 0; m0 < shape.m; m0 += tileM) {
    for (int64_t n0 = 0; n0 < shape.n; n0 += tileN, ++tile) {
      for (int64_t k0 = 0; k0 < shape.k; k0 += tileK, ++step) {
        const uint64_t slot = static_cast<uint64_t>(step % 2);
        // Loads wait until the matmul that used this buffer two steps ago has finished.
        Instruction loadA = dma(sbuf(sbufA + slot * tileM * 2, tileM, DType::BF16),
                                hbmRows(hbmA + (k0 * shape.m + m0) * 2, shape.m, tileK, tileM), 0);
        addWait(loadA, kMatmuls, step - 1);
        loadA.increment = kLoadA;
        Instruction loadB = dma(sbuf(sbufB + slot * tileN * 2, tileN, DType::BF16),
                                hbmRows(hbmB + (k0 * shape.n + n0) * 2, shape.n, tileK, tileN), 1);
        addWait(loadB, kMatmuls, step - 1);
        loadB.increment = kLoadB;
        Instruction matmul;
        matmul.opcode = Opcode::NcMatmul;
        matmul.engine = Engine::PE;
        AccessPattern dst = sbuf(static_cast<uint64_t>(tile % 2) * bankBytes, tileN, DType::F32);
        dst.space = MemSpace::PSUM;
        matmul.operands = {dst, *loadA.operands[0], *loadB.operands[0]};
        matmul.accumulate = k0 > 0;
        addWait(matmul, kLoadA, step + 1);
        addWait(matmul, kLoadB, step + 1);
        if (k0 == 0) addWait(matmul, kEvicted, tile - 1);  // The bank's previous tile is evicted.
        matmul.increment = kMatmuls;
        program.push_back(loadA);
        program.push_back(loadB);
        program.push_back(matmul);
      }
      Instruction evict;
      evict.opcode = Opcode::Activation;
      evict.engine = Engine::ACT;
      evict.func = ActFunc::Copy;
      AccessPattern psum = sbuf(static_cast<uint64_t>(tile % 2) * bankBytes, tileN, DType::F32);
      psum.space = MemSpace::PSUM;
      evict.operands[0] = sbuf(sbufOut + static_cast<uint64_t>(tile % 2) * tileN * 2, tileN, DType::BF16);
      evict.operands[1] = psum;
      addWait(evict, kMatmuls, step);
      addWait(evict, kStored, tile - 1);  // The output buffer's previous store has read it.
      evict.increment = kEvicted;
      Instruction store = dma(hbmRows(hbmC + (m0 * shape.n + n0) * 2, shape.n, tileM, tileN), *evict.operands[0], 2);
      addWait(store, kEvicted, tile + 1);
      store.increment = kStored;
      program.push_back(evict);
      program.push_back(store);
    }
  }
  return program;
}

TEST(SimulatorScale, FullSizeTiledMatmulSimulatesInSeconds) {
  MachineProfile v2 = bundledProfile("nc-v2");
  std::vector<Instruction> program = tiledMatmul(v2, TiledMatmul{kRows});
  ASSERT_GT(program.size(), static_cast<size_t>(kRows) * 24);
  size_t matmuls = 0;
  for (const Instruction &insn : program) matmuls += insn.opcode == Opcode::NcMatmul ? 1 : 0;
  for (bool races : {false, true}) {
    auto begin = std::chrono::steady_clock::now();
    SimulationResult result = simulateOk(program, v2, races);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    double flops = 0;
    for (const TimelineEvent &event : result.timeline.events) flops += event.matmulFlops;
    double mfu = flops / (result.timeline.totalNs * 1e-9) / result.timeline.pePeakFlopsPerSec;
    std::printf("[scale] %zu instructions, races %s: simulated %.3f ms (MFU %.1f%%) in %.2f s\n", program.size(),
                races ? "on" : "off", result.timeline.totalNs * 1e-6, 100 * mfu, seconds);
    EXPECT_TRUE(result.races.empty());
    EXPECT_EQ(result.timeline.events.size(), program.size() + matmuls);  // Every matmul loads its stationary.
    // One load per matmul moves 32 + 128 KiB over 272 GB/s of DMA: DMA bound, well above the PE time.
    EXPECT_GT(result.timeline.totalNs, flops / v2.pe.clockGHz / 32768);
  }
}

}  // namespace
}  // namespace tessel::nc::testing
