// The library kernel `attention`: o = softmax(q k^T / sqrt(D) [causal]) v per head, the scores never
// leaving SBUF/PSUM, in the two forms of the attention family (plan.h), checked against one reference.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "attention": dims H (heads), S (sequence), D (head dim, <= the PE rows); dtype bf16. Inputs q, k, v
/// [H, S, D], output o [H, S, D] bf16. Option causal=0|1 (query i sees keys <= i). Scale 1/sqrt(D).
/// Variants: "flash" (default; flash.h: an online softmax over key superblocks straight from HBM;
/// option resident=0 reloads key blocks per query block even when a head's keys fit SBUF, for tests)
/// and "heads" (heads.h, the form the model compiler runs: q, k, v loaded into head-major SBUF form,
/// the heads emit, o stored; S at most kHeadsMaxKeys).
std::vector<KernelDef> attentionKernels();

}  // namespace tessel::nc::kernels
