// Fixing the sizes of a model's graph inputs before planning.
#include <algorithm>

#include "ir/specialize.h"

namespace tessel {

Status specializeInputs(Model &model, const std::vector<std::pair<std::string, std::vector<int64_t>>> &sizes,
                        int64_t batch) {
  for (const auto &[name, dims] : sizes) {
    bool known = std::any_of(model.graph->inputs().begin(), model.graph->inputs().end(),
                             [&](const Value *v) { return v->name() == name; });
    if (!known) return makeFileError(ErrorCode::InvalidArgument, model.sourcePath, "the model has no input named '{}'", name);
  }
  for (Value *input : model.graph->inputs()) {
    if (input->hasInitializer() || !input->type().isTensor()) continue;
    const Shape &shape = input->type().shape();
    std::vector<Dim> dims = shape.dims();
    auto given = std::find_if(sizes.begin(), sizes.end(), [&](const auto &entry) { return entry.first == input->name(); });
    if (given != sizes.end()) {
      if (shape.rankKnown() && given->second.size() != shape.rank()) {
        return makeFileError(ErrorCode::ShapeMismatch, model.sourcePath, "input '{}' has rank {}; {} sizes given",
                             input->name(), shape.rank(), given->second.size());
      }
      for (size_t i = 0; i < dims.size() && shape.rankKnown(); ++i) {
        if (dims[i].isStatic() && dims[i].size != given->second[i]) {
          return makeFileError(ErrorCode::ShapeMismatch, model.sourcePath, "input '{}' has shape {}; given {}",
                               input->name(), shape.str(), formatSizes(given->second));
        }
      }
      dims.assign(given->second.begin(), given->second.end());
    } else if (batch > 0 && !dims.empty() && !dims[0].isStatic()) {
      dims[0] = Dim(batch);
    } else if (batch > 0 && !dims.empty() && dims[0].size != batch) {
      return makeFileError(ErrorCode::ShapeMismatch, model.sourcePath,
                           "input '{}' has a fixed batch of {}; --batch {} needs a model exported with a dynamic batch dim",
                           input->name(), dims[0].size, batch);
    }
    Shape specialized(dims);
    if (!shape.rankKnown() || !specialized.isStatic()) {
      return makeFileError(ErrorCode::InvalidArgument, model.sourcePath,
                           "input '{}' has shape {}: give its sizes with --shape {}=d0,d1,...", input->name(),
                           shape.str(), input->name());
    }
    input->setType(Type::tensor(input->type().dtype(), specialized));
  }
  return Status::success();
}

}  // namespace tessel
