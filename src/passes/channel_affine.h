// Per-channel affine maps (y -> y * scale[c] + shift[c] along axis 1) that single ops apply, shared
// by the passes that fold them into a convolution's weights and bias.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace tessel::passes {

/// y -> y * scale[c] + shift[c] per channel c of axis 1.
struct ChannelAffine {
  std::vector<double> scale, shift;
};

/// The affine map `node` applies to `y` (of rank >= 3, `channels` along axis 1): Mul or Add by a
/// constant, Sub or Div of y by one (y first; not by zero), the constant holding one element or
/// one per channel (every other dim 1, rank at most y's); or an inference-mode BatchNormalization
/// of y with constant statistics. nullopt for anything else.
std::optional<ChannelAffine> channelAffineOf(const Model &model, const Node &node, const Value *y, int64_t channels);

}  // namespace tessel::passes
