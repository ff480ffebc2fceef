// The cast check; see cast_check.h.
#include "targets/ref/cast_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <fmt/format.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "targets/ref/interpreter.h"

namespace tessel::ref {
namespace {

constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxBFloat16 = 16;  // TensorProto codes.

}  // namespace

OutputError compareOutput(const Tensor &got, const Tensor &want, const Tolerance &tolerance, double minAbs) {
  OutputError e;
  for (int64_t i = 0; i < want.numel(); ++i) e.range = std::max(e.range, std::abs(want.scalarAsDouble(i)));
  const double atol = std::max({tolerance.rangeFraction * e.range, minAbs, 1e-6});
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double err = std::abs(got.scalarAsDouble(i) - want.scalarAsDouble(i));
    const double ratio = err / (atol + tolerance.relative * std::abs(want.scalarAsDouble(i)));
    if (!(ratio <= e.ratio)) e.ratio = std::isnan(ratio) ? INFINITY : ratio;
    e.maxAbs = std::max(e.maxAbs, err);
  }
  return e;
}

double cosineSimilarity(const Tensor &a, const Tensor &b) {
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    const double x = a.scalarAsDouble(i), y = b.scalarAsDouble(i);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  if (aa == 0 && bb == 0) return 1.0;
  return dot / std::sqrt(aa * bb);
}

Expected<int> insertRoundingCasts(Graph &graph, const RoundedInputs &roundedInputs, DType narrow) {
  if (narrow != DType::BFloat16 && narrow != DType::Float16) {
    return makeError(ErrorCode::InvalidArgument, "rounding to {} is not modelled", dtypeName(narrow));
  }
  const std::string suffix = narrow == DType::BFloat16 ? "bf16" : "fp16";
  std::vector<Node *> nodes;
  for (const auto &node : graph.nodes()) nodes.push_back(node.get());
  std::map<Value *, Value *> rounded;  // A value and its rounded copy, shared by its readers.
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node *node = nodes[i];
    for (size_t input : roundedInputs(i, *node)) {
      Value *v = node->input(input);
      if (!v || !v->type().isTensor() || v->type().dtype() != DType::Float32) continue;
      auto [it, added] = rounded.try_emplace(v, nullptr);
      if (added) {
        Node *down = graph.addNode("Cast", {v}, {v->name() + "/rounded_" + suffix}, v->name() + "/round_down");
        down->setAttr("to", Attribute(narrow == DType::BFloat16 ? kOnnxBFloat16 : kOnnxFloat16));
        down->output(0)->setType(Type::tensor(narrow, v->type().shape()));
        Node *up = graph.addNode("Cast", {down->output(0)}, {v->name() + "/rounded"}, v->name() + "/round_up");
        up->setAttr("to", Attribute(kOnnxFloat));
        up->output(0)->setType(v->type());
        it->second = up->output(0);
      }
      node->setInput(input, it->second);
    }
  }
  if (!rounded.empty()) TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return static_cast<int>(rounded.size());
}

Expected<RoundingReference> roundingReference(const Model &model, const RoundedInputs &rounded, DType narrow) {
  // A copy of the model to rewrite (export and import keep the node order).
  TESSEL_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(model));
  TESSEL_ASSIGN_OR_RETURN(Model copy, importOnnxBytes(bytes, model.sourcePath));
  RoundingReference result;
  TESSEL_ASSIGN_OR_RETURN(result.roundedValues, insertRoundingCasts(*copy.graph, rounded, narrow));
  if (result.roundedValues > 0) result.model = std::move(copy);
  return result;
}

Expected<OutputCheck> checkAgainstReference(const Model &model, const CastCheck &check, const NamedValues &feeds,
                                            const NamedValues &outputs) {
  const Model &reference = check.castModel != nullptr ? *check.castModel : model;
  TESSEL_ASSIGN_OR_RETURN(NamedValues want, ReferenceInterpreter(reference).run(feeds));
  // A deep network rounded to bf16 is chaotic: a value moved across a rounding boundary by the
  // order of f32 sums moves everything after it. The reference's own answer to inputs perturbed by
  // 1e-6 (relative) measures that noise; the check allows twice it.
  const bool sameCasts = check.casting && check.exact;
  std::vector<double> noise(want.size(), 0.0);
  if (sameCasts) {
    NamedValues perturbed = feeds;
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<float> jitter(-1e-6f, 1e-6f);
    for (auto &[name, value] : perturbed) {
      if (!value.isTensor() || value.tensor().dtype() != DType::Float32) continue;
      Tensor t = value.tensor().clone();
      for (float &v : t.span<float>()) v *= 1.0f + jitter(rng);
      value = RuntimeValue(std::move(t));
    }
    TESSEL_ASSIGN_OR_RETURN(NamedValues other, ReferenceInterpreter(reference).run(perturbed));
    for (size_t o = 0; o < want.size(); ++o)
      noise[o] = compareOutput(other[o].second.tensor(), want[o].second.tensor(), {}).maxAbs;
  }
  // The f32 reference, when the checked one is another graph.
  NamedValues f32 = want;
  if (check.castModel != nullptr) {
    TESSEL_ASSIGN_OR_RETURN(f32, ReferenceInterpreter(model).run(feeds));
  }
  const Tolerance tolerance = sameCasts ? kSameCastTolerance : check.loose;
  OutputCheck result;
  if (check.exact) {
    result.text = fmt::format(
        "outputs (target {}, checked against the reference {} within max({} * max|want|{}) + {} * |want|):\n",
        check.target, check.casting ? "with the same casts" : "in f32", tolerance.rangeFraction,
        check.casting ? ", 2 * its rounding noise" : "", tolerance.relative);
  } else {
    result.text = fmt::format(
        "outputs (target {}, checked against the f32 reference within the cast's {} * max|want| + {} * |want|; "
        "{}):\n",
        check.target, tolerance.rangeFraction, tolerance.relative, check.unmodelled);
  }
  for (size_t o = 0; o < want.size() && o < outputs.size(); ++o) {
    const Tensor &w = want[o].second.tensor(), &g = outputs[o].second.tensor();
    const OutputError error = compareOutput(g, w, tolerance, 2 * noise[o]);
    result.passed = result.passed && error.ratio <= 1.0;
    result.text += fmt::format("  {}: {} max abs error {:.3g}, max error / tolerance {:.3f}: {}", want[o].first,
                               outputs[o].second.describe(), error.maxAbs, error.ratio,
                               error.ratio <= 1.0 ? "PASS" : "FAIL");
    if (sameCasts) {
      const Tensor &exact = f32[o].second.tensor();
      const OutputError drift = compareOutput(g, exact, tolerance);
      result.text += fmt::format(
          "; rounding noise {:.3g}; the casts move it {:.3g} from f32 ({:.2g} of max|f32|, cosine {:.6f})", noise[o],
          drift.maxAbs, drift.maxAbs / std::max(drift.range, 1e-30), cosineSimilarity(g, exact));
    }
    result.text += "\n";
  }
  return result;
}

}  // namespace tessel::ref
