// The table of FMA-throughput loops; the loops themselves live in isa/<family>/fma_peak.cpp,
// compiled with that ISA's flags.
#include "targets/cpu/kernels/fma_peak.h"

#include <algorithm>
#include <chrono>

#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kFlopsPerFma = 2;

constexpr int64_t kMultiplyAddsPerBf16Lane = 2;  // vdpbf16ps: a pair per float lane.
constexpr int64_t kMultiplyAddsPerU8S8Lane = 4;  // vpdpbusd: a quad per int32 lane.

constexpr FmaPeakLoop kFmaPeakLoops[] = {
    {"fma_peak__avx512", Isa::Avx512 | Isa::Fma, GemmOperands::F32,
     kFmaPeakChains * kFmaPeakAvx512Lanes * kFlopsPerFma, &fmaPeakAvx512},
    {"fma_peak__avx2_fma", Isa::Avx2 | Isa::Fma, GemmOperands::F32, kFmaPeakChains * kFmaPeakAvx2Lanes * kFlopsPerFma,
     &fmaPeakAvx2},
    {"fma_peak__generic", Isa::None, GemmOperands::F32, kFmaPeakChains * kFlopsPerFma, &fmaPeakGeneric},
    {"bf16_dot_peak__avx512_bf16", Isa::Avx512 | Isa::Avx512Bf16, GemmOperands::Bf16,
     kFmaPeakChains * kFmaPeakAvx512Lanes * kMultiplyAddsPerBf16Lane * kFlopsPerFma, &bf16DotPeakAvx512Bf16},
    {"u8s8_dot_peak__avx512_vnni", Isa::Avx512 | Isa::Avx512Vnni, GemmOperands::U8S8,
     kFmaPeakChains * kFmaPeakAvx512Lanes * kMultiplyAddsPerU8S8Lane * kFlopsPerFma, &u8s8DotPeakAvx512Vnni},
};

}  // namespace

std::span<const FmaPeakLoop> fmaPeakLoops() { return kFmaPeakLoops; }

const FmaPeakLoop *bestFmaPeakLoop(GemmOperands operands) {
  for (const FmaPeakLoop &loop : kFmaPeakLoops) {
    if (loop.operands == operands && hasAll(hostIsa(), loop.isa)) return &loop;
  }
  return nullptr;
}

double bf16ThroughputRatio() {
  static const double ratio = [] {
    const FmaPeakLoop *bf16 = bestFmaPeakLoop(GemmOperands::Bf16);
    if (bf16 == nullptr) return 0.0;
    constexpr int64_t kIterations = 200'000;  // A few ms per run.
    constexpr int kRuns = 3;
    auto flopsPerSecond = [](const FmaPeakLoop &loop) {
      double best = 0.0;
      for (int run = 0; run < kRuns; ++run) {
        const auto start = std::chrono::steady_clock::now();
        volatile float sink = loop.run(kIterations, float(run));
        (void)sink;
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, double(kIterations * loop.flopsPerIteration) / seconds);
      }
      return best;
    };
    return flopsPerSecond(*bf16) / flopsPerSecond(bestFmaPeakLoop());
  }();
  return ratio;
}

const FmaPeakLoop &bestFmaPeakLoop() {
  // The portable loop needs no ISA bits, so there always is one.
  return *bestFmaPeakLoop(GemmOperands::F32);
}

}  // namespace tessel::cpu
