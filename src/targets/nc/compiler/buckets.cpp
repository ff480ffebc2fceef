// Buckets of an accelerator model; see buckets.h.
#include "targets/nc/compiler/buckets.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "ir/clone.h"
#include "passes/pipelines.h"
#include "support/thread_pool.h"
#include "targets/nc/compiler/artifact_io.h"

namespace tessel::nc::compiler {

namespace {

constexpr ArtifactMagic kBucketMagic = {'T', 'S', 'L', 'N', 'C', 'B', '0', '1'};

/// Copies the elements `from` and `to` have in common (index i < min of their sizes on every axis)
/// from `from` into `to`: padding into a larger zero tensor, or slicing into a smaller one.
void copyCommonRegion(const Tensor &from, Tensor &to) {
  const size_t rank = from.rank();
  const size_t element = dtypeSize(from.dtype());
  if (rank == 0) {
    std::memcpy(to.rawData(), from.rawData(), element);
    return;
  }
  std::vector<int64_t> common(rank);
  for (size_t a = 0; a < rank; ++a) common[a] = std::min(from.size(a), to.size(a));
  if (std::find(common.begin(), common.end(), 0) != common.end()) return;
  // Row-major strides in elements; the innermost common run is copied whole.
  std::vector<int64_t> fromStride(rank, 1), toStride(rank, 1);
  for (size_t a = rank - 1; a > 0; --a) {
    fromStride[a - 1] = fromStride[a] * from.size(a);
    toStride[a - 1] = toStride[a] * to.size(a);
  }
  const auto *src = static_cast<const uint8_t *>(from.rawData());
  auto *dst = static_cast<uint8_t *>(to.rawData());
  const size_t run = static_cast<size_t>(common[rank - 1]) * element;
  std::vector<int64_t> index(rank, 0);
  for (;;) {
    int64_t f = 0, t = 0;
    for (size_t a = 0; a + 1 < rank; ++a) {
      f += index[a] * fromStride[a];
      t += index[a] * toStride[a];
    }
    std::memcpy(dst + static_cast<size_t>(t) * element, src + static_cast<size_t>(f) * element, run);
    size_t a = rank - 1;
    while (a > 0 && ++index[a - 1] == common[a - 1]) index[--a] = 0;
    if (a == 0) return;
  }
}

/// Each output's symbolic dims by axis ("" where static or unnamed), as the model declares them.
std::vector<std::vector<std::string>> outputSymbols(const Model &model) {
  std::vector<std::vector<std::string>> symbols;
  for (const Value *out : model.graph->outputs()) {
    std::vector<std::string> axes;
    if (out->type().isTensor() && out->type().shape().rankKnown())
      for (const Dim &dim : out->type().shape().dims()) axes.push_back(dim.isSymbolic() ? dim.symbol : "");
    symbols.push_back(std::move(axes));
  }
  return symbols;
}

}  // namespace

std::string Bucket::label() const {
  if (sizes.empty()) return "static";
  std::string text;
  for (const auto &[dim, size] : sizes) text += fmt::format("{}{}={}", text.empty() ? "" : ",", dim, size);
  return text;
}

BucketSet::BucketSet(std::unique_ptr<NcExecutable> exe) {
  buckets_.push_back(Bucket{{}, std::move(exe)});
  compileSeconds_ = buckets_.front().exe->compileSeconds();
}

Expected<std::unique_ptr<BucketSet>> BucketSet::compile(Model model, const NcCompileOptions &options,
                                                        const std::vector<DimBuckets> &dims) {
  const auto start = std::chrono::steady_clock::now();
  const std::string &file = model.sourcePath;
  // Every symbolic dim must be bucketed, and every bucketed dim must be some input's.
  std::set<std::string> bucketed, named;
  for (const DimBuckets &d : dims) {
    if (!bucketed.insert(d.dim).second) return makeFileError(ErrorCode::InvalidArgument, file, "--buckets {}: given twice", d.dim);
  }
  for (const Value *input : model.graph->inputs()) {
    if (input->hasInitializer() || !input->type().isTensor()) continue;
    const Shape &shape = input->type().shape();
    if (!shape.rankKnown()) {
      return makeFileError(ErrorCode::InvalidArgument, file, "input '{}' has no known rank: give its sizes with --shape",
                           input->name());
    }
    for (size_t axis = 0; axis < shape.rank(); ++axis) {
      const Dim &dim = shape[axis];
      if (dim.isStatic()) continue;
      if (!dim.isSymbolic() || !bucketed.count(dim.symbol)) {
        return makeFileError(ErrorCode::InvalidArgument, file,
                             "input '{}' dim {} ({}) is symbolic and not bucketed: give it --buckets {}=... or fix it "
                             "with --shape",
                             input->name(), axis, dim.isSymbolic() ? dim.symbol : "unnamed",
                             dim.isSymbolic() ? dim.symbol : "NAME");
      }
      named.insert(dim.symbol);
    }
  }
  for (const DimBuckets &d : dims)
    if (!named.count(d.dim))
      return makeFileError(ErrorCode::InvalidArgument, file, "--buckets {}: no input has a dim named '{}'", d.str(), d.dim);

  auto set = std::unique_ptr<BucketSet>(new BucketSet());
  set->dims_ = dims;
  set->outputDims_ = outputSymbols(model);
  // The size-independent passes once; where they cannot take the symbolic graph, each bucket runs
  // them on the graph as given.
  Model folded = cloneModel(model);
  if (foldSizeIndependent(folded, options.optLevel).ok()) model = std::move(folded);
  model.graph->nameNodesUniquely();  // Device constants are named after their nodes.
  set->symbolic_ = std::move(model);

  // The buckets, row-major over the dims.
  std::vector<std::map<std::string, int64_t>> combos(1);
  for (const DimBuckets &d : dims) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto &combo : combos)
      for (int64_t size : d.sizes) {
        next.push_back(combo);
        next.back()[d.dim] = size;
      }
    combos = std::move(next);
  }
  std::vector<Expected<std::unique_ptr<NcExecutable>>> compiled;
  for (size_t i = 0; i < combos.size(); ++i) compiled.emplace_back(makeError(ErrorCode::Internal, "not compiled"));
  // The weight blocks every bucket lays out alike are made once.
  ConstantCache constants;
  NcCompileOptions shared = options;
  if (!shared.lowering.constantCache) shared.lowering.constantCache = &constants;
  NcCompileOptions pinned = shared;
  auto compileBucket = [&](size_t b) {
    Model copy = cloneModel(set->symbolic_);
    InputSizes sizes;
    for (const Value *input : copy.graph->inputs()) {
      if (input->hasInitializer() || !input->type().isTensor()) continue;
      std::vector<int64_t> dimsOf;
      for (const Dim &dim : input->type().shape().dims()) dimsOf.push_back(dim.isStatic() ? dim.size : combos[b].at(dim.symbol));
      sizes.emplace_back(input->name(), std::move(dimsOf));
    }
    Status specialized = specializeInputs(copy, sizes, 0);
    if (specialized.ok()) compiled[b] = compileNc(std::move(copy), b + 1 == combos.size() ? shared : pinned);
    else compiled[b] = specialized.diag();
  };
  // The largest bucket first, alone: the others place the constants they share with it at its
  // offsets. Then the rest in parallel, largest first, so the last to finish is a small one.
  compileBucket(combos.size() - 1);
  if (compiled.back().ok())
    for (const DeviceProgram &program : (*compiled.back())->programs()) pinned.constantLayouts.push_back(program.constantLayout());
  ThreadPool pool(0);
  pool.parallelFor(static_cast<int64_t>(combos.size()) - 1,
                   [&](int64_t i) { compileBucket(combos.size() - 2 - static_cast<size_t>(i)); });
  for (size_t b = 0; b < combos.size(); ++b) {
    Bucket bucket;
    bucket.sizes = combos[b];
    if (!compiled[b].ok()) {
      Diagnostic why = compiled[b].diag();
      why.message = fmt::format("bucket {}: {}", bucket.label(), why.message);
      return why;
    }
    bucket.exe = std::move(*compiled[b]);
    set->buckets_.push_back(std::move(bucket));
  }
  set->compileSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return set;
}

