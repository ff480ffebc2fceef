// Checking a target whose numerics are not the reference's own: where it rounds operands to a
// narrow type (bf16 matmul operands on the accelerator, or on the cpu with --auto-cast), its outputs
// are compared with the reference interpreter running the same graph with those roundings made
// explicit, as a Cast to the narrow type and back to f32 on each rounded value. Only the order of
// f32 sums then sets the two apart, so the tolerance can be tight and a real bug is never hidden
// behind "bf16 drift"; how far the casts themselves move the outputs from f32 is reported next to
// it (max error over max |f32| and the cosine similarity). Each target says which inputs it rounds.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "targets/target.h"

namespace tessel::ref {

/// The allowed error of an output: |got - want| <= max(rangeFraction * max|want|, 1e-6) +
/// relative * |want|. A narrow type rounds every matmul operand, so an element's error follows
/// the magnitude of the sums that made it, which the output's range bounds, not its own value.
struct Tolerance {
  double rangeFraction = 0, relative = 0;
};

/// Against the reference with the same casts only the order of f32 sums sets the outputs apart,
/// and the values it moves across a rounding boundary: one bf16 step each, which deep networks
/// carry forward (ResNet-50: 0.2% of max|want|), so 4x to 10x tighter than bf16's own.
inline constexpr Tolerance kSameCastTolerance{5e-3, 5e-3};

struct OutputError {
  double maxAbs = 0, ratio = 0, range = 0;  // max |got - want|, its worst ratio to the tolerance, max |want|.
};

/// `got` against `want` within max(tolerance.rangeFraction * max|want|, minAbs, 1e-6) +
/// tolerance.relative * |want|.
OutputError compareOutput(const Tensor &got, const Tensor &want, const Tolerance &tolerance, double minAbs = 0);

/// The cosine of the angle between a and b as flat vectors (1 when both are zero).
double cosineSimilarity(const Tensor &a, const Tensor &b);

/// Which inputs of node `index` (graph order) the target rounds.
using RoundedInputs = std::function<std::vector<size_t>(size_t index, const Node &node)>;

/// Makes `graph` read each rounded f32 input through Cast(narrow) -> Cast(f32), one pair per value
/// shared by its readers; returns how many values were rounded. `narrow` is BFloat16 or Float16.
Expected<int> insertRoundingCasts(Graph &graph, const RoundedInputs &rounded, DType narrow);

struct RoundingReference {
  std::optional<Model> model;  // The rewritten copy; none when nothing rounds (the model is its own).
  int roundedValues = 0;       // Values given a Cast pair.
};

/// A copy of `model` with insertRoundingCasts applied.
Expected<RoundingReference> roundingReference(const Model &model, const RoundedInputs &rounded, DType narrow);

/// How a target's run is checked.
struct CastCheck {
  std::string target;               // For the header line, e.g. "nc-v2".
  bool casting = false;             // The run rounds something.
  const Model *castModel = nullptr;  // The rounding reference (null: the model is its own).
  bool exact = true;                // castModel models every rounding of the run.
  std::string unmodelled;           // Why not, when !exact.
  Tolerance loose;                  // The tolerance against the f32 reference when !exact.
};

/// `outputs` of a run of `model` on `feeds` against the reference as `check` says: one line per
/// output with the error, the verdict and (when casting exactly) the rounding noise and how far
/// the casts move it from f32.
Expected<OutputCheck> checkAgainstReference(const Model &model, const CastCheck &check, const NamedValues &feeds,
                                            const NamedValues &outputs);

}  // namespace tessel::ref
