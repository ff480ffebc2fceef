// The registry table, built once from ops.def.
#include "ops/registry.h"

#include <algorithm>

namespace tessel {

// Declarations of every reference kernel named in the table; kernels live in tessel::ref.
namespace ref {
#define OP(name, domain, since, until, infer, reference) Status reference(KernelContext &ctx);
#include "ops/ops.def"
#undef OP
}  // namespace ref

// Declarations of the shape inference functions the table names (besides inferOnnx, which
// registry.h declares): those of ops ONNX's schemas do not know.
#define OP(name, domain, since, until, infer, reference) Status infer(Node &node, int64_t opset);
#include "ops/ops.def"
#undef OP

namespace {
std::vector<OpInfo> buildTable() {
  std::vector<OpInfo> table = {
#define OP(name, domain, since, until, infer, reference) {#name, domain, since, until, infer, ref::reference, TESSEL_FAMILY},
#include "ops/ops.def"
#undef OP
  };
  std::sort(table.begin(), table.end(), [](const OpInfo &a, const OpInfo &b) {
    return std::tie(a.domain, a.name, a.sinceVersion) < std::tie(b.domain, b.name, b.sinceVersion);
  });
  return table;
}

std::string_view canonicalDomain(std::string_view domain) { return domain == "ai.onnx" ? "" : domain; }
}  // namespace

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> table = buildTable();
  return table;
}

const OpInfo *findOp(std::string_view domain, std::string_view opType, int64_t opset) {
  domain = canonicalDomain(domain);
  for (const OpInfo &info : allOps()) {
    if (info.domain == domain && info.name == opType && opset >= info.sinceVersion && opset <= info.untilVersion) {
      return &info;
    }
  }
  return nullptr;
}

const OpInfo *findOpAnyVersion(std::string_view domain, std::string_view opType) {
  domain = canonicalDomain(domain);
  for (const OpInfo &info : allOps()) {
    if (info.domain == domain && info.name == opType) return &info;
  }
  return nullptr;
}

}  // namespace tessel
