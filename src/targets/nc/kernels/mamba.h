// The fused selective-scan (SSM) layer of Mamba, as the public NKI fused-Mamba tutorial writes it:
// for each batch b, channel c and state s, a linear recurrence along the sequence,
//   h[l] = exp(delta[b, c, l] * A[c, s]) * h[l - 1] + delta[b, c, l] * u[b, c, l] * B[b, s, l],  h[-1] = 0,
// and out[b, c, l] = sum over s of C[b, s, l] * h[l]. Channels map to partitions, the sequence to
// the free dim, and the recurrence is one DVE tensor_tensor_scan per (channel tile, state).
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "mamba": dims B (batch), C (channels, a multiple of the partitions), L (sequence), S (state);
/// f32. Inputs delta [B, C, L], u [B, C, L], a [C, S], b [B, S, L], c [B, S, L]; output out [B, C, L].
/// Variants, the tutorial's three: v1 (state loop outside the channel tiles; every input reloaded
/// per state), v2 (channel tiles outside: delta and u loaded once per tile), v3 (v2 with the
/// sequence tiled by option seq_tile, default 512, the scan carried between tiles, and the per-state
/// products accumulated from PSUM).
std::vector<KernelDef> mambaKernels();

}  // namespace tessel::nc::kernels
