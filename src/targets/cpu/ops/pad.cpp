// cpu lowering of Pad to kernels/pad.h: constant, reflect and edge modes over any fixed-size
// dtype, with pads (and constant_value) constants: the pads attribute before opset 11, the pads
// input from it on; opset 18's axes input when absent. The index tables are built here, once.
#include <fmt/format.h>

#include <cstring>

#include "targets/cpu/kernels/pad.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

Expected<std::unique_ptr<Step>> notCovered() { return std::unique_ptr<Step>(); }

class PadStep final : public Step {
 public:
  PadStep(PadPlan plan, std::string mode) : plan_(std::move(plan)), mode_(std::move(mode)) {}
  Status run(const StepIo &io) const override {
    runPad(plan_, io.inputs[0], io.outputs[0], io.pool);
    return Status::success();
  }
  std::string kernelName() const override { return fmt::format("pad_{} rows", mode_); }

 private:
  PadPlan plan_;
  std::string mode_;
};

}  // namespace

Expected<std::unique_ptr<Step>> lowerPad(LowerContext &ctx) {
  const Node &node = ctx.node();
  const std::string mode = node.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") return notCovered();
  const std::vector<int64_t> in = ctx.inputSizes(0);
  const size_t rank = in.size();
  const DType dtype = ctx.inputDType(0);
  const size_t elementBytes = dtypeSize(dtype);
  std::vector<int64_t> pads;
  std::vector<std::byte> fill(elementBytes, std::byte{0});
  if (ctx.opset() >= 11) {
    if (ctx.numInputs() > 3 && ctx.hasInput(3)) return notCovered();  // opset 18's axes.
    const Tensor *padsInput = ctx.hasInput(1) ? ctx.constantInput(1) : nullptr;
    if (!padsInput || padsInput->dtype() != DType::Int64) return notCovered();
    pads = padsInput->toInt64Vector();
    if (ctx.numInputs() > 2 && ctx.hasInput(2)) {
      const Tensor *value = ctx.constantInput(2);
      if (!value || value->dtype() != dtype || value->numel() != 1) return notCovered();
      std::memcpy(fill.data(), value->rawData(), elementBytes);
    }
  } else {
    if (dtype != DType::Float32) return notCovered();  // The value attribute is a float.
    pads = node.attrInts(ctx.opset() < 2 ? "paddings" : "pads");
    const float value = node.attrFloat("value", 0.0f);
    std::memcpy(fill.data(), &value, sizeof value);
  }
  if (pads.size() != 2 * rank) return notCovered();  // The reference kernel reports it.
  std::vector<int64_t> out(rank);
  for (size_t a = 0; a < rank; ++a) {
    out[a] = in[a] + pads[a] + pads[a + rank];
    if (out[a] < 0 || (mode != "constant" && in[a] == 0 && out[a] > 0)) return notCovered();
  }
  if (ctx.outputSizes(0) != out || ctx.outputDType(0) != dtype) return notCovered();
  const PadMode kind = mode == "reflect" ? PadMode::Reflect : mode == "edge" ? PadMode::Edge : PadMode::Constant;
  return std::unique_ptr<Step>(std::make_unique<PadStep>(makePadPlan(in, pads, kind, elementBytes, std::move(fill)), mode));
}

}  // namespace tessel::cpu
