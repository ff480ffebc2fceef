// Fixing the sizes of a model's graph inputs before planning; checking feeds against symbolic dims.
#include <algorithm>
#include <charconv>

#include "ir/specialize.h"

namespace tessel {

Status specializeInputs(Model &model, const InputSizes &sizes, int64_t batch, bool keepSymbolic) {
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
      if (keepSymbolic) {
        if (shape.rankKnown()) input->setType(Type::tensor(input->type().dtype(), specialized));
        continue;
      }
      return makeFileError(ErrorCode::InvalidArgument, model.sourcePath,
                           "input '{}' has shape {}: give its sizes with --shape {}=d0,d1,...", input->name(),
                           shape.str(), input->name());
    }
    input->setType(Type::tensor(input->type().dtype(), specialized));
  }
  return Status::success();
}

std::string DimRange::str() const {
  const std::string high = hi == std::numeric_limits<int64_t>::max() ? "" : std::to_string(hi);
  return fmt::format("{}..{}", lo, high);
}

Expected<std::pair<std::string, DimRange>> parseDimRange(const std::string &spec) {
  const size_t eq = spec.find('=');
  const size_t dots = spec.find("..", eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || eq == 0 || dots == std::string::npos) {
    return makeError(ErrorCode::InvalidArgument, "--dim '{}' is not NAME=LO..HI", spec);
  }
  DimRange range;
  auto bound = [&](std::string_view text, int64_t &out) {
    if (text.empty()) return true;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size() && out >= 0;
  };
  const std::string_view view(spec);
  if (!bound(view.substr(eq + 1, dots - eq - 1), range.lo) || !bound(view.substr(dots + 2), range.hi)) {
    return makeError(ErrorCode::InvalidArgument, "--dim '{}': the bounds are not sizes", spec);
  }
  if (range.lo > range.hi) {
    return makeError(ErrorCode::InvalidArgument, "--dim '{}': the low bound {} is above the high bound {}", spec,
                     range.lo, range.hi);
  }
  return std::make_pair(spec.substr(0, eq), range);
}

std::string DimBuckets::str() const { return fmt::format("{}={}", dim, fmt::join(sizes, ",")); }

Expected<DimBuckets> parseBuckets(const std::string &spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return makeError(ErrorCode::InvalidArgument, "--buckets '{}' is not NAME=A,B,C or NAME=auto:LO..HI", spec);
  }
  DimBuckets buckets;
  buckets.dim = spec.substr(0, eq);
  std::string_view rest = std::string_view(spec).substr(eq + 1);
  auto size = [](std::string_view text, int64_t &out) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return !text.empty() && error == std::errc() && end == text.data() + text.size() && out >= 1;
  };
  if (rest.starts_with("auto:")) {
    rest.remove_prefix(5);
    const size_t dots = rest.find("..");
    int64_t lo = 0, hi = 0;
    if (dots == std::string_view::npos || !size(rest.substr(0, dots), lo) || !size(rest.substr(dots + 2), hi) || lo > hi ||
        hi > (int64_t{1} << 40)) {
      return makeError(ErrorCode::InvalidArgument, "--buckets '{}': auto needs LO..HI with 1 <= LO <= HI", spec);
    }
    int64_t p = 1;
    while (p < lo) p *= 2;
    for (; p < hi; p *= 2) buckets.sizes.push_back(p);
    buckets.sizes.push_back(hi);
  } else {
    for (size_t start = 0; start <= rest.size();) {
      const size_t comma = std::min(rest.find(',', start), rest.size());
      int64_t value = 0;
      if (!size(rest.substr(start, comma - start), value)) {
        return makeError(ErrorCode::InvalidArgument, "--buckets '{}': '{}' is not a size >= 1", spec,
                         std::string(rest.substr(start, comma - start)));
      }
      buckets.sizes.push_back(value);
      start = comma + 1;
    }
    std::sort(buckets.sizes.begin(), buckets.sizes.end());
    buckets.sizes.erase(std::unique(buckets.sizes.begin(), buckets.sizes.end()), buckets.sizes.end());
  }
  return buckets;
}

