// Run-time choice of the GEMM microkernel: the table is gemm.def, best first; the first row whose
// ISA bits the host has wins. Nothing else in the library names a variant.
#include <cstdio>
#include <cstdlib>

#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {
namespace {

constexpr GemmKernel kGemmKernels[] = {
#define KERNEL(name, family, isa, dtype, mr, nr) {#name, isa, mr, nr, &name},
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL
};

}  // namespace

std::span<const GemmKernel> gemmKernels() { return kGemmKernels; }

bool canRun(const GemmKernel &kernel) { return hasAll(hostIsa(), kernel.isa); }

const GemmKernel &selectedGemmKernel() {
  static const GemmKernel &selected = []() -> const GemmKernel & {
    for (const GemmKernel &kernel : kGemmKernels) {
      if (!canRun(kernel)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: sgemm uses %s (host isa: %s)\n", kernel.name, isaName(hostIsa()).c_str());
      }
      return kernel;
    }
    // The last row needs no ISA bits, so the loop always returns; keep the compiler satisfied.
    return kGemmKernels[std::size(kGemmKernels) - 1];
  }();
  return selected;
}

const char *gemmKernelName() { return selectedGemmKernel().name; }

}  // namespace tessel::cpu
