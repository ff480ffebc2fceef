// The public API (include/tessel/tessel.h) over sessions and the target registry. Tensors cross
// without copies: a fed tensor becomes an internal tensor viewing the caller's memory, and an
// output hands its internal storage to the caller.
#include "tessel/tessel.h"

#include <cstring>
#include <mutex>

#include "frontend/onnx/importer.h"
#include "ir/clone.h"
#include "ir/specialize.h"
#include "runtime/random_inputs.h"
#include "runtime/session.h"
#include "runtime/target_registry.h"

namespace tessel::api {

// ----- Errors -----

Status::Status(ErrorCode code, std::string message, std::string file, std::string node, std::string op)
    : code_(code), message_(std::move(message)), file_(std::move(file)), node_(std::move(node)), op_(std::move(op)) {}

namespace {

ErrorCode toApi(tessel::ErrorCode code) {
  switch (code) {
    case tessel::ErrorCode::InvalidArgument: return ErrorCode::InvalidArgument;
    case tessel::ErrorCode::ParseError: return ErrorCode::ParseError;
    case tessel::ErrorCode::InvalidModel: return ErrorCode::InvalidModel;
    case tessel::ErrorCode::UnsupportedOp: return ErrorCode::UnsupportedOp;
    case tessel::ErrorCode::UnsupportedOpset: return ErrorCode::UnsupportedOpset;
    case tessel::ErrorCode::ShapeMismatch: return ErrorCode::ShapeMismatch;
    case tessel::ErrorCode::TypeMismatch: return ErrorCode::TypeMismatch;
    case tessel::ErrorCode::FileNotFound: return ErrorCode::FileNotFound;
    case tessel::ErrorCode::IoError: return ErrorCode::IoError;
    case tessel::ErrorCode::RuntimeError: return ErrorCode::RuntimeError;
    case tessel::ErrorCode::Internal: return ErrorCode::Internal;
  }
  return ErrorCode::Internal;
}

Diagnostic toInternal(const Status &status) {
  Diagnostic diag;
  for (int c = 0; c <= static_cast<int>(tessel::ErrorCode::Internal); ++c)
    if (toApi(static_cast<tessel::ErrorCode>(c)) == status.code()) diag.code = static_cast<tessel::ErrorCode>(c);
  diag.message = status.message();
  diag.loc = {status.file(), status.node(), status.op(), -1};
  return diag;
}

Status toApi(const Diagnostic &diag) {
  return Status(toApi(diag.code), diag.message, diag.loc.file, diag.loc.node, diag.loc.opType);
}

Status invalid(std::string message) { return Status(ErrorCode::InvalidArgument, std::move(message)); }

}  // namespace

const char *Status::codeName() const { return ok() ? "ok" : errorCodeName(toInternal(*this).code); }

std::string Status::str() const { return ok() ? "ok" : toInternal(*this).str(); }

// ----- Tensors -----

const char *dtypeName(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float64: return "float64";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Bool: return "bool";
    case DType::String: return "string";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::Float8E4M3FN: return "float8_e4m3fn";
    case DType::Float8E4M3FNUZ: return "float8_e4m3fnuz";
    case DType::Float8E5M2: return "float8_e5m2";
    case DType::Float8E5M2FNUZ: return "float8_e5m2fnuz";
    case DType::Undefined: break;
  }
  return "undefined";
}

size_t dtypeSize(DType dtype) { return tessel::dtypeSize(static_cast<tessel::DType>(dtype)); }

int64_t Tensor::numel() const { return numElements(shape_); }

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  auto storage = allocateStorage(static_cast<size_t>(numElements(shape)) * dtypeSize(dtype));
  void *data = storage->data();
  return borrow(dtype, std::move(shape), data, std::move(storage));
}

Tensor Tensor::copyOf(DType dtype, std::vector<int64_t> shape, const void *data) {
  Tensor t = zeros(dtype, std::move(shape));
  if (t.bytes() > 0) std::memcpy(t.data(), data, t.bytes());
  return t;
}

Tensor Tensor::borrow(DType dtype, std::vector<int64_t> shape, void *data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.owner_ = std::move(owner);
  return t;
}

