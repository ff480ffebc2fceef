// Fused (flash) attention: o = softmax(q k^T / sqrt(D) [+ causal mask]) v per head, computed block by
// block with an online softmax so that the [S, S] score matrix never leaves PSUM/SBUF.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "attention": dims H (heads), S (sequence), D (head dim, <= the PE rows); dtype bf16. Inputs q, k, v
/// [H, S, D], output o [H, S, D] bf16. Option causal=0|1 (query i sees keys <= i). Scale 1/sqrt(D).
/// Option resident=0 reloads key blocks per query block even when a head's keys fit SBUF (for tests).
std::vector<KernelDef> attentionKernels();

}  // namespace tessel::nc::kernels
