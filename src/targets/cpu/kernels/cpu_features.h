// Which instruction-set extensions the host CPU and OS support, found once with cpuid/xgetbv.
// Kernel dispatch asks this and nothing else; the TESSEL_CPU_ISA environment variable can cap the
// answer at a lower level so tests and benchmarks can exercise the slower variants on a fast host.
#pragma once

#include <cstdint>
#include <string>

namespace tessel::cpu {

/// ISA extensions as bit flags; a kernel row names the bits it needs, the host has a set of them.
enum class Isa : uint32_t {
  None = 0,
  Avx2 = 1u << 0,    // AVX2 with OS support for the ymm state.
  Fma = 1u << 1,     // FMA3.
  Avx512 = 1u << 2,  // AVX-512 F and VL with OS support for the zmm/opmask state.
  Avx512Bf16 = 1u << 3,  // AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16), on top of Avx512.
  Avx512Vnni = 1u << 4,  // AVX512_VNNI (vpdpbusd), on top of Avx512.
};

constexpr Isa operator|(Isa a, Isa b) { return Isa(uint32_t(a) | uint32_t(b)); }
constexpr Isa operator&(Isa a, Isa b) { return Isa(uint32_t(a) & uint32_t(b)); }

/// True when every bit of `required` is in `available`.
constexpr bool hasAll(Isa available, Isa required) { return (available & required) == required; }

/// What the CPU and the OS support, from cpuid and xgetbv, ignoring TESSEL_CPU_ISA.
Isa detectHostIsa();

/// Parses a TESSEL_CPU_ISA value ("generic", "avx2", "avx512", "avx512_bf16", "avx512_vnni") into
/// the set it allows, each value allowing what the ones before it do; returns false for anything
/// else. "avx512" leaves out the bf16 and VNNI extensions, "avx512_bf16" leaves out VNNI.
bool parseIsaCap(const std::string &text, Isa *cap);

/// The ISA kernels may use: detectHostIsa(), capped by TESSEL_CPU_ISA when it is set (an unknown
/// value is reported once on stderr and ignored). Computed once.
Isa hostIsa();

/// A readable list of the bits, e.g. "avx2+fma" or "generic" for none.
std::string isaName(Isa isa);

}  // namespace tessel::cpu
