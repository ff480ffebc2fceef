// The cast reference; see cast_reference.h.
#include "targets/nc/compiler/cast_reference.h"

#include "targets/nc/compiler/conv_forms.h"
#include "targets/ref/cast_check.h"

namespace tessel::nc::compiler {
namespace {

/// The ONNX TensorProto code of a cast type the graph can round through, or 0.
int64_t onnxCode(DType castType) {
  switch (castType) {
    case DType::BF16: return 16;
    case DType::F16: return 10;
    default: return 0;
  }
}

tessel::DType irDtype(DType castType) {
  return castType == DType::F16 ? tessel::DType::Float16 : tessel::DType::BFloat16;
}

/// The inputs of `node` the device rounds to the matmul dtype.
std::vector<size_t> roundedInputs(const Node &node, const LoweringOptions &options) {
  const std::string &op = node.opType();
  if (op == "MatMul" || op == "Gemm" || op == "FusedMatMul") return {0, 1};
  if ((op == "Conv" || op == "FusedConv") && convRoundsOperands(node, options)) return {0, 1, 3};
  return {};
}

}  // namespace

Expected<CastReference> castReference(const Model &model, const std::function<bool(size_t)> &onDevice,
                                      const LoweringOptions &options) {
  CastReference ref;
  ref.exact = true;
  if (options.autoCast == AutoCast::None) return ref;
  const int64_t code = onnxCode(options.castType);
  if (code == 0 || options.autoCast == AutoCast::All) {
    ref.exact = false;
    ref.unmodelled = code == 0 ? fmt::format("rounding to {} is not modelled", dtypeName(options.castType))
                               : "--auto-cast all rounds every activation, which is not modelled";
    return ref;
  }
  // The device rounds the inputs roundedInputs lists of every node it runs; what it rounds inside
  // an op, or of alpha * B, the Cast pairs cannot say.
  size_t i = 0;
  for (const auto &nodePtr : model.graph->nodes()) {
    const Node &node = *nodePtr;
    if (!onDevice(i++)) continue;
    if (node.opType() == "Attention") {
      ref.exact = false;
      ref.unmodelled = fmt::format("Attention '{}' rounds inside the op", node.name());
    }
    if (node.opType() == "Gemm" && node.attrFloat("alpha", 1.0f) != 1.0f) {
      ref.exact = false;
      ref.unmodelled = fmt::format("Gemm '{}' rounds alpha * B", node.name());
    }
  }
  auto rounded = [&](size_t i, const Node &node) {
    return onDevice(i) ? roundedInputs(node, options) : std::vector<size_t>{};
  };
  TESSEL_ASSIGN_OR_RETURN(ref::RoundingReference rounding,
                          ref::roundingReference(model, rounded, irDtype(options.castType)));
  ref.model = std::move(rounding.model);
  ref.roundedValues = rounding.roundedValues;
  return ref;
}

}  // namespace tessel::nc::compiler
