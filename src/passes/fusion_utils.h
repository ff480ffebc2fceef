// Helpers shared by the fusion and pattern-recognition passes: matching ops and constants,
// checking that a matched value is read only inside the pattern, and replacing a matched pattern
// by one new node that keeps the name and type of the value it computes.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel::passes {

/// The opset version of the fused ops' domain.
constexpr int64_t kTesselOpsetVersion = 1;

/// Whether `node` is the ONNX op `op` (default domain).
bool isOnnxOp(const Node *node, std::string_view op);
/// Whether `node` is tessel's fused op `op` (domain "tessel").
bool isTesselOp(const Node *node, std::string_view op);
/// The producer of `value` when it is the ONNX op `op`, else nullptr.
Node *producerIs(const Value *value, std::string_view op);
/// The only reader of `value` when it has exactly one use and is not a graph output, else nullptr.
Node *singleUser(const Graph &graph, const Value *value);
/// Whether every reader of `value` is in `pattern` and it is not a graph output (nor returned by a
/// subgraph, which `returned` lists).
bool usedOnlyBy(const Graph &graph, const Value *value, const std::unordered_set<const Node *> &pattern,
                const std::unordered_set<const Value *> &returned);

/// The value of a one-element floating-point constant, of any rank.
std::optional<double> scalarConstant(const Model &model, const Value *value);
/// Whether `value` is a one-element constant within `relTol` of `expected` (relative).
bool isScalarConstant(const Model &model, const Value *value, double expected, double relTol = 1e-4);

/// For a binary node, the index (0 or 1) of the input that is a scalar constant, or -1.
int scalarConstantOperand(const Model &model, const Node &node);

/// The static sizes of `value`'s type, when fully known.
std::optional<std::vector<int64_t>> staticSizes(const Value *value);
/// Whether two values have the same known-rank shape, dim by dim equal (static or same symbol).
bool sameShape(const Value *a, const Value *b);

/// The axes of a Reduce* node (attribute, or a constant second input from ReduceSum-13 and
/// opset 18), normalized against `rank`; nullopt when not constant or out of range.
std::optional<std::vector<int64_t>> reduceAxes(const Model &model, const Node &node, int64_t rank);

/// Adds the `tessel` opset import the fused ops need.
void importTesselOpset(Model &model);

/// The driver of a recognition pass: calls `recognizeAt` at each node that is one of the ONNX ops
/// `anchorOps`, collected before the first call (a match may erase no anchor but its own), with the
/// values subgraphs return. When any matched, adds the tessel opset import (if `importsTesselOps`)
/// and re-sorts the graph. Returns whether any matched.
Expected<bool> recognizeAtAnchors(
    Model &model, std::initializer_list<std::string_view> anchorOps, bool importsTesselOps,
    const std::function<bool(Node *anchor, const std::unordered_set<const Value *> &returned)> &recognizeAt);

/// Creates `opType` in `domain` reading `inputs`, whose one output takes `result`'s name and type
/// and all of its uses (graph outputs included), then erases the nodes of `pattern` left without
/// readers. The caller re-sorts the graph (the new node is appended). Returns the new node.
Node *replacePattern(Graph &graph, Value *result, const std::string &opType, const std::string &domain,
                     const std::vector<Value *> &inputs, std::vector<std::pair<std::string, Attribute>> attributes,
                     const std::vector<Node *> &pattern);

/// A fresh initializer holding `tensor`, named after `hint`.
Value *addConstant(Graph &graph, const std::string &hint, Tensor tensor);

}  // namespace tessel::passes