Expected<BucketChoice> BucketSet::choose(const NamedValues &feeds) const {
  BucketChoice choice;
  if (!bucketed()) {
    choice.padded = feeds;
    return choice;
  }
  const Model &model = symbolic_;
  TESSEL_ASSIGN_OR_RETURN(InputSizes sizes, checkFeedShapes(model, feeds, {}));
  const std::map<std::string, int64_t> symbols = symbolSizes(model, sizes);
  std::map<std::string, int64_t> padTo;
  size_t bucket = 0;
  for (const DimBuckets &d : dims_) {
    const int64_t size = symbols.at(d.dim);
    auto fits = std::lower_bound(d.sizes.begin(), d.sizes.end(), size);
    if (fits == d.sizes.end()) {
      std::string where;
      for (const Value *input : model.graph->inputs())
        for (size_t axis = 0; where.empty() && input->type().isTensor() && axis < input->type().shape().rank(); ++axis)
          if (input->type().shape()[axis].isSymbolic() && input->type().shape()[axis].symbol == d.dim)
            where = fmt::format("input '{}' dim {}", input->name(), axis);
      return makeFileError(ErrorCode::ShapeMismatch, model.sourcePath,
                           "{} ({}) is {}, larger than the largest bucket {}={} the model was compiled for (buckets {})",
                           where, d.dim, size, d.dim, d.sizes.back(), d.str());
    }
    bucket = bucket * d.sizes.size() + static_cast<size_t>(fits - d.sizes.begin());
    padTo[d.dim] = *fits;
    choice.sizes[d.dim] = size;
  }
  choice.bucket = bucket;
  double fed = 0, padded = 0;
  for (const auto &[name, value] : feeds) {
    const Value *input = nullptr;
    for (const Value *v : model.graph->inputs())
      if (v->name() == name) input = v;
    if (!input || !value.isTensor() || !input->type().shape().rankKnown()) {
      choice.padded.emplace_back(name, value);
      continue;
    }
    const Tensor &tensor = value.tensor();
    std::vector<int64_t> to = tensor.sizes();
    for (size_t axis = 0; axis < to.size(); ++axis)
      if (const Dim &dim = input->type().shape()[axis]; dim.isSymbolic() && padTo.count(dim.symbol)) to[axis] = padTo.at(dim.symbol);
    if (to == tensor.sizes()) {
      choice.padded.emplace_back(name, value);
      continue;
    }
    if (tensor.dtype() == tessel::DType::String) {
      return makeFileError(ErrorCode::InvalidArgument, model.sourcePath, "input '{}': string tensors cannot be padded to a bucket", name);
    }
    fed += static_cast<double>(tensor.numel());
    padded += static_cast<double>(numElements(to));
    Tensor grown(tensor.dtype(), to);
    copyCommonRegion(tensor, grown);
    choice.padded.emplace_back(name, RuntimeValue(std::move(grown)));
  }
  choice.paddingWaste = padded > 0 ? 1.0 - fed / padded : 0.0;
  return choice;
}

