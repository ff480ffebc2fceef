// Checks a small model, written in tessel's text IR, end to end on the accelerator: compile it for an
// nc target, run it on the simulator with seeded random inputs, run the same model on the reference
// target, and compare every output within a tolerance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/compiler/executable.h"

namespace tessel::nc::compiler {

struct ModelCheck {
  double maxErrorRatio = 0;   // max |got - want| / (atol + rtol * |want|) over all outputs: <= 1 passes.
  std::string worst;          // Where it was reached.
  double simulatedUs = 0;     // Device time of the run.
  int deviceNodes = 0, hostNodes = 0;
  int spilledActivations = 0;
  int collectives = 0;        // all_gather and all_reduce instructions of core 0.
  int hbmStores = 0;          // dma_copy instructions of core 0 that write HBM.
};

/// Compiles `irText` with `options`, runs it on nc and on ref with the same seeded inputs (floats
/// uniform in [-1, 1); those `given` names, as given) and compares the outputs.
Expected<ModelCheck> checkModelOnNc(const std::string &irText, const NcCompileOptions &options = {},
                                    double atol = 2e-2, double rtol = 2e-2, const NamedValues &given = {});

/// A constant for text IR: `dense<f32[shape]: ...>` with seeded values uniform in [-scale, scale).
std::string denseText(const std::vector<int64_t> &shape, uint64_t seed, float scale = 1.0f);

}  // namespace tessel::nc::compiler
