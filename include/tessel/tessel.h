// tessel's public C++ API: load an ONNX model, compile it for a target, run it, save and load the
// artifact. This header is the whole surface: it names no internal type, needs nothing but the
// standard library, and links as tessel::tessel (find_package(tessel)).
//
//   namespace ts = tessel::api;
//   ts::Result<ts::Model> model = ts::Model::load("model.onnx");
//   ts::Result<ts::Executable> exe = ts::compile(*model, "cpu");
//   ts::Result<std::vector<ts::NamedTensor>> out = exe->run({{"x", ts::Tensor::copyOf(x)}});
//   if (!out.ok()) std::cerr << out.status().str() << "\n";   // "model.onnx: node 'conv1' (Conv, #3): ..."
//
// Errors are values: every call that can fail returns a Status or a Result<T>, never throws.
// Targets are reached by name (targets() lists them): "ref" (the reference interpreter), "cpu"
// (the host), "nc-v2" and "nc-v3" (the accelerator, simulated), or the path of an accelerator
// machine profile (.json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#define TESSEL_API __attribute__((visibility("default")))

namespace tessel::api {

// ----- Errors -----

enum class ErrorCode {
  Ok,
  InvalidArgument,   // A bad option, feed or attribute value.
  ParseError,        // A file could not be parsed.
  InvalidModel,      // The model is structurally wrong.
  UnsupportedOp,     // An op (at the model's opset) that tessel does not have.
  UnsupportedOpset,  // An opset outside the supported range.
  ShapeMismatch,     // A feed or tensor whose shape does not match.
  TypeMismatch,      // A feed or tensor whose dtype does not match.
  FileNotFound,
  IoError,
  RuntimeError,  // Found only while running.
  Internal,      // A bug in tessel.
};

/// Success, or an error that says what went wrong and where: the file, the node and its op.
class TESSEL_API Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, std::string file = {}, std::string node = {}, std::string op = {});
  bool ok() const { return code_ == ErrorCode::Ok; }
  ErrorCode code() const { return code_; }
  /// The stable lower-case name of the code, e.g. "invalid-model".
  const char *codeName() const;
  const std::string &message() const { return message_; }  // Without the location.
  const std::string &file() const { return file_; }
  const std::string &node() const { return node_; }
  const std::string &op() const { return op_; }
  /// "file: node 'conv1' (Conv): message", as the command-line tool prints it.
  std::string str() const;

 private:
  ErrorCode code_ = ErrorCode::Ok;
  std::string message_, file_, node_, op_;
};