Expected<NamedValues> BucketSet::unpad(const BucketChoice &choice, NamedValues outputs) const {
  if (!bucketed()) return outputs;
  for (size_t o = 0; o < outputs.size() && o < outputDims_.size(); ++o) {
    RuntimeValue &value = outputs[o].second;
    if (!value.isTensor()) continue;
    const Tensor &tensor = value.tensor();
    std::vector<int64_t> to = tensor.sizes();
    for (size_t axis = 0; axis < to.size() && axis < outputDims_[o].size(); ++axis)
      if (auto it = choice.sizes.find(outputDims_[o][axis]); it != choice.sizes.end()) to[axis] = std::min(to[axis], it->second);
    if (to == tensor.sizes()) continue;
    Tensor sliced(tensor.dtype(), to);
    copyCommonRegion(tensor, sliced);
    value = RuntimeValue(std::move(sliced));
  }
  return outputs;
}

BucketHbm BucketSet::hbm() const {
  BucketHbm hbm;
  // A constant is (program, HBM offset, bytes); shared when every bucket has it alike.
  using Key = std::tuple<size_t, uint64_t, const std::vector<uint8_t> *>;
  std::vector<std::vector<Key>> perBucket;
  for (const Bucket &bucket : buckets_) {
    std::vector<Key> keys;
    const auto &programs = bucket.exe->programs();
    uint64_t rest = 0;
    for (size_t p = 0; p < programs.size(); ++p) {
      uint64_t constants = 0;
      for (const auto &[offset, bytes] : programs[p].constantImage) {
        keys.emplace_back(p, offset, bytes.get());
        constants += bytes->size();
      }
      rest = std::max(rest, programs[p].hbmBytes - std::min(programs[p].hbmBytes, constants));
    }
    hbm.largestRestBytes = std::max(hbm.largestRestBytes, rest);
    perBucket.push_back(std::move(keys));
  }
  auto same = [](const Key &a, const Key &b) {
    return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) &&
           (std::get<2>(a) == std::get<2>(b) || *std::get<2>(a) == *std::get<2>(b));
  };
  for (size_t b = 0; b < perBucket.size(); ++b)
    for (const Key &key : perBucket[b]) {
      bool everywhere = true;
      for (size_t other = 0; other < perBucket.size() && everywhere; ++other) {
        if (other == b) continue;
        everywhere = std::any_of(perBucket[other].begin(), perBucket[other].end(), [&](const Key &k) { return same(k, key); });
      }
      const uint64_t bytes = std::get<2>(key)->size();
      if (!everywhere) hbm.ownConstantBytes += bytes;
      else if (b == 0) hbm.sharedConstantBytes += bytes;
    }
  return hbm;
}

