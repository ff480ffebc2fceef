// The attention task body compiled with the avx512 flags (see attention_tile_impl.h).
#include "targets/cpu/kernels/attention_tile_impl.h"

namespace tessel::cpu {

void f32_attention_tile__avx512(const AttentionTileArgs &args) { attentionTileImpl(args); }

}  // namespace tessel::cpu
