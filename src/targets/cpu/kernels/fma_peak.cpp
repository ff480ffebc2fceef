// The table of FMA-throughput loops; the loops themselves live in isa/<family>/fma_peak.cpp,
// compiled with that ISA's flags.
#include "targets/cpu/kernels/fma_peak.h"

#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kFlopsPerFma = 2;

constexpr FmaPeakLoop kFmaPeakLoops[] = {
    {"fma_peak__avx512", Isa::Avx512 | Isa::Fma, kFmaPeakChains * kFmaPeakAvx512Lanes * kFlopsPerFma,
     &fmaPeakAvx512},
    {"fma_peak__avx2_fma", Isa::Avx2 | Isa::Fma, kFmaPeakChains * kFmaPeakAvx2Lanes * kFlopsPerFma, &fmaPeakAvx2},
    {"fma_peak__generic", Isa::None, kFmaPeakChains * kFlopsPerFma, &fmaPeakGeneric},
};

}  // namespace

std::span<const FmaPeakLoop> fmaPeakLoops() { return kFmaPeakLoops; }

const FmaPeakLoop &bestFmaPeakLoop() {
  for (const FmaPeakLoop &loop : kFmaPeakLoops) {
    if (hasAll(hostIsa(), loop.isa)) return loop;
  }
  return kFmaPeakLoops[std::size(kFmaPeakLoops) - 1];
}

}  // namespace tessel::cpu
