// Run-time choice of the GEMM microkernel: the table is gemm.def, best first; the first row whose
// ISA bits the host has wins. Nothing else in the library names a variant.
#include <cstdio>
#include <cstdlib>

#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {
namespace {

// What the dtype column of gemm.def means for a row.
#define GEMM_OPERANDS_f32 GemmOperands::F32, 1
#define GEMM_OPERANDS_bf16 GemmOperands::Bf16, 2
#define GEMM_PACK_PAIRS_f32(family) nullptr
#define GEMM_PACK_PAIRS_bf16(family) &bf16_pack_pairs__##family

constexpr GemmKernel kGemmKernels[] = {
#define KERNEL(name, family, isa, dtype, mr, nr) \
  {#name, isa, GEMM_OPERANDS_##dtype, mr, nr, &name, GEMM_PACK_PAIRS_##dtype(family)},
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL
};

const GemmKernel *firstRunnable(GemmOperands operands) {
  for (const GemmKernel &kernel : kGemmKernels) {
    if (kernel.operands == operands && canRun(kernel)) return &kernel;
  }
  return nullptr;
}

}  // namespace

std::span<const GemmKernel> gemmKernels() { return kGemmKernels; }

bool canRun(const GemmKernel &kernel) { return hasAll(hostIsa(), kernel.isa); }

const GemmKernel &selectedGemmKernel() {
  // The last f32 row needs no ISA bits, so there always is one.
  static const GemmKernel &selected = *selectedGemmKernel(GemmOperands::F32);
  return selected;
}

const GemmKernel *selectedGemmKernel(GemmOperands operands) {
  static const GemmKernel *const selected[] = {firstRunnable(GemmOperands::F32), firstRunnable(GemmOperands::Bf16)};
  static const bool logged = [] {
    if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
      for (const GemmKernel *kernel : selected) {
        if (kernel != nullptr) {
          std::fprintf(stderr, "tessel: %s gemm uses %s (host isa: %s)\n", operandsName(kernel->operands),
                       kernel->name, isaName(hostIsa()).c_str());
        }
      }
    }
    return true;
  }();
  (void)logged;
  if (operands == GemmOperands::U8S8) return nullptr;
  return selected[operands == GemmOperands::F32 ? 0 : 1];
}

const char *operandsName(GemmOperands operands) {
  switch (operands) {
    case GemmOperands::F32: return "f32";
    case GemmOperands::Bf16: return "bf16";
    case GemmOperands::U8S8: return "u8s8";
  }
  return "?";
}

const char *gemmKernelName() { return selectedGemmKernel().name; }

}  // namespace tessel::cpu
