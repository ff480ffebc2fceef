// The host's single-core floating-point peak, measured rather than looked up: a loop of
// independent FMA chains (enough of them to cover the FMA latency on every port) in one ISA. The
// SGEMM benchmark divides by it, so "fraction of peak" is measured on the machine and in the run
// that produced the GEMM numbers.
#pragma once

#include <cstdint>
#include <span>

#include "targets/cpu/kernels/cpu_features.h"

namespace tessel::cpu {

/// One FMA-throughput loop: runs `iterations` rounds and returns a value that depends on all of
/// them (so the work cannot be dropped). Each round does `flopsPerIteration` floating-point ops.
struct FmaPeakLoop {
  const char *name;
  Isa isa;
  int64_t flopsPerIteration;
  float (*run)(int64_t iterations, float seed);
};

/// The loops, best ISA first (AVX-512, AVX2+FMA, portable); the first the host can run is the
/// peak to compare against.
std::span<const FmaPeakLoop> fmaPeakLoops();

/// The first loop the host (as capped by TESSEL_CPU_ISA) can run.
const FmaPeakLoop &bestFmaPeakLoop();

}  // namespace tessel::cpu
