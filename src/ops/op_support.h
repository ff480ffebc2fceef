// What a target says of the ops it does not lower: one row per op with the reason (the cpu's
// reference_ops.def, the accelerator's host_ops.def), and the check each target's test runs, that
// every op of the registry gets exactly one decision.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ops/registry.h"

namespace tessel {

/// An op a target does not lower, and why.
struct OpReason {
  std::string_view domain;  // "" for ai.onnx.
  std::string_view opType;
  std::string_view reason;
};

/// The reason `rows` give for (domain, opType) ("ai.onnx" is ""), or "" when they name no such op.
std::string_view findOpReason(std::span<const OpReason> rows, std::string_view domain, std::string_view opType);

/// What is wrong with a target's decisions, as "domain::Op" names: registered ops with no decision,
/// ops decided twice, rows that name no registered op, and rows given twice.
struct OpDecisionProblems {
  std::vector<std::string> undecided, decidedTwice, unknownRows, repeatedRows;

  bool empty() const { return undecided.empty() && decidedTwice.empty() && unknownRows.empty() && repeatedRows.empty(); }
  /// One line per kind of problem present, e.g. "no decision: Sin".
  std::string str() const;
};
/// Checks `rows` together with `decisions`, the number of the target's other decisions for an op
/// (its lowering, 0 or 1; nested plans...), over every op of the registry.
OpDecisionProblems checkOpDecisions(std::span<const OpReason> rows,
                                    const std::function<int(const OpInfo &op)> &decisions);

}  // namespace tessel
