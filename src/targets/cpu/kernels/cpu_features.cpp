// Host ISA detection with cpuid and xgetbv (the OS must also save the wider register state, or the
// instructions fault), and the TESSEL_CPU_ISA cap used by tests and benchmarks.
#include "targets/cpu/kernels/cpu_features.h"

#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tessel::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// cpuid leaf 1, ecx.
constexpr uint32_t kLeaf1EcxFma = 1u << 12;
constexpr uint32_t kLeaf1EcxOsxsave = 1u << 27;
constexpr uint32_t kLeaf1EcxAvx = 1u << 28;
// cpuid leaf 7 subleaf 0, ebx.
constexpr uint32_t kLeaf7EbxAvx2 = 1u << 5;
constexpr uint32_t kLeaf7EbxAvx512F = 1u << 16;
constexpr uint32_t kLeaf7EbxAvx512Vl = 1u << 31;
// cpuid leaf 7 subleaf 0, ecx.
constexpr uint32_t kLeaf7EcxAvx512Vnni = 1u << 11;
// cpuid leaf 7 subleaf 1, eax.
constexpr uint32_t kLeaf7Sub1EaxAvx512Bf16 = 1u << 5;
// XCR0 state components the OS saves: SSE and AVX (ymm), then opmask, zmm upper halves, zmm16-31.
constexpr uint64_t kXcr0YmmState = (1u << 1) | (1u << 2);
constexpr uint64_t kXcr0ZmmState = kXcr0YmmState | (1u << 5) | (1u << 6) | (1u << 7);

uint64_t readXcr0() {
  uint32_t lo = 0;
  uint32_t hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}
#endif

}  // namespace

Isa detectHostIsa() {
  Isa isa = Isa::None;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return isa;
  const bool osxsave = (ecx & kLeaf1EcxOsxsave) != 0;
  const bool avx = (ecx & kLeaf1EcxAvx) != 0;
  const bool fma = (ecx & kLeaf1EcxFma) != 0;
  if (!osxsave || !avx) return isa;
  const uint64_t xcr0 = readXcr0();
  if ((xcr0 & kXcr0YmmState) != kXcr0YmmState) return isa;
  if (fma) isa = isa | Isa::Fma;
  unsigned ebx7 = 0, ecx7 = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx7, &ecx7, &edx)) {
    if (ebx7 & kLeaf7EbxAvx2) isa = isa | Isa::Avx2;
    const bool avx512 = (ebx7 & kLeaf7EbxAvx512F) && (ebx7 & kLeaf7EbxAvx512Vl);
    if (avx512 && (xcr0 & kXcr0ZmmState) == kXcr0ZmmState) {
      isa = isa | Isa::Avx512;
      if (ecx7 & kLeaf7EcxAvx512Vnni) isa = isa | Isa::Avx512Vnni;
      unsigned eax71 = 0;
      if (__get_cpuid_count(7, 1, &eax71, &ebx, &ecx, &edx) && (eax71 & kLeaf7Sub1EaxAvx512Bf16)) {
        isa = isa | Isa::Avx512Bf16;
      }
    }
  }
#endif
  return isa;
}

bool parseIsaCap(const std::string &text, Isa *cap) {
  if (text == "generic" || text == "none") {
    *cap = Isa::None;
  } else if (text == "avx2") {
    *cap = Isa::Avx2 | Isa::Fma;
  } else if (text == "avx512") {
    *cap = Isa::Avx2 | Isa::Fma | Isa::Avx512;
  } else if (text == "avx512_bf16") {
    *cap = Isa::Avx2 | Isa::Fma | Isa::Avx512 | Isa::Avx512Bf16;
  } else if (text == "avx512_vnni") {
    *cap = Isa::Avx2 | Isa::Fma | Isa::Avx512 | Isa::Avx512Bf16 | Isa::Avx512Vnni;
  } else {
    return false;
  }
  return true;
}

Isa hostIsa() {
  static const Isa isa = [] {
    Isa detected = detectHostIsa();
    const char *env = std::getenv("TESSEL_CPU_ISA");
    if (env == nullptr || *env == '\0') return detected;
    Isa cap = Isa::None;
    if (!parseIsaCap(env, &cap)) {
      std::fprintf(stderr,
                   "tessel: ignoring TESSEL_CPU_ISA=%s (expected generic, avx2, avx512, avx512_bf16 or avx512_vnni)\n",
                   env);
      return detected;
    }
    return detected & cap;
  }();
  return isa;
}

std::string isaName(Isa isa) {
  std::string name;
  auto add = [&](Isa bit, const char *text) {
    if (!hasAll(isa, bit)) return;
    if (!name.empty()) name += '+';
    name += text;
  };
  add(Isa::Avx512, "avx512");
  add(Isa::Avx512Bf16, "avx512_bf16");
  add(Isa::Avx512Vnni, "avx512_vnni");
  add(Isa::Avx2, "avx2");
  add(Isa::Fma, "fma");
  return name.empty() ? "generic" : name;
}

}  // namespace tessel::cpu