std::string BucketSet::report() const {
  if (!bucketed()) return buckets_.front().exe->report();
  std::string dimsText;
  for (const DimBuckets &d : dims_) dimsText += (dimsText.empty() ? "" : " ") + d.str();
  std::string text = fmt::format("buckets {}: {} program sets, compiled in {:.1f} s\n", dimsText, buckets_.size(),
                                 compileSeconds_);
  text += fmt::format("  {:<14} {:>9} {:>13} {:>14} {:>12} {:>10}\n", "bucket", "programs", "device nodes",
                      "estimated us", "HBM MiB", "compile s");
  for (const Bucket &bucket : buckets_) {
    const NcExecutable &exe = *bucket.exe;
    int device = 0;
    for (size_t i = 0; i < exe.model().graph->nodes().size(); ++i) device += exe.nodeOnDevice(i) ? 1 : 0;
    double estimated = 0;
    uint64_t hbmBytes = 0;
    for (const DeviceProgram &p : exe.programs()) hbmBytes = std::max(hbmBytes, p.hbmBytes);
    for (size_t p = 0; p < exe.programs().size(); p += static_cast<size_t>(exe.cores())) estimated += exe.programs()[p].estimatedNs;
    text += fmt::format("  {:<14} {:>9} {:>6}/{:<6} {:>14.1f} {:>12.1f} {:>10.1f}\n", bucket.label(), exe.programs().size(),
                        device, exe.model().graph->nodes().size(), estimated / 1000.0,
                        static_cast<double>(hbmBytes) / (1 << 20), exe.compileSeconds());
  }
  const BucketHbm h = hbm();
  const uint64_t total = h.sharedConstantBytes + h.ownConstantBytes + h.largestRestBytes;
  text += fmt::format(
      "  HBM for all buckets: {:.1f} MiB = constants shared by every bucket {:.1f} MiB (one copy) + constants of single "
      "buckets {:.1f} MiB + the largest bucket's inputs, outputs and scratch {:.1f} MiB\n",
      static_cast<double>(total) / (1 << 20), static_cast<double>(h.sharedConstantBytes) / (1 << 20),
      static_cast<double>(h.ownConstantBytes) / (1 << 20), static_cast<double>(h.largestRestBytes) / (1 << 20));
  text += "  inputs are padded with zeros up to the bucket and outputs sliced back; a mask input (0 = padding) keeps the "
          "padding out of the real positions, and `tessel run` checks the outputs against the unpadded reference\n";
  text += fmt::format("the largest bucket ({}):\n", buckets_.back().label());
  return text + buckets_.back().exe->report();
}

