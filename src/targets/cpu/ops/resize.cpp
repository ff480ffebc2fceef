// cpu lowering of Resize to the table-driven 2-D kernel (kernels/resize.h). The tables are built
// here from Resize's geometry (ops/resize_geometry.h: the coordinate transformation and the nearest
// rounding, which the reference kernel reads too), with the left neighbour strictly below the
// coordinate and edge clamping as the reference does, in double, so both targets pick the same
// source elements. Covered: f32, nearest and
// linear, every coordinate mode but tf_crop_and_resize, exclude_outside = 0, constant scales or
// sizes, resizing at most two adjacent axes among the last three (the last two, or H and W of a
// channels-last [N, H, W, C]); anything else runs the reference kernel.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "ops/resize_geometry.h"
#include "targets/cpu/kernels/resize.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

struct Options {
  std::string mode = "nearest";
  std::string coordinateMode = "half_pixel";
  std::string nearestMode = "round_prefer_floor";
};

class ResizeStep final : public Step {
 public:
  explicit ResizeStep(ResizePlan plan) : plan_(std::move(plan)) {}

  Status run(const StepIo &io) const override {
    resize2d(plan_, static_cast<const float *>(io.inputs[0]), static_cast<float *>(io.outputs[0]), io.pool);
    return Status::success();
  }
  std::string kernelName() const override { return plan_.linear ? "resize2d_linear" : "resize2d_nearest"; }

 private:
  ResizePlan plan_;
};

/// Constant input `index` as doubles; an empty vector when absent or empty, nullopt when not constant.
std::optional<std::vector<double>> constantDoubles(LowerContext &ctx, size_t index) {
  if (ctx.numInputs() <= index || !ctx.hasInput(index)) return std::vector<double>{};
  const Tensor *t = ctx.constantInput(index);
  if (t == nullptr) return std::nullopt;
  std::vector<double> values;
  for (int64_t i = 0; i < t->numel(); ++i) values.push_back(t->scalarAsDouble(i));
  return values;
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerResize(LowerContext &ctx) {
  const Node &node = ctx.node();
  if (!ctx.hasInput(0) || ctx.inputDType(0) != DType::Float32 || ctx.outputDType(0) != DType::Float32) {
    return std::unique_ptr<Step>();
  }
  Options options;
  std::optional<std::vector<double>> scales;
  if (ctx.opset() < 11) {
    options.coordinateMode = "asymmetric";
    options.nearestMode = "floor";
    scales = constantDoubles(ctx, 1);
  } else {
    options.coordinateMode = node.attrString("coordinate_transformation_mode", "half_pixel");
    options.nearestMode = node.attrString("nearest_mode", "round_prefer_floor");
    const std::string &nm = options.nearestMode;
    // An unknown nearest_mode is the reference kernel's error to report.
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil") {
      return std::unique_ptr<Step>();
    }
    if (node.attrInt("exclude_outside", 0) != 0) return std::unique_ptr<Step>();
    // The region of interest matters only to tf_crop_and_resize, which is not covered.
    scales = constantDoubles(ctx, 2);
    if (ctx.numInputs() > 3 && ctx.hasInput(3) && ctx.constantInput(3) == nullptr) return std::unique_ptr<Step>();
    // Opset 18: antialiased filters, and sizes under an aspect-ratio policy (whose scale is not
    // out / in), are the reference kernel's; so are scales for the `axes` subset only.
    if (node.attrInt("antialias", 0) != 0 || node.attrString("keep_aspect_ratio_policy", "stretch") != "stretch" ||
        (node.hasAttr("axes") && scales && !scales->empty())) {
      return std::unique_ptr<Step>();
    }
  }
  options.mode = node.attrString("mode", "nearest");
  if (!scales || (options.mode != "nearest" && options.mode != "linear")) return std::unique_ptr<Step>();
  const std::vector<int64_t> in = ctx.inputSizes(0), out = ctx.outputSizes(0);
  const size_t rank = in.size();
  if (rank < 2 || out.size() != rank || (!scales->empty() && scales->size() != rank)) return std::unique_ptr<Step>();
  for (size_t a = 0; a < rank; ++a) {
    if (in[a] <= 0 || out[a] <= 0) return std::unique_ptr<Step>();
  }
  ResizePlan plan;
  plan.linear = options.mode == "linear";
  std::vector<ResizeAxis> tables;
  for (size_t a = 0; a < rank; ++a) {
    const double scale = scales->empty() ? double(out[a]) / double(in[a]) : (*scales)[a];
    std::optional<ResizeAxis> table =
        resizeTwoTaps(in[a], out[a], scale, options.mode, options.coordinateMode, options.nearestMode);
    if (!table) return std::unique_ptr<Step>();
    tables.push_back(std::move(*table));
  }
  // The kernel's column axis: the last one when it is resized, else the one before it (the last
  // is then the per-pixel block), given a row axis before it.
  const bool lastIsPixelBlock = rank >= 3 && resizeKeepsAxis(tables[rank - 1], in[rank - 1]) &&
                                !resizeKeepsAxis(tables[rank - 2], in[rank - 2]);
  const size_t columnAxis = lastIsPixelBlock ? rank - 2 : rank - 1;
  if (columnAxis < 1) return std::unique_ptr<Step>();
  for (size_t a = 0; a + 1 < columnAxis; ++a) {
    // Axes before the row axis must map each coordinate to itself: they are the kernel's planes.
    if (!resizeKeepsAxis(tables[a], in[a])) return std::unique_ptr<Step>();
    plan.planes *= in[a];
  }
  for (size_t a = columnAxis + 1; a < rank; ++a) plan.inner *= in[a];
  plan.inHeight = in[columnAxis - 1];
  plan.inWidth = in[columnAxis];
  plan.outHeight = out[columnAxis - 1];
  plan.outWidth = out[columnAxis];
  plan.rows = std::move(tables[columnAxis - 1]);
  plan.columns = std::move(tables[columnAxis]);
  return std::unique_ptr<Step>(std::make_unique<ResizeStep>(std::move(plan)));
}

}  // namespace tessel::cpu
