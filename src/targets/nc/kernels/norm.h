// Normalization kernels over the last dim of [R, C]: layernorm (gamma, beta) and rmsnorm (gamma).
//
// Two forms of one family. Rows on partitions (the library's default variant and the NKI tutorial's
// v1 and v2): each row's statistics are a free-axis reduction. Features on partitions (variant
// "features", the layout the matmuls around a norm produce and consume, which the model compiler
// lowers every norm to): the statistics reduce over partitions, which the PE does: an all-ones
// stationary times x gives the feature sums on every partition (emitNormOverFeatures, called by the
// model compiler on its activations and by `tessel kernel run layernorm --variant features` between
// its loads and stores).
#pragma once

#include <string>
#include <vector>

#include "targets/nc/kernels/kernel_def.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

enum class NormKind { Layer, Rms };

/// One chunk of rows of the features-on-partitions form: per feature tile t (features
/// [t * P, t * P + c_t)), x [c_t, rows] in any dtype and out of the same shape; the scale (and for
/// layer normalization the bias) as [P, 1] f32 per-partition views, one per tile; `ones` an f32
/// [P, P] all-ones tile. rows is at most one PSUM bank of f32.
struct FeatureNormChunk {
  NormKind kind = NormKind::Layer;
  std::vector<tile::TileView> x, out, gamma, beta;
  tile::TileView ones;
  float epsilon = 1e-5f;
};

/// y = (x - mean) * rstd * gamma + beta (layer) or x * rstd * gamma (RMS), the sums of x and x^2 over
/// the features by the PE in f32 (the statistics need the bits), mean and rstd on DVE, the scale and
/// bias in ACT's eviction-style pass per feature tile.
void emitNormOverFeatures(tile::KernelBuilder &b, const std::string &name, const FeatureNormChunk &chunk);

/// RMS normalization of one row (a decode step) whose feature blocks lie side by side in one f32
/// tile x [P, blocks], as do the scale's (gamma [P, blocks]) and the output's: each step one
/// instruction over all blocks (partial sums of x^2 on DVE, their sum on every partition by the PE,
/// rstd, two multiplies), not one per block.
void emitOneRowRmsNorm(tile::KernelBuilder &b, const std::string &name, const tile::TileView &out,
                       const tile::TileView &x, const tile::TileView &gamma, const tile::TileView &ones,
                       int64_t features, float epsilon);

/// "layernorm" (option eps, default 1e-5) and "rmsnorm" (option eps, default 1e-6); variant
/// "features" takes x and out as [C, R] (features major) and runs emitNormOverFeatures.
std::vector<KernelDef> normKernels();

}  // namespace tessel::nc::kernels
