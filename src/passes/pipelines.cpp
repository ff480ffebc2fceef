// The pipelines per optimization level, as data, with the reason for each position.
#include "passes/pipelines.h"

namespace tessel {

namespace {

const PipelineSpec kO0Pipeline = {};

const PipelineSpec kO1Pipeline = {
    {"infer-shapes"},    // First: fold-shapes reads the inferred types, fold-constants checks its size
                         // cap against them before evaluating.
    {"promote-half"},    // Before folding and fusion: tessel's kernels compute float32 (the
                         // accelerator's cast inside the kernels, --auto-cast), so a published fp16
                         // model's weights and values become float32 and every later pass and
                         // kernel sees float32; its inputs and outputs keep their declared types.
    {"fold-shapes"},     // Before fold-constants: turns Shape/Size of static values into constants, so
                         // the Gather/Unsqueeze/Concat after them become all-constant.
    {"fold-constants"},  // Folds those chains (and any other constant subexpression) in one run, up to
                         // the Reshape/Expand that reads the result.
    {"eliminate-common-subexpressions"},  // After folding: equal folded constants and the nodes
                                          // reading them become identical and merge.
    {"eliminate-dead-code"},  // Removes what folding and merging left unread (Shape nodes whose
                              // Gathers folded, Constant nodes, duplicate chains) and the
                              // initializers they read.
    {"infer-shapes"},  // Again, last: a Reshape/Expand whose shape input is now constant gets a static
                       // output type.
};

// -O2: the fusions, on the canonical, folded graph -O1 leaves (constants they match are folded
// initializers, shapes are inferred).
const PipelineSpec kO2Pipeline = [] {
  PipelineSpec spec = kO1Pipeline;
  // Before -O1's fold-constants, which would fold the weights' DequantizeLinear into float weights:
  // a QDQ model's products become integer ops (a rewrite within float32 rounding of the QDQ
  // arithmetic, so not at -O1, which changes no result).
  spec.insert(spec.begin() + 1, PipelineStep{"fuse-qdq"});
  spec.insert(spec.end(), {
      // A second folding round: the types -O1's last inference made static (an Expand whose shape
      // folded, say) let the Shape chains after them fold too, such as the Slice bounds of torch's
      // MultiheadAttention, so the fusion patterns below see constants.
      {"fold-shapes"},
      {"fold-constants"},
      {"eliminate-dead-code"},
      {"infer-shapes"},
      // A third round: each one can make static the types the next one's Shape chains read
      // (paddle2onnx's SVTR neck reshapes by Shape-of-LayerNorm-of-Reshape-of-Shape...), and a
      // value left dynamic runs its whole subgraph on reference kernels.
      {"fold-shapes"},
      {"fold-constants"},
      {"eliminate-dead-code"},
      {"infer-shapes"},
      {"fold-batch-norm"},       // First: leaves a Conv whose activation fuse-epilogues then takes.
      {"fold-conv-affine"},      // After it, for the scales and shifts it leaves (paddle2onnx's learned
                                 // w * conv + b, a BatchNormalization after a ConvTranspose), so the
                                 // activation after them reaches fuse-epilogues.
      {"recognize-gelu"},        // Before fuse-epilogues, which takes the Gelu as an activation.
      {"recognize-layer-norm"},
      {"recognize-softmax"},     // Before recognize-attention, which starts from the Softmax.
      {"recognize-attention"},   // Before fuse-epilogues: the score MatMul's mask Add would
                                 // otherwise be fused into it as a residual.
      {"recognize-rotary-embedding"},
      {"fuse-epilogues"},
      {"fold-conv-input-affine"},  // After fuse-epilogues, which has taken the activations whose
                                   // constant ops (HardSwish's / 6) it would otherwise fold away.
      {"eliminate-dead-code"},   // Constant nodes the patterns read, weights replaced by folded ones.
  });
  return spec;
}();

// -O3: -O2, then what is left of elementwise chains becomes FusedElementwise (so that it takes no
// op another fusion wants), then convolutions go channels-last.
const PipelineSpec kO3Pipeline = [] {
  PipelineSpec spec = kO2Pipeline;
  spec.insert(spec.end(), {
      {"fuse-elementwise"},
      {"eliminate-dead-code"},  // The constants only the fused ops' bodies now hold.
      {"assign-layout"},        // After every fusion: a FusedConv with its bias, residual and
                                // activation converts as one node, and no later pattern has to
                                // look through the Transposes it adds.
      {"eliminate-dead-code"},  // Anything else left unread: the pass erases only the Transposes
                                // it added or cancelled.
  });
  return spec;
}();

}  // namespace

const PipelineSpec &pipelineForLevel(int level) {
  TESSEL_CHECK(level >= 0 && level <= kMaxOptimizationLevel, "no optimization level {}", level);
  static const PipelineSpec *const kLevels[] = {&kO0Pipeline, &kO1Pipeline, &kO2Pipeline, &kO3Pipeline};
  return *kLevels[level];
}

Status addOptimizationPipeline(PassManager &manager, int level) {
  if (level < 0 || level > kMaxOptimizationLevel) {
    return makeError(ErrorCode::InvalidArgument, "no optimization level -O{}; the levels are -O0 to -O{}", level,
                     kMaxOptimizationLevel);
  }
  for (const PipelineStep &step : pipelineForLevel(level)) TESSEL_RETURN_IF_ERROR(manager.addPass(step.pass));
  return Status::success();
}

Status foldSizeIndependent(Model &model, int optLevel) {
  if (optLevel <= 0) return Status::success();
  PassManager manager;
  TESSEL_RETURN_IF_ERROR(manager.addPipeline(
      "infer-shapes,promote-half,fold-shapes,fold-constants,eliminate-common-subexpressions,eliminate-dead-code,"
      "infer-shapes"));
  if (optLevel >= 2) TESSEL_RETURN_IF_ERROR(manager.addPipeline("fold-batch-norm,fold-conv-affine,eliminate-dead-code"));
  return manager.run(model).status();
}

}  // namespace tessel
