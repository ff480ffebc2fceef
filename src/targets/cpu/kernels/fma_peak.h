// The host's single-core floating-point peak, measured rather than looked up: a loop of
// independent FMA chains (enough of them to cover the FMA latency on every port) in one ISA, for
// bf16 the same with vdpbf16ps (two multiply-adds per lane) and for u8s8 with vpdpbusd (four
// integer multiply-adds per lane). The GEMM benchmark divides by the
// peak of its operand type, so "fraction of peak" is measured on the machine and in the run that
// produced the GEMM numbers.
#pragma once

#include <cstdint>
#include <span>

#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {

/// One FMA-throughput loop: runs `iterations` rounds and returns a value that depends on all of
/// them (so the work cannot be dropped). Each round does `flopsPerIteration` floating-point ops.
struct FmaPeakLoop {
  const char *name;
  Isa isa;
  GemmOperands operands;  // What a GEMM of that type is compared against.
  int64_t flopsPerIteration;  // Arithmetic ops (a multiply-add is two), integer ones for u8s8.
  float (*run)(int64_t iterations, float seed);
};

/// The loops, best ISA first within each operand type (f32: AVX-512, AVX2+FMA, portable; bf16:
/// AVX512_BF16; u8s8: AVX512_VNNI); the first the host can run is the peak to compare against.
std::span<const FmaPeakLoop> fmaPeakLoops();

/// The first f32 loop the host (as capped by TESSEL_CPU_ISA) can run.
const FmaPeakLoop &bestFmaPeakLoop();

/// The first loop of that operand type the host can run, or null.
const FmaPeakLoop *bestFmaPeakLoop(GemmOperands operands);

/// The best bf16 loop's throughput (FLOP/s) over the best f32 loop's on one core of this host,
/// each the best of a few short runs, measured once per process (about 20 ms); 0 when the host
/// has no bf16 loop. Whether a bf16 GEMM beats the fp32 one on compute-bound products depends on
/// it: some cores run vdpbf16ps at half the FMA rate, others at twice it.
double bf16ThroughputRatio();

}  // namespace tessel::cpu
