// Formatting of diagnostics and the internal-error path.
#include "support/diagnostic.h"

namespace tessel {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid-argument";
    case ErrorCode::ParseError: return "parse-error";
    case ErrorCode::InvalidModel: return "invalid-model";
    case ErrorCode::UnsupportedOp: return "unsupported-op";
    case ErrorCode::UnsupportedOpset: return "unsupported-opset";
    case ErrorCode::ShapeMismatch: return "shape-mismatch";
    case ErrorCode::TypeMismatch: return "type-mismatch";
    case ErrorCode::FileNotFound: return "file-not-found";
    case ErrorCode::IoError: return "io-error";
    case ErrorCode::RuntimeError: return "runtime-error";
    case ErrorCode::Internal: return "internal";
  }
  return "unknown";
}

std::string Diagnostic::str() const {
  std::string out;
  if (!loc.file.empty()) out += loc.file + ": ";
  if (!loc.node.empty() || !loc.opType.empty() || loc.nodeIndex >= 0) {
    out += fmt::format("node '{}'", loc.node);
    if (!loc.opType.empty() && loc.nodeIndex >= 0) {
      out += fmt::format(" ({}, #{})", loc.opType, loc.nodeIndex);
    } else if (!loc.opType.empty()) {
      out += fmt::format(" ({})", loc.opType);
    }
    out += ": ";
  }
  out += message;
  return out;
}

Status withLocation(Status status, const SourceLoc &loc) {
  if (status.ok()) return status;
  SourceLoc &target = status.diag().loc;
  if (target.file.empty()) target.file = loc.file;
  if (target.node.empty() && target.opType.empty() && target.nodeIndex < 0) {
    target.node = loc.node;
    target.opType = loc.opType;
    target.nodeIndex = loc.nodeIndex;
  }
  return status;
}

void reportInternalError(const char *file, int line, const char *condition, const std::string &context) {
  std::fprintf(stderr, "tessel: internal error at %s:%d: check '%s' failed%s%s\n", file, line, condition,
               context.empty() ? "" : ": ", context.c_str());
  std::abort();
}

}  // namespace tessel