Status BucketSet::save(const std::string &path) const {
  if (!bucketed()) return buckets_.front().exe->save(path);
  ArtifactWriter writer;
  nlohmann::json header;
  TESSEL_ASSIGN_OR_RETURN(header["symbolic"], writer.placeModel(symbolic_));
  nlohmann::json dims = nlohmann::json::array();
  for (const DimBuckets &d : dims_) dims.push_back({{"dim", d.dim}, {"sizes", d.sizes}});
  header["dims"] = dims;
  header["outputDims"] = outputDims_;
  nlohmann::json buckets = nlohmann::json::array();
  for (const Bucket &bucket : buckets_) {
    TESSEL_ASSIGN_OR_RETURN(nlohmann::json exe, bucket.exe->describe(writer));
    buckets.push_back({{"sizes", bucket.sizes}, {"executable", std::move(exe)}});
  }
  header["buckets"] = buckets;
  return writer.write(path, kBucketMagic, header);
}

Expected<std::unique_ptr<BucketSet>> BucketSet::load(const std::string &path) {
  if (!isBucketedNcArtifact(path)) {
    TESSEL_ASSIGN_OR_RETURN(auto exe, loadNcArtifact(path));
    return std::unique_ptr<BucketSet>(new BucketSet(std::move(exe)));
  }
  TESSEL_ASSIGN_OR_RETURN(ArtifactReader reader, ArtifactReader::open(path, kBucketMagic, "a bucketed nc artifact"));
  auto set = std::unique_ptr<BucketSet>(new BucketSet());
  try {
    const nlohmann::json &header = reader.header();
    TESSEL_ASSIGN_OR_RETURN(set->symbolic_, reader.model(header.at("symbolic")));
    for (const nlohmann::json &d : header.at("dims"))
      set->dims_.push_back(DimBuckets{d.at("dim").get<std::string>(), d.at("sizes").get<std::vector<int64_t>>()});
    set->outputDims_ = header.at("outputDims").get<std::vector<std::vector<std::string>>>();
    for (const nlohmann::json &b : header.at("buckets")) {
      Bucket bucket;
      bucket.sizes = b.at("sizes").get<std::map<std::string, int64_t>>();
      TESSEL_ASSIGN_OR_RETURN(bucket.exe, NcExecutable::fromDescription(b.at("executable"), reader));
      set->buckets_.push_back(std::move(bucket));
    }
  } catch (const nlohmann::json::exception &e) {
    return makeFileError(ErrorCode::ParseError, path, "malformed header: {}", e.what());
  }
  size_t expected = 1;
  for (const DimBuckets &d : set->dims_) expected *= d.sizes.size();
  if (set->dims_.empty() || set->buckets_.size() != expected)
    return makeFileError(ErrorCode::ParseError, path, "the header lists {} buckets for {} sizes", set->buckets_.size(), expected);
  return set;
}

bool isBucketedNcArtifact(const std::string &path) { return hasMagic(path, kBucketMagic); }

}  // namespace tessel::nc::compiler
