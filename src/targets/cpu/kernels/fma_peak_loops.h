// Declarations shared by fma_peak.cpp and the per-ISA loops in isa/<family>/fma_peak.cpp. Included
// by translation units built with AVX-512/AVX2 flags, so it holds constants and declarations only.
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// Independent accumulator chains per loop: covers FMA latency (4-5 cycles) times two FMA ports
/// with room to spare, and fits the 16 ymm registers of AVX2.
constexpr int kFmaPeakChains = 12;
constexpr int kFmaPeakAvx512Lanes = 16;  // floats per zmm.
constexpr int kFmaPeakAvx2Lanes = 8;     // floats per ymm.

float fmaPeakAvx512(int64_t iterations, float seed);
float fmaPeakAvx2(int64_t iterations, float seed);
float fmaPeakGeneric(int64_t iterations, float seed);
float bf16DotPeakAvx512Bf16(int64_t iterations, float seed);
float u8s8DotPeakAvx512Vnni(int64_t iterations, float seed);

}  // namespace tessel::cpu
