// The pass table, built from passes.def, and the pass manager that runs a list of passes.
#include "passes/pass_manager.h"

#include "ir/verifier.h"
#include "passes/assign_layout.h"
#include "passes/eliminate_common_subexpressions.h"
#include "passes/eliminate_dead_code.h"
#include "passes/fold_batch_norm.h"
#include "passes/fold_constants.h"
#include "passes/fold_conv_affine.h"
#include "passes/fold_conv_input_affine.h"
#include "passes/fold_shapes.h"
#include "passes/fuse_elementwise.h"
#include "passes/fuse_epilogues.h"
#include "passes/fuse_qdq.h"
#include "passes/infer_shapes.h"
#include "passes/promote_half.h"
#include "passes/recognize_attention.h"
#include "passes/recognize_gelu.h"
#include "passes/recognize_layer_norm.h"
#include "passes/recognize_rotary_embedding.h"
#include "passes/float_dynamic_quantization.h"
#include "passes/kv_cache_in_place.h"
#include "passes/last_position_logits.h"
#include "passes/recognize_softmax.h"

namespace tessel {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> table = {
#define PASS(name, cliName, description, function) {#name, cliName, description, function},
#include "passes/passes.def"
#undef PASS
  };
  return table;
}

const PassInfo *findPass(std::string_view cliName) {
  for (const PassInfo &info : allPasses()) {
    if (info.cliName == cliName) return &info;
  }
  return nullptr;
}

Status PassManager::addPass(std::string_view cliName) {
  const PassInfo *info = findPass(cliName);
  if (!info) {
    std::string known;
    for (const PassInfo &pass : allPasses()) known += (known.empty() ? "" : ", ") + std::string(pass.cliName);
    return makeError(ErrorCode::InvalidArgument, "unknown pass '{}'; the passes are: {}", cliName, known);
  }
  passes_.push_back(info);
  return Status::success();
}

Status PassManager::addPipeline(std::string_view pipeline) {
  size_t start = 0;
  while (start <= pipeline.size()) {
    size_t comma = pipeline.find(',', start);
    std::string_view name = pipeline.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (!name.empty()) TESSEL_RETURN_IF_ERROR(addPass(name));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return Status::success();
}

Expected<bool> PassManager::run(Model &model) const {
  bool changed = false;
  for (const PassInfo *pass : passes_) {
    Expected<bool> result = pass->run(model);
    if (!result.ok()) {
      Diagnostic diag = result.diag();
      if (diag.loc.file.empty()) diag.loc.file = model.sourcePath;
      diag.message = fmt::format("pass '{}': {}", pass->cliName, diag.message);
      return diag;
    }
    changed |= *result;
    if (!options_.verifyEach) continue;
    Status verified = verifyModel(model);
    if (!verified.ok()) {
      Diagnostic diag = verified.diag();
      diag.code = ErrorCode::Internal;
      diag.message =
          fmt::format("the IR is invalid after pass '{}' (a bug in the pass): {}", pass->cliName, diag.message);
      return diag;
    }
  }
  return changed;
}

}  // namespace tessel
