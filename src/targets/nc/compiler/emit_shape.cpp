// Ops that only change how the elements are indexed (Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
// Identity): views of the same SBUF storage (device_tensor.h), so the head split and merge around
// attention cost no instruction. A reshape that no stride pattern can express goes through HBM, where
// the row-major order makes every reshape free.
#include <numeric>

#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {
namespace {

std::vector<int64_t> outputShape(const Node &node) {
  std::vector<int64_t> shape;
  for (const Dim &d : node.output(0)->type().shape().dims()) shape.push_back(d.size);
  return shape;
}

std::string checkView(const Node &, const LoweringOptions &) { return ""; }

Status emitReshape(LoweringContext &ctx, const Node &node) {
  const std::vector<int64_t> shape = outputShape(node);
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  if (auto view = reshapeView(t, shape)) {
    ctx.define(node.output(0), *view);
    return Status::success();
  }
  // Through HBM: row-major storage reshapes for free.
  TESSEL_ASSIGN_OR_RETURN(tile::HbmView hbm, ctx.hbmOf(node.input(0)));
  std::vector<FreeDim> dims(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    dims[i] = FreeDim{stride, static_cast<uint32_t>(shape[i])};
    stride *= shape[i];
  }
  const int64_t axis = shape.size() == 4 ? 1 : static_cast<int64_t>(shape.size()) - 1;
  ctx.define(node.output(0), ctx.loadStandard(node.output(0)->name(), hbm.pattern(0, dims), shape, axis, t.dtype));
  return Status::success();
}

Status emitTranspose(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  std::vector<int64_t> perm = node.attrInts("perm");
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(t.rank()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  ctx.define(node.output(0), transposeView(t, perm));
  return Status::success();
}

Status emitIdentity(LoweringContext &ctx, const Node &node) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(node.input(0)));
  ctx.define(node.output(0), t);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> shapeLowerings() {
  std::vector<OpLowering> v;
  for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) v.push_back({"", op, checkView, emitReshape});
  v.push_back({"", "Transpose", checkView, emitTranspose});
  v.push_back({"", "Identity", checkView, emitIdentity});
  return v;
}

}  // namespace tessel::nc::compiler
