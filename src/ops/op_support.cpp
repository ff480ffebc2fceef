// See op_support.h.
#include "ops/op_support.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tessel {

namespace {

std::string key(std::string_view domain, std::string_view op) {
  return fmt::format("{}{}{}", domain, domain.empty() ? "" : "::", op);
}

}  // namespace

std::string_view findOpReason(std::span<const OpReason> rows, std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx") domain = "";
  for (const OpReason &row : rows)
    if (row.domain == domain && row.opType == opType) return row.reason;
  return {};
}

std::string OpDecisionProblems::str() const {
  std::string text;
  for (const auto &[what, names] : {std::pair{"no decision", &undecided}, std::pair{"decided twice", &decidedTwice},
                                    std::pair{"rows naming no op", &unknownRows}, std::pair{"rows given twice", &repeatedRows}})
    if (!names->empty()) text += fmt::format("{}: {}\n", what, fmt::join(*names, ", "));
  return text;
}

OpDecisionProblems checkOpDecisions(std::span<const OpReason> rows,
                                    const std::function<int(const OpInfo &op)> &decisions) {
  OpDecisionProblems problems;
  std::set<std::string> seen;
  for (const OpInfo &op : allOps()) {
    if (!seen.insert(key(op.domain, op.name)).second) continue;  // One registry row per opset range.
    const int count = decisions(op) + !findOpReason(rows, op.domain, op.name).empty();
    if (count == 0) problems.undecided.push_back(key(op.domain, op.name));
    if (count > 1) problems.decidedTwice.push_back(key(op.domain, op.name));
  }
  std::set<std::string> given;
  for (const OpReason &row : rows) {
    if (!findOpAnyVersion(row.domain, row.opType) || row.reason.empty())
      problems.unknownRows.push_back(key(row.domain, row.opType));
    if (!given.insert(key(row.domain, row.opType)).second) problems.repeatedRows.push_back(key(row.domain, row.opType));
  }
  return problems;
}

}  // namespace tessel
