// Seeded random feeds.
#include "runtime/random_inputs.h"

#include "support/memory_budget.h"

namespace tessel {

Expected<Tensor> randomInput(const Value &input, const std::map<std::string, int64_t> &dimValues, std::mt19937_64 &rng) {
  const Type &type = input.type();
  if (!type.isTensor() || type.dtype() == DType::Undefined || !type.shape().rankKnown()) {
    return makeError(ErrorCode::InvalidArgument, "input '{}' has type {}; feed it (--input {}=FILE.npy)",
                     input.name(), type.str(), input.name());
  }
  std::vector<int64_t> sizes;
  for (const Dim &d : type.shape().dims()) {
    if (d.isStatic()) {
      sizes.push_back(d.size);
    } else {
      auto it = dimValues.find(d.symbol);
      sizes.push_back(it == dimValues.end() ? 1 : it->second);
    }
  }
  // A model may declare any sizes; the allocation must fit before it is made.
  const std::optional<uint64_t> bytes = checkedByteCount(sizes, dtypeSize(type.dtype()));
  const std::string what = fmt::format("input '{}' ({}[{}])", input.name(), dtypeName(type.dtype()), fmt::join(sizes, ","));
  if (!bytes) return makeError(ErrorCode::InvalidArgument, "{}: its byte count overflows 64 bits", what);
  if (Status fits = checkFitsMemory(what, *bytes); !fits.ok()) {
    Diagnostic diag = fits.diag();
    diag.message += fmt::format("; feed it (--input {}=FILE.npy) or give smaller sizes with --dim", input.name());
    return diag;
  }
  Tensor t(type.dtype(), sizes);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  bool handled = visitDType(type.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, std::string>) {
      for (auto &s : t.span<std::string>()) s = std::to_string(small(rng));
    } else if constexpr (std::is_same_v<T, bool>) {
      for (auto &b : t.span<bool>()) b = small(rng) % 2;
    } else if constexpr (std::is_integral_v<T>) {
      for (auto &v : t.span<T>()) v = static_cast<T>(small(rng));
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      for (auto &v : t.span<T>()) v = T(uniform(rng), uniform(rng));
    } else if constexpr (std::is_arithmetic_v<T>) {
      for (auto &v : t.span<T>()) v = static_cast<T>(uniform(rng));
    } else {
      for (auto &v : t.span<T>()) v = T(static_cast<float>(uniform(rng)));
    }
  });
  if (!handled) return makeError(ErrorCode::InvalidArgument, "cannot make random {} input", dtypeName(type.dtype()));
  return t;
}

Expected<NamedValues> completeFeeds(const Graph &graph, NamedValues given, const std::map<std::string, int64_t> &dimValues,
                                    uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (Value *input : graph.inputs()) {
    bool fed = false;
    for (const auto &[name, value] : given) fed = fed || name == input->name();
    if (fed || input->hasInitializer()) continue;
    TESSEL_ASSIGN_OR_RETURN(Tensor tensor, randomInput(*input, dimValues, rng));
    given.emplace_back(input->name(), std::move(tensor));
  }
  return given;
}

}  // namespace tessel
