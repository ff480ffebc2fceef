// The reference an auto-cast run is checked against: the model's graph with the roundings the
// accelerator applies made explicit, as a Cast to the cast type and back to f32 on each rounded
// value. The reference interpreter then computes what the device computes, up to the order of its
// f32 sums, so the check can be tight and a real bug is never hidden behind "bf16 drift"; how far
// the casts themselves move the outputs from f32 is reported separately (`tessel run`).
//
// What the device rounds with --auto-cast matmul (LoweringContext::matmulDtype): both operands of
// its matmuls (MatMul, Gemm, FusedMatMul) and of its PE convolutions (Conv, FusedConv with group 1;
// depthwise convolutions run in f32 on the vector engines). Accumulation, epilogues and every other
// op stay in f32. Attention rounds inside the op (Q*scale, K, the mask, the probabilities, V), and
// --auto-cast all rounds every activation: those runs are not modelled exactly, and say so.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {

struct CastReference {
  std::optional<Model> model;  // The rewritten copy; none when nothing is rounded (check against the model).
  bool exact = false;          // Every rounding of the device run is modelled.
  std::string unmodelled;      // Why not, when !exact.
  int roundedValues = 0;       // Values given a Cast pair.
};

/// The cast reference of `model` (the artifact's optimized graph) for a run with `options`;
/// `onDevice(i)` says whether node i (in graph order) runs on the device.
Expected<CastReference> castReference(const Model &model, const std::function<bool(size_t)> &onDevice,
                                      const LoweringOptions &options);

}  // namespace tessel::nc::compiler
