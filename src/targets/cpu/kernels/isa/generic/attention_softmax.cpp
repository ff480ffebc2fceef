// The attention online-softmax step compiled with the generic flags (see attention_softmax_impl.h).
#include "targets/cpu/kernels/attention_softmax_impl.h"

namespace tessel::cpu {

void f32_attention_softmax__generic(const AttentionSoftmaxArgs &args) { attentionSoftmaxImpl(args); }

}  // namespace tessel::cpu
