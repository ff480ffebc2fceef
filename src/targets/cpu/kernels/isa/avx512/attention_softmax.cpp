// The attention online-softmax step compiled with the avx512 flags (see attention_softmax_impl.h).
#include "targets/cpu/kernels/attention_softmax_impl.h"

namespace tessel::cpu {

void f32_attention_softmax__avx512(const AttentionSoftmaxArgs &args) { attentionSoftmaxImpl(args); }

}  // namespace tessel::cpu