/// A value or the Status of why there is none.
template <class T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}           // NOLINT: implicit by design.
  Result(Status status) : state_(std::move(status)) {}    // NOLINT: must not be ok().
  bool ok() const { return std::holds_alternative<T>(state_); }
  /// The error; an ok Status when there is a value.
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }
  T &value() & { return std::get<T>(state_); }
  const T &value() const & { return std::get<T>(state_); }
  T &&value() && { return std::get<T>(std::move(state_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

// ----- Tensors -----

/// Element types, numbered as ONNX numbers them.
enum class DType : uint8_t {
  Undefined = 0, Float32 = 1, UInt8 = 2, Int8 = 3, UInt16 = 4, Int16 = 5, Int32 = 6, Int64 = 7, String = 8,
  Bool = 9, Float16 = 10, Float64 = 11, UInt32 = 12, UInt64 = 13, Complex64 = 14, Complex128 = 15, BFloat16 = 16,
  Float8E4M3FN = 17, Float8E4M3FNUZ = 18, Float8E5M2 = 19, Float8E5M2FNUZ = 20,
};
/// "float32", "int64", "bfloat16", ... (numpy's spelling where numpy has the type).
TESSEL_API const char *dtypeName(DType dtype);
/// Bytes per element; 0 for String and Undefined.
TESSEL_API size_t dtypeSize(DType dtype);

/// A dense, row-major tensor. It either owns its memory or borrows the caller's: borrow() makes no
/// copy, and the tensor keeps `owner` alive as long as it (or any result that views it) lives.
/// Copies of a Tensor share the memory. String tensors are not supported.
class TESSEL_API Tensor {
 public:
  Tensor() = default;
  /// Zero-filled.
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  /// A copy of `data` (numel(shape) * dtypeSize(dtype) bytes).
  static Tensor copyOf(DType dtype, std::vector<int64_t> shape, const void *data);
  template <class T>
  static Tensor copyOf(std::vector<int64_t> shape, const std::vector<T> &values);
  /// No copy: the tensor views `data`; `owner` (may be null) is held as long as the view lives.
  static Tensor borrow(DType dtype, std::vector<int64_t> shape, void *data, std::shared_ptr<void> owner = {});

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * dtypeSize(dtype_); }
  void *data() { return data_; }
  const void *data() const { return data_; }
  template <class T>
  T *data() { return static_cast<T *>(data_); }
  template <class T>
  const T *data() const { return static_cast<const T *>(data_); }
  /// What holds the memory (shared with every copy of this tensor).
  const std::shared_ptr<void> &owner() const { return owner_; }

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> shape_;
  void *data_ = nullptr;
  std::shared_ptr<void> owner_;
};

using NamedTensor = std::pair<std::string, Tensor>;

/// One dim of a declared shape: a size, or a symbol ("batch", "S") when the model leaves it open.
struct Dim {
  int64_t size = -1;   // -1 when symbolic or unknown.
  std::string symbol;  // Empty when static or unknown.
  bool isStatic() const { return size >= 0; }
};

/// A graph input or output as the model declares it.
struct TensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<Dim> shape;
  bool rankKnown = true;
};

// ----- Models -----

/// An imported ONNX model (validated, opset checked). Copies share the imported graph.
class TESSEL_API Model {
 public:
  static Result<Model> load(const std::string &path);
  /// `name` stands for the file in error messages.
  static Result<Model> fromBytes(std::string_view bytes, const std::string &name = "<bytes>");

  const std::string &path() const;
  /// The inputs a caller feeds (initializers left out) and the outputs a run returns.
  const std::vector<TensorInfo> &inputs() const;
  const std::vector<TensorInfo> &outputs() const;
  /// Nodes, counted before optimization.
  int64_t nodeCount() const;

  struct Impl;
  const Impl &impl() const { return *impl_; }

 private:
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// ----- Compiling and running -----

struct CompileOptions {
  int optLevel = 3;  // 0-3: the graph pass pipeline.
  int threads = 0;   // cpu: threads per run (0 = all hardware threads).
  /// Sizes for inputs with symbolic dims (name -> sizes); `batch` (> 0) fills a symbolic leading dim.
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t batch = 0;
  /// cpu: dims left symbolic stay so (one executable plans each shape on first use); these bound
  /// them (dim name -> {lo, hi}), checked at every run. Unbounded unless given.
  std::map<std::string, std::pair<int64_t, int64_t>> dimRanges;
  /// none, matmul (matmul/conv operands) or all (accelerators: activations too); "" is the target's
  /// default: matmul on accelerators, none on cpu (where matmul and all both cast the operands of
  /// matmul and convolution products to bf16, sums in float32).
  std::string autoCast;
  std::string autoCastType = "bf16";  // bf16 (cpu: the only one), fp16 or fp8_e4m3.
  // Accelerator targets:
  int cores = 1;                      // Cores of the chip to shard the model over.
  /// Symbolic dims to compile at fixed sizes (dim name -> sizes), one program set per size in one
  /// executable; a run takes the smallest that holds its feeds, zero-padded, outputs sliced back.
  std::map<std::string, std::vector<int64_t>> buckets;
};

/// The figures of the last run.
struct RunSummary {
  bool simulated = false;     // The device time is simulated (accelerator targets), not measured.
  double latencyUs = 0;       // Wall time on this host; accelerator targets: device + transfers + host.
  double deviceUs = 0;        // Simulated device time (accelerator targets).
  double hostUs = 0;          // Accelerator targets: the host stages' time, measured on this host.
  double transferUs = 0;      // Accelerator targets: host <-> device transfers, from the profile's link model.
  double mfuPercent = 0;      // Model FLOPs over the devices' peak (accelerator targets).
  std::string boundingEngine; // The engine the longest program waits on, with its active share.
  int deviceNodes = 0, hostNodes = 0;  // Where the nodes ran (accelerator targets).
  std::vector<std::string> fallbacks;  // Why each host node is not on the device.
  std::string bucket;         // Compiled with buckets: the one the run took ("S=128").
  double paddingWaste = 0;    // The share of its padded inputs' elements that were padding.
};

/// One op's share of the runs since profiling was turned on (targets that run natively).
struct OpProfile {
  std::string node, op, kernel;
  double totalMs = 0;
  int64_t runs = 0;
};

/// A model compiled for one target. Copies share it. run() may be called from several threads at
/// once; runs of one executable take turns (it has one activation arena), so for throughput across
/// threads compile one executable per thread.
class TESSEL_API Executable {
 public:
  /// Runs the model. Feeds are matched by name; an input with an initializer may be left out.
  /// Outputs come in the model's order.
  Result<std::vector<NamedTensor>> run(const std::vector<NamedTensor> &feeds) const;

  const std::string &target() const;
  const std::vector<TensorInfo> &inputs() const;
  const std::vector<TensorInfo> &outputs() const;

  /// Writes the artifact (cpu and accelerator targets); load() reads it back.
  Status save(const std::string &path) const;
  /// The compile report: kernels per op and fallbacks (cpu), stages, transfers, memory (accelerator).
  std::string report() const;

  RunSummary lastRun() const;
  /// Per-op timing (cpu): turned on by setProfiling(true), read by opProfile().
  void setProfiling(bool on) const;
  std::vector<OpProfile> opProfile() const;
  /// Accelerator targets: simulates the timing of one run on seeded inputs and returns its trace
  /// (Perfetto JSON, one program per device stage and core), or writes trace.json, the summary and
  /// the HTML report to `dir` (one folder per program when there are several).
  Result<std::string> timeline() const;
  Status profile(const std::string &dir) const;

  struct Impl;

 private:
  friend TESSEL_API Result<Executable> compile(const Model &, const std::string &, const CompileOptions &);
  friend TESSEL_API Result<Executable> load(const std::string &, const CompileOptions &);
  explicit Executable(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

/// The names compile() takes ("ref", "cpu", "nc-v2", "nc-v3"); a profile path (.json) also works.
TESSEL_API std::vector<std::string> targets();

/// Compiles `model` for `target`. The model's symbolic dims take their sizes from options.shapes
/// and options.batch, else 1 for the accelerator; the ref and cpu targets plan each new set of feed
/// shapes on first use.
TESSEL_API Result<Executable> compile(const Model &model, const std::string &target, const CompileOptions &options = {});

/// Loads an artifact written by Executable::save; its target is read from the file. Of `options`
/// only threads applies.
TESSEL_API Result<Executable> load(const std::string &path, const CompileOptions &options = {});

/// The library's version, "major.minor.patch".
TESSEL_API const char *version();

// ----- The accelerator's kernel library -----

namespace nc {

struct KernelInfo {
  std::string name, summary;
  std::vector<std::string> dims, dtypes;
};
TESSEL_API std::vector<KernelInfo> kernels();

struct KernelRunOptions {
  std::string target = "nc-v2";                // nc-v2, nc-v3 or a profile path.
  std::map<std::string, int64_t> shape;        // Dim sizes, e.g. {{"M", 512}, {"N", 1024}}; defaults fill the rest.
  std::string dtype;                           // Default: the kernel's first.
  std::map<std::string, std::string> options;  // Kernel options, e.g. {{"act", "gelu"}}.
  bool timingOnly = false;                     // Simulate the timing only: no numerics, no check.
  uint64_t seed = 1;
  std::string profileDir;                      // When set, the trace, summary and report go there.
};

struct KernelRunResult {
  double latencyUs = 0, estimatedUs = 0;  // Simulated, and the scheduler's estimate.
  double mfuPercent = 0;                  // 0 when the kernel's FLOPs are not known.
  std::string boundingEngine;
  int64_t instructions = 0;
  bool checked = false, passed = false;   // Compared with the reference (not with timingOnly).
  double maxAbsError = 0, maxErrorRatio = 0;
  int64_t races = 0;
  std::string summary;                    // The profile summary as `tessel kernel run` prints it.
};

/// Runs a library kernel on seeded random inputs in the simulator and checks it against the reference.
TESSEL_API Result<KernelRunResult> kernelRun(const std::string &kernel, const KernelRunOptions &options = {});

}  // namespace nc

// ----- Inline definitions -----

template <class T>
Tensor Tensor::copyOf(std::vector<int64_t> shape, const std::vector<T> &values) {
  constexpr DType dtype = std::is_same_v<T, float>     ? DType::Float32
                          : std::is_same_v<T, double>  ? DType::Float64
                          : std::is_same_v<T, int64_t> ? DType::Int64
                          : std::is_same_v<T, int32_t> ? DType::Int32
                          : std::is_same_v<T, int8_t>  ? DType::Int8
                          : std::is_same_v<T, uint8_t> ? DType::UInt8
                                                       : DType::Undefined;
  static_assert(dtype != DType::Undefined, "Tensor::copyOf<T>: T is float, double, int64_t, int32_t, int8_t or uint8_t");
  return copyOf(dtype, std::move(shape), values.data());
}

}  // namespace tessel::api
