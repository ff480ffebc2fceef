// Runs one library kernel end to end: build it in the tile DSL, compile it, fill its inputs with
// seeded random values (rounded to their dtype), simulate it on a machine profile, read its outputs
// back and compare them with the kernel's reference within its tolerances. `tessel kernel run` and
// the kernel tests use this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/kernels/kernel_def.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/simulator.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::kernels {

struct KernelRunOptions {
  bool timingOnly = false;   // Simulate timing only: no numerics, no check.
  bool check = true;         // Compare the outputs with the reference (ignored with timingOnly).
  uint64_t seed = 1;         // Seed of the random inputs.
  bool detectRaces = true;   // Ask the simulator for unordered accesses; any race fails the run.
};

struct KernelRunResult {
  tile::Kernel kernel;                 // The recorded Tile IR.
  tile::CompiledKernel compiled;
  SimulationResult simulation;
  std::vector<HostTensor> inputs;      // The values fed (exact, after rounding to their dtype); none when timing only.
  std::vector<HostTensor> outputs;     // Empty with timingOnly.
  std::vector<HostTensor> expected;    // Empty unless checked.
  bool checked = false;                // The outputs were compared with the reference.
  double maxAbsError = 0;
  double maxErrorRatio = 0;            // max |err| / (atol + rtol * |want|): <= 1 passes.
  double absTolerance = 0, relTolerance = 0;
  std::string worstElement;            // Where maxErrorRatio was reached: "out[3, 17]: got .., want ..".
  bool passed = false;                 // No races and, when checked, every element within tolerance.
  double flops = 0;                    // KernelDef::flops, or 0.
};

/// Runs `kernel` with `params` on `profile`. Errors (a missing dim, the kernel's own build errors, a
/// compile or simulation failure, a reference that fails) name the kernel. A check failure or a race
/// is not an error: the result says passed = false.
Expected<KernelRunResult> runKernel(const KernelDef &kernel, const KernelParams &params, const MachineProfile &profile,
                                    const KernelRunOptions &options = {});

/// Converts between float values and the bytes of `dtype`, exactly as the simulator does
/// (sim/functional/dtype_convert.h: round to nearest even for narrow floats, integers truncated and
/// saturated).
std::vector<uint8_t> encodeValues(DType dtype, const std::vector<float> &values);
std::vector<float> decodeValues(DType dtype, const std::vector<uint8_t> &bytes);

}  // namespace tessel::nc::kernels
