// The attention task bodies compiled with the avx2 flags (see attention_tile_impl.h).
#include "targets/cpu/kernels/attention_tile_impl.h"

namespace tessel::cpu {

void f32_attention_tile__avx2(const AttentionTileArgs &args) { attentionTileImpl(args); }
void f32_attention_rows__avx2(const AttentionTileArgs &args) { attentionRowsImpl(args); }

}  // namespace tessel::cpu