std::map<std::string, int64_t> symbolSizes(const Model &model, const InputSizes &sizes) {
  std::map<std::string, int64_t> symbols;
  for (const Value *input : model.graph->inputs()) {
    if (!input->type().isTensor() || !input->type().shape().rankKnown()) continue;
    const Shape &shape = input->type().shape();
    for (const auto &[name, dims] : sizes)
      if (name == input->name())
        for (size_t axis = 0; axis < shape.rank() && axis < dims.size(); ++axis)
          if (shape[axis].isSymbolic()) symbols.emplace(shape[axis].symbol, dims[axis]);
  }
  return symbols;
}

Expected<InputSizes> checkFeedShapes(const Model &model, const NamedValues &feeds, const DimRanges &ranges) {
  const Graph &graph = *model.graph;
  const std::string &file = model.sourcePath;
  for (const auto &[name, value] : feeds) {
    bool known = std::any_of(graph.inputs().begin(), graph.inputs().end(), [&](const Value *v) { return v->name() == name; });
    if (!known) return makeFileError(ErrorCode::InvalidArgument, file, "the model has no input named '{}'", name);
  }
  struct Binding {
    int64_t size;
    std::string input;
    size_t axis;
  };
  std::map<std::string, Binding> bound;  // Symbol -> the first feed that gave it a size.
  InputSizes sizes;
  for (const Value *input : graph.inputs()) {
    const RuntimeValue *fed = nullptr;
    for (const auto &[name, value] : feeds)
      if (name == input->name()) fed = &value;
    const Type &type = input->type();
    if (!fed) {
      if (input->hasInitializer()) {
        sizes.emplace_back(input->name(), input->initializer().sizes());
        continue;
      }
      return makeFileError(ErrorCode::InvalidArgument, file, "input '{}' ({}) was not given", input->name(), type.str());
    }
    if (!type.isTensor()) continue;
    if (!fed->isTensor()) {
      return makeFileError(ErrorCode::TypeMismatch, file, "input '{}' expects a tensor of {}; got {}", input->name(),
                           type.str(), fed->describe());
    }
    const Tensor &tensor = fed->tensor();
    if (type.dtype() != DType::Undefined && tensor.dtype() != type.dtype()) {
      return makeFileError(ErrorCode::TypeMismatch, file, "input '{}' expects {}; got {}", input->name(), type.str(),
                           fed->describe());
    }
    const Shape &shape = type.shape();
    if (shape.rankKnown() && shape.rank() != tensor.rank()) {
      return makeFileError(ErrorCode::ShapeMismatch, file, "input '{}' has rank {} (shape {}); got rank {} ({})",
                           input->name(), shape.rank(), shape.str(), tensor.rank(), fed->describe());
    }
    for (size_t axis = 0; shape.rankKnown() && axis < shape.rank(); ++axis) {
      const Dim &dim = shape[axis];
      const int64_t size = tensor.size(axis);
      if (dim.isStatic() && dim.size != size) {
        return makeFileError(ErrorCode::ShapeMismatch, file, "input '{}' dim {} is {} (shape {}); got {} ({})",
                             input->name(), axis, dim.size, shape.str(), size, fed->describe());
      }
      if (!dim.isSymbolic()) continue;
      if (auto range = ranges.find(dim.symbol); range != ranges.end() && (size < range->second.lo || size > range->second.hi)) {
        return makeFileError(ErrorCode::ShapeMismatch, file,
                             "input '{}' dim {} ({}) is {}, outside the range {}={} the model was compiled for",
                             input->name(), axis, dim.symbol, size, dim.symbol, range->second.str());
      }
      auto [it, inserted] = bound.try_emplace(dim.symbol, Binding{size, input->name(), axis});
      if (!inserted && it->second.size != size) {
        return makeFileError(ErrorCode::ShapeMismatch, file,
                             "input '{}' dim {} ({}) is {}, but input '{}' dim {} gives {} = {}", input->name(), axis,
                             dim.symbol, size, it->second.input, it->second.axis, dim.symbol, it->second.size);
      }
    }
    sizes.emplace_back(input->name(), tensor.sizes());
  }
  return sizes;
}

}  // namespace tessel
