// Errors that carry a location. Everything a user can feed in (a model, an input, a flag) reports
// problems as a Diagnostic naming the file, node and op; library code never throws across its
// boundary and never exits. A broken internal invariant is TESSEL_CHECK, which aborts with context.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace tessel {

/// What kind of failure a Diagnostic reports; stable, tests match on it.
enum class ErrorCode {
  InvalidArgument,   // A flag, an input or an attribute has a bad value.
  ParseError,        // A file could not be parsed (protobuf, text IR, .npy).
  InvalidModel,      // The model is structurally wrong: dangling names, cycles, bad tensors.
  UnsupportedOp,     // No registry entry (or no kernel) for this op at this opset.
  UnsupportedOpset,  // The model imports an opset version outside the supported range.
  ShapeMismatch,     // A shape does not match what an op or the graph requires.
  TypeMismatch,      // A dtype does not match what an op or the graph requires.
  FileNotFound,      // A file named by the user or the model does not exist.
  IoError,           // Reading or writing a file failed.
  RuntimeError,      // Execution failed for a reason found only at run time.
  Internal,          // A bug in tessel.
};

/// Returns the stable lower-case name of an error code, e.g. "invalid-model".
const char *errorCodeName(ErrorCode code);

/// Where in the user's model a problem is: the file, and the ONNX node by name, op and index.
struct SourceLoc {
  std::string file;
  std::string node;
  std::string opType;
  int nodeIndex = -1;

  /// A location naming only a file.
  static SourceLoc inFile(std::string path) { return SourceLoc{std::move(path), "", "", -1}; }
  bool empty() const { return file.empty() && node.empty() && opType.empty() && nodeIndex < 0; }
};

/// One error: a code, a message saying what/why/got-vs-expected, and where.
struct Diagnostic {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
  SourceLoc loc;

  /// Formats as "file: node 'conv1' (Conv, #17): message".
  std::string str() const;
};

/// Success, or a Diagnostic. Must be looked at.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Diagnostic diag) : diag_(std::move(diag)) {}  // NOLINT: implicit by design.
  static Status success() { return Status(); }

  bool ok() const { return !diag_.has_value(); }
  const Diagnostic &diag() const { return *diag_; }
  Diagnostic &diag() { return *diag_; }
  std::string str() const { return ok() ? "ok" : diag_->str(); }

 private:
  std::optional<Diagnostic> diag_;
};

/// A T, or a Diagnostic. Must be looked at.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}           // NOLINT: implicit by design.
  Expected(Diagnostic diag) : state_(std::move(diag)) {}    // NOLINT
  Expected(Status status) : state_(std::move(status.diag())) {}  // Precondition: !status.ok().

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  T &value() & { return std::get<T>(state_); }
  const T &value() const & { return std::get<T>(state_); }
  T &&value() && { return std::get<T>(std::move(state_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  const Diagnostic &diag() const { return std::get<Diagnostic>(state_); }
  Diagnostic &diag() { return std::get<Diagnostic>(state_); }
  Status status() const { return ok() ? Status() : Status(diag()); }

 private:
  std::variant<T, Diagnostic> state_;
};

/// Builds a Diagnostic with a formatted message and no location.
template <class... Args>
Diagnostic makeError(ErrorCode code, fmt::format_string<Args...> format, Args &&...args) {
  return Diagnostic{code, fmt::format(format, std::forward<Args>(args)...), {}};
}

/// Builds a Diagnostic located in `file` (no node), e.g. for a file that cannot be parsed.
template <class... Args>
Diagnostic makeFileError(ErrorCode code, const std::string &file, fmt::format_string<Args...> format, Args &&...args) {
  Diagnostic diag = makeError(code, format, std::forward<Args>(args)...);
  diag.loc.file = file;
  return diag;
}

/// Fills in the location fields of `status` that are still empty.
Status withLocation(Status status, const SourceLoc &loc);

[[noreturn]] void reportInternalError(const char *file, int line, const char *condition,
                                      const std::string &context);

}  // namespace tessel

#define TESSEL_CONCAT_INNER(a, b) a##b
#define TESSEL_CONCAT(a, b) TESSEL_CONCAT_INNER(a, b)

/// Returns the Status of `expr` from the enclosing function when it is an error.
#define TESSEL_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::tessel::Status tesselStatus_ = (expr);          \
    if (!tesselStatus_.ok()) return tesselStatus_.diag(); \
  } while (0)

#define TESSEL_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp.diag());        \
  decl = std::move(tmp).value()

/// `TESSEL_ASSIGN_OR_RETURN(Shape s, infer(node));` declares s from an Expected or returns its error.
#define TESSEL_ASSIGN_OR_RETURN(decl, expr) \
  TESSEL_ASSIGN_OR_RETURN_IMPL(TESSEL_CONCAT(tesselExpected_, __LINE__), decl, expr)

/// A compiler invariant. Never for bad input: that is a Diagnostic.
#define TESSEL_CHECK(cond, ...)                                                          \
  do {                                                                                   \
    if (!(cond)) ::tessel::reportInternalError(__FILE__, __LINE__, #cond, fmt::format("" __VA_ARGS__)); \
  } while (0)
