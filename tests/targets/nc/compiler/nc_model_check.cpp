// checkModelOnNc; see nc_model_check.h.
#include "targets/nc/compiler/nc_model_check.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/parser.h"
#include "targets/ref/interpreter.h"

namespace tessel::nc::compiler {

Expected<ModelCheck> checkModelOnNc(const std::string &irText, const NcCompileOptions &options, double atol,
                                    double rtol, const NamedValues &given) {
  TESSEL_ASSIGN_OR_RETURN(Model reference, parseModel(irText, "<test model>"));
  TESSEL_ASSIGN_OR_RETURN(Model model, parseModel(irText, "<test model>"));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  NamedValues feeds;
  for (const Value *input : reference.graph->inputs()) {
    if (input->hasInitializer()) continue;
    auto fed = std::find_if(given.begin(), given.end(), [&](const auto &named) { return named.first == input->name(); });
    if (fed != given.end()) {
      feeds.push_back(*fed);
      continue;
    }
    std::vector<int64_t> shape;
    for (const Dim &d : input->type().shape().dims()) shape.push_back(d.size);
    Tensor t(input->type().dtype(), shape);
    for (float &v : t.span<float>()) v = uniform(rng);
    feeds.emplace_back(input->name(), RuntimeValue(std::move(t)));
  }
  TESSEL_ASSIGN_OR_RETURN(NamedValues want, ReferenceInterpreter(reference).run(feeds));
  TESSEL_ASSIGN_OR_RETURN(auto exe, compileNc(std::move(model), options));
  auto run = exe->run(feeds);
  if (!run.ok()) return makeError(run.diag().code, "{}\n{}", run.diag().str(), exe->report());
  NcRunResult got = std::move(*run);
  ModelCheck check;
  check.simulatedUs = got.deviceNs / 1000.0;
  check.hostNodes = static_cast<int>(exe->fallbacks().size());
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor &w = want[o].second.tensor();
    const Tensor &g = got.outputs[o].second.tensor();
    if (w.numel() != g.numel()) return makeError(ErrorCode::ShapeMismatch, "output {} has {} elements, want {}", o, g.numel(), w.numel());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double wv = w.scalarAsDouble(i), gv = g.scalarAsDouble(i);
      const double ratio = std::abs(gv - wv) / (atol + rtol * std::abs(wv));
      if (!(ratio <= check.maxErrorRatio)) {
        check.maxErrorRatio = std::isnan(ratio) ? INFINITY : ratio;
        check.worst = fmt::format("{}[{}]: got {}, want {}", want[o].first, i, gv, wv);
      }
    }
  }
  check.deviceNodes = static_cast<int>(exe->nodeNames().size());
  for (const DeviceProgram &program : exe->programs()) check.spilledActivations += program.spilledActivations;
  if (!exe->programs().empty())
    for (const Instruction &insn : exe->programs()[0].program)
    {
      if (insn.opcode == Opcode::AllGather || insn.opcode == Opcode::AllReduce) ++check.collectives;
      if (insn.opcode == Opcode::DmaCopy && insn.operands[0] && insn.operands[0]->space == MemSpace::HBM)
        ++check.hbmStores;
    }
  return check;
}

std::string denseText(const std::vector<int64_t> &shape, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string text = fmt::format("dense<f32[{}]: ", fmt::join(shape, ","));
  for (int64_t i = 0; i < n; ++i) text += fmt::format("{}{:.6g}", i ? ", " : "", uniform(rng));
  return text + ">";
}

}  // namespace tessel::nc::compiler
