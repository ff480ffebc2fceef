// The fused epilogue on PSUM eviction; see epilogue.h. ACT computes func(x * scale + bias) with a per-partition bias in
// one pass, so a bias and an ACT function cost one instruction; an addend adds one DVE pass before it; Clip, LeakyRelu,
// HardSigmoid and HardSwish, which ACT has no function for, run on DVE (Clip: or POOL) after it.
#include "targets/nc/kernels/matmul/epilogue.h"

#include <map>

namespace tessel::nc::kernels {
namespace {

/// The ACT function of an activation ACT can apply directly (Copy for those finished on DVE).
std::optional<ActFunc> actFuncOf(const std::string &activation) {
  static const std::map<std::string, ActFunc> kFuncs = {{"", ActFunc::Copy},
                                                        {"Clip", ActFunc::Copy},
                                                        {"LeakyRelu", ActFunc::Copy},
                                                        {"HardSigmoid", ActFunc::Copy},
                                                        {"HardSwish", ActFunc::Copy},
                                                        {"Relu", ActFunc::Relu},
                                                        {"Sigmoid", ActFunc::Sigmoid},
                                                        {"Tanh", ActFunc::Tanh},
                                                        {"Silu", ActFunc::Silu},
                                                        {"Gelu", ActFunc::Gelu},
                                                        {"GeluTanh", ActFunc::GeluApprxTanh}};
  auto it = kFuncs.find(activation);
  if (it == kFuncs.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::string epilogueUnsupportedReason(const Epilogue &e) {
  if (!actFuncOf(e.activation)) return "activation '" + e.activation + "' has no accelerator form";
  if (e.activation == "Clip" && e.params.size() != 2) return "Clip takes 2 activation_params";
  if (e.activation == "LeakyRelu" && (e.params.size() != 1 || e.params[0] < 0 || e.params[0] > 1))
    return "LeakyRelu needs one alpha in [0, 1]";
  if (e.activation == "HardSigmoid" && e.params.size() != 2) return "HardSigmoid takes 2 activation_params";
  return "";
}

void emitEpilogue(tile::KernelBuilder &b, const tile::TileView &dst, const tile::TileView &src,
                  const EpilogueOperands &operands, const Epilogue &epilogue) {
  const ActFunc func = actFuncOf(epilogue.activation).value_or(ActFunc::Copy);
  const std::optional<tile::TileView> &bias = operands.partitionBias;
  tile::TileView x = src;
  if (operands.addend) {
    if (func == ActFunc::Copy && !bias) {
      b.tensorTensor(dst, src, *operands.addend, AluOp::Add);
      x = dst;
    } else {
      tile::TileView sum = operands.sumScratch ? *operands.sumScratch
                                               : b.sbuf("residual_sum", DType::F32, dst.partitions(), dst.freeShape());
      b.tensorTensor(sum, src, *operands.addend, AluOp::Add);
      x = sum;
    }
  }
  if (func != ActFunc::Copy || bias) {
    tile::ActivationArgs args;
    if (bias) args.bias = tile::ScalarOperand(*bias);
    b.activation(dst, x, func, args);
  } else if (!operands.addend) {
    b.copy(dst, x, operands.copyEngine);
  }
  if (epilogue.activation == "Clip") {
    // On DVE or POOL, where the scheduler finds it ends first (MobileNetV2 on nc-v2: 148.6 -> 147.2 us).
    b.tensorScalar(dst, dst, AluOp::Maximum, epilogue.params[0], AluOp::Minimum, epilogue.params[1]);
  } else if (epilogue.activation == "LeakyRelu") {
    tile::TileView scaled = b.sbuf("leaky", dst.dtype(), dst.partitions(), dst.freeShape());
    b.tensorScalar(scaled, dst, AluOp::Multiply, epilogue.params[0]);
    b.tensorTensor(dst, dst, scaled, AluOp::Maximum);
  } else if (epilogue.activation == "HardSigmoid") {
    emitHardSigmoid(b, dst, dst, epilogue.params[0], epilogue.params[1]);
  } else if (epilogue.activation == "HardSwish") {
    tile::TileView gate = b.sbuf("hardswish", dst.dtype(), dst.partitions(), dst.freeShape());
    emitHardSigmoid(b, gate, dst, 1.0f / 6.0f, 0.5f);
    b.tensorTensor(dst, dst, gate, AluOp::Multiply);
  }
}

void emitHardSigmoid(tile::KernelBuilder &b, const tile::TileView &dst, const tile::TileView &src, float alpha,
                     float beta) {
  b.tensorScalar(dst, src, AluOp::Multiply, alpha, AluOp::Add, beta);
  b.tensorScalar(dst, dst, AluOp::Maximum, 0.0f, AluOp::Minimum, 1.0f, Engine::DVE);
}

}  // namespace tessel::nc::kernels