namespace {

/// Storage that views an api::Tensor's memory and keeps its owner alive.
class BorrowedStorage final : public Storage {
 public:
  BorrowedStorage(std::shared_ptr<void> owner, void *data, size_t bytes)
      : owner_(std::move(owner)), data_(static_cast<uint8_t *>(data)), bytes_(bytes) {}
  uint8_t *data() override { return data_; }
  size_t sizeBytes() const override { return bytes_; }

 private:
  std::shared_ptr<void> owner_;
  uint8_t *data_;
  size_t bytes_;
};

Result<tessel::Tensor> toInternal(const std::string &name, const Tensor &t) {
  if (t.dtype() == DType::String || t.dtype() == DType::Undefined)
    return invalid(fmt::format("feed '{}': {} tensors cannot be fed through the API", name, dtypeName(t.dtype())));
  for (int64_t d : t.shape())
    if (d < 0) return invalid(fmt::format("feed '{}': negative size {} in its shape", name, d));
  if (t.bytes() > 0 && t.data() == nullptr) return invalid(fmt::format("feed '{}': no data", name));
  // Storage never writes through a view it was fed, so the const cast is only for its interface.
  auto storage = std::make_shared<BorrowedStorage>(t.owner(), const_cast<void *>(t.data()), t.bytes());
  return tessel::Tensor(static_cast<tessel::DType>(t.dtype()), t.shape(), std::move(storage));
}

Result<Tensor> toApi(const std::string &name, const RuntimeValue &value) {
  if (!value.isTensor())
    return Status(ErrorCode::TypeMismatch,
                  fmt::format("output '{}' is {}; the API returns tensors only", name, value.describe()));
  tessel::Tensor t = value.tensor();
  if (t.dtype() == tessel::DType::String)
    return Status(ErrorCode::TypeMismatch, fmt::format("output '{}' is a string tensor; the API returns numeric tensors", name));
  std::shared_ptr<void> owner = t.storage();
  return Tensor::borrow(static_cast<DType>(t.dtype()), t.sizes(), t.rawData(), std::move(owner));
}

std::vector<TensorInfo> describe(const std::vector<Value *> &values, bool skipInitialized) {
  std::vector<TensorInfo> infos;
  for (const Value *v : values) {
    if (skipInitialized && v->hasInitializer()) continue;
    TensorInfo info;
    info.name = v->name();
    const Type &type = v->type();
    if (type.isTensor()) {
      info.dtype = static_cast<DType>(type.dtype());
      info.rankKnown = type.shape().rankKnown();
      if (info.rankKnown)
        for (const tessel::Dim &d : type.shape().dims()) info.shape.push_back(d.isStatic() ? Dim{d.size, ""} : Dim{-1, d.symbol});
    } else {
      info.rankKnown = false;
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace

// ----- Models -----

struct Model::Impl {
  tessel::Model model;  // As imported; compile() works on copies.
  std::string path;
  std::vector<TensorInfo> inputs, outputs;
};

namespace {

Model::Impl describeModel(tessel::Model model, std::string path) {
  Model::Impl impl;
  impl.inputs = describe(model.graph->inputs(), true);
  impl.outputs = describe(model.graph->outputs(), false);
  impl.model = std::move(model);
  impl.path = std::move(path);
  return impl;
}

}  // namespace

Result<Model> Model::load(const std::string &path) {
  auto model = importOnnxFile(path);
  if (!model.ok()) return toApi(model.diag());
  return Model(std::make_shared<const Impl>(describeModel(std::move(*model), path)));
}

Result<Model> Model::fromBytes(std::string_view bytes, const std::string &name) {
  auto model = importOnnxBytes(std::string(bytes), name);
  if (!model.ok()) return toApi(model.diag());
  model->sourcePath = name;
  return Model(std::make_shared<const Impl>(describeModel(std::move(*model), name)));
}

const std::string &Model::path() const { return impl_->path; }
const std::vector<TensorInfo> &Model::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo> &Model::outputs() const { return impl_->outputs; }
int64_t Model::nodeCount() const { return static_cast<int64_t>(impl_->model.graph->nodes().size()); }

// ----- Executables -----

struct Executable::Impl {
  mutable std::mutex mutex;  // A session is not re-entrant: runs take turns.
  std::unique_ptr<Session> session;
  std::string target;
  std::vector<TensorInfo> inputs, outputs;
  RunFigures figures;
};

namespace {

std::shared_ptr<Executable::Impl> makeImpl(std::unique_ptr<Session> session) {
  auto impl = std::make_shared<Executable::Impl>();
  impl->target = session->target();
  // A plan made now knows every size (its outputs' too); otherwise the model as imported says.
  const Graph &graph = session->lastCompiled() ? *session->lastCompiled()->model().graph : *session->model().graph;
  impl->inputs = describe(graph.inputs(), true);
  impl->outputs = describe(graph.outputs(), false);
  impl->session = std::move(session);
  return impl;
}

/// The input sizes when every one is known, for a plan made now.
std::optional<std::vector<std::pair<std::string, std::vector<int64_t>>>> staticSizes(const Graph &graph) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
  for (const Value *input : graph.inputs()) {
    if (input->hasInitializer()) continue;
    const Type &type = input->type();
    if (!type.isTensor() || !type.shape().isStatic()) return std::nullopt;
    sizes.emplace_back(input->name(), *type.shape().sizes());
  }
  return sizes;
}

}  // namespace

Result<Executable> compile(const Model &model, const std::string &target, const CompileOptions &options) {
  if (options.optLevel < 0 || options.optLevel > 3) return invalid(fmt::format("optLevel {}: expected 0 to 3", options.optLevel));
  if (options.cores < 1) return invalid(fmt::format("cores {}: expected at least 1", options.cores));
  tessel::Model copy = model.impl().model;
  if (!options.shapes.empty() || options.batch > 0) {
    // Specializing rewrites the graph's input types: give it its own copy.
    copy = cloneModel(copy);
    std::vector<std::pair<std::string, std::vector<int64_t>>> sizes(options.shapes.begin(), options.shapes.end());
    if (Status s = [&] {
          tessel::Status specialized = specializeInputs(copy, sizes, options.batch);
          return specialized.ok() ? Status() : toApi(specialized.diag());
        }();
        !s.ok())
      return s;
  }
  SessionOptions sessionOptions;
  sessionOptions.optLevel = options.optLevel;
  sessionOptions.threads = options.threads;
  sessionOptions.target.autoCast = options.autoCast;
  sessionOptions.target.autoCastType = options.autoCastType;
  sessionOptions.target.cores = options.cores;
  for (const auto &[name, range] : options.dimRanges) sessionOptions.target.dimRanges[name] = DimRange{range.first, range.second};
  for (const auto &[dim, sizes] : options.buckets) {
    std::string spec = dim + "=";
    for (size_t i = 0; i < sizes.size(); ++i) spec += (i ? "," : "") + std::to_string(sizes[i]);
    auto buckets = parseBuckets(spec);
    if (!buckets.ok()) return toApi(buckets.diag());
    sessionOptions.target.buckets.push_back(std::move(*buckets));
  }
  auto staticInputs = staticSizes(*copy.graph);
  auto session = Session::create(std::move(copy), target, sessionOptions);
  if (!session.ok()) return toApi(session.diag());
  // With every size known, or on a target that serves every shape from one plan (cpu), compile
  // now, so errors show here and save() and report() have a plan.
  if (staticInputs || (*session)->servesEveryShape()) {
    auto compiled = (*session)->compiledFor(staticInputs ? *staticInputs : InputSizes{});
    if (!compiled.ok()) return toApi(compiled.diag());
  }
  return Executable(makeImpl(std::move(*session)));
}

Result<Executable> load(const std::string &path, const CompileOptions &options) {
  if (!isArtifact(path)) {
    return Status(ErrorCode::ParseError, "not a tessel artifact (Executable::save writes them; Model::load reads ONNX)", path);
  }
  SessionOptions sessionOptions;
  sessionOptions.threads = options.threads;
  auto session = Session::load(path, "", sessionOptions);
  if (!session.ok()) return toApi(session.diag());
  return Executable(makeImpl(std::move(*session)));
}

std::vector<std::string> targets() { return targetNames(); }

const char *version() { return TESSEL_VERSION; }

Result<std::vector<NamedTensor>> Executable::run(const std::vector<NamedTensor> &feeds) const {
  NamedValues internal;
  internal.reserve(feeds.size());
  for (const auto &[name, tensor] : feeds) {
    Result<tessel::Tensor> t = toInternal(name, tensor);
    if (!t.ok()) return t.status();
    internal.emplace_back(name, RuntimeValue(std::move(*t)));
  }
  Impl &impl = *impl_;
  NamedValues outputs;
  {
    std::lock_guard lock(impl.mutex);
    auto ran = impl.session->run(internal);
    if (!ran.ok()) return toApi(ran.diag());
    outputs = std::move(*ran);
    impl.figures = impl.session->lastCompiled()->lastRun();
  }
  std::vector<NamedTensor> result;
  result.reserve(outputs.size());
  for (const auto &[name, value] : outputs) {
    Result<Tensor> t = toApi(name, value);
    if (!t.ok()) return t.status();
    result.emplace_back(name, std::move(*t));
  }
  return result;
}

const std::string &Executable::target() const { return impl_->target; }
const std::vector<TensorInfo> &Executable::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo> &Executable::outputs() const { return impl_->outputs; }

namespace {

/// The plan a whole-executable call (save, report, profile) acts on: the only one there is.
Result<CompiledModel *> onlyPlan(const Session &session, const char *what) {
  if (session.planCount() == 0 || !session.lastCompiled()) {
    return invalid(fmt::format("{}: nothing is compiled yet: the model's input sizes are symbolic; give them in "
                               "CompileOptions::shapes, or run it once",
                               what));
  }
  if (session.planCount() > 1) {
    return invalid(fmt::format("{}: the executable holds {} plans, one per set of input shapes it has run; give the "
                               "shapes in CompileOptions::shapes to make one",
                               what, session.planCount()));
  }
  return session.lastCompiled();
}

}  // namespace

Status Executable::save(const std::string &path) const {
  std::lock_guard lock(impl_->mutex);
  Result<CompiledModel *> plan = onlyPlan(*impl_->session, "save");
  if (!plan.ok()) return plan.status();
  tessel::Status saved = (*plan)->save(path);
  return saved.ok() ? Status() : toApi(saved.diag());
}

std::string Executable::report() const {
  std::lock_guard lock(impl_->mutex);
  Result<CompiledModel *> plan = onlyPlan(*impl_->session, "report");
  return plan.ok() ? (*plan)->report() : plan.status().message() + "\n";
}

RunSummary Executable::lastRun() const {
  std::lock_guard lock(impl_->mutex);
  const RunFigures &f = impl_->figures;
  return RunSummary{f.simulated, f.latencyUs, f.deviceUs,  f.hostUs,    f.transferUs, f.mfuPercent, f.boundingEngine,
                    f.deviceNodes, f.hostNodes, f.fallbacks, f.bucket, f.paddingWaste};
}

void Executable::setProfiling(bool on) const {
  std::lock_guard lock(impl_->mutex);
  if (CompiledModel *plan = impl_->session->lastCompiled()) plan->setProfiling(on);
}

std::vector<OpProfile> Executable::opProfile() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<OpProfile> rows;
  if (CompiledModel *plan = impl_->session->lastCompiled())
    for (const OpTime &t : plan->opProfile()) rows.push_back({t.node, t.opType, t.kernel, t.totalMs, t.runs});
  return rows;
}

Result<std::string> Executable::timeline() const {
  std::lock_guard lock(impl_->mutex);
  Result<CompiledModel *> plan = onlyPlan(*impl_->session, "timeline");
  if (!plan.ok()) return plan.status();
  auto feeds = completeFeeds(*(*plan)->model().graph, {}, {}, 0);
  if (!feeds.ok()) return toApi(feeds.diag());
  auto traces = (*plan)->traces(*feeds);
  if (!traces.ok()) return toApi(traces.diag());
  impl_->figures = (*plan)->lastRun();
  if (traces->size() == 1) return std::move(traces->front());
  // Several programs: one JSON array of their traces, in program order.
  std::string all = "[";
  for (size_t i = 0; i < traces->size(); ++i) all += (i ? ",\n" : "") + (*traces)[i];
  return all + "]";
}

Status Executable::profile(const std::string &dir) const {
  std::lock_guard lock(impl_->mutex);
  Result<CompiledModel *> plan = onlyPlan(*impl_->session, "profile");
  if (!plan.ok()) return plan.status();
  auto feeds = completeFeeds(*(*plan)->model().graph, {}, {}, 0);
  if (!feeds.ok()) return toApi(feeds.diag());
  auto written = (*plan)->writeProfile(*feeds, dir);
  impl_->figures = (*plan)->lastRun();
  return written.ok() ? Status() : toApi(written.diag());
}

}  // namespace tessel::api
