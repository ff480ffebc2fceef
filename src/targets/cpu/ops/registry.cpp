// The cpu lowering table, built from ops/cpu_ops.def.
#include <algorithm>

#include "targets/cpu/step.h"

namespace tessel::cpu {

#define CPU_OP(op, domain, fn) Expected<std::unique_ptr<Step>> fn(LowerContext &ctx);
#include "targets/cpu/ops/cpu_ops.def"
#undef CPU_OP

namespace {

struct LoweringRow {
  std::string_view domain;
  std::string_view opType;
  LowerFn lower;
};

constexpr LoweringRow kLowerings[] = {
#define CPU_OP(op, domain, fn) {domain, #op, &fn},
#include "targets/cpu/ops/cpu_ops.def"
#undef CPU_OP
    {"", "", nullptr},  // Keeps the table non-empty while families are added.
};

}  // namespace

LowerFn findLowering(std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx") domain = "";
  for (const LoweringRow &row : kLowerings) {
    if (row.lower && row.domain == domain && row.opType == opType) return row.lower;
  }
  return nullptr;
}

std::vector<int64_t> LowerContext::staticSizes(const Value &value) {
  auto sizes = value.type().shape().sizes();
  TESSEL_CHECK(value.type().isTensor() && sizes.has_value(), "value '{}' has no static shape at lowering",
               value.name());
  return *sizes;
}

}  // namespace tessel::cpu
