// Whole models on the accelerator from the command line:
//   tessel compile MODEL --target nc-v2|nc-v3|PROFILE.json [--auto-cast none|matmul|all]
//       [--auto-cast-type bf16|fp16|fp8_e4m3] [-O N] [--report] [--time-passes] -o model.tsl
//   tessel run model.tsl [--input NAME=FILE.npy] [--seed S] [--output-dir DIR]   (nc artifacts)
//   tessel profile model.tsl -o DIR
// `run` simulates the program, runs the artifact's graph on the reference target with the same
// inputs and checks every output within the tolerance of the cast type; it prints the simulated
// latency, throughput, MFU and the engine that bounds the run.
#include <cstdio>
#include <filesystem>
#include <random>

#include "commands.h"
#include "ir/npy.h"
#include "targets/nc/compiler/cast_reference.h"
#include "targets/nc/compiler/executable.h"
#include "targets/nc/profile/report.h"
#include "targets/nc/profile/summary.h"

namespace tessel::cli {

namespace {

using nc::compiler::NcExecutable;

Expected<nc::compiler::LoweringOptions> parseCast(const std::string &autoCast, const std::string &castType) {
  nc::compiler::LoweringOptions options;
  if (autoCast == "none") {
    options.autoCast = nc::compiler::AutoCast::None;
  } else if (autoCast == "matmul") {
    options.autoCast = nc::compiler::AutoCast::Matmul;
  } else if (autoCast == "all") {
    options.autoCast = nc::compiler::AutoCast::All;
  } else {
    return makeError(ErrorCode::InvalidArgument, "--auto-cast={}: expected none, matmul or all", autoCast);
  }
  if (castType == "bf16") {
    options.castType = nc::DType::BF16;
  } else if (castType == "fp16") {
    options.castType = nc::DType::F16;
  } else if (castType == "fp8_e4m3") {
    options.castType = nc::DType::F8E4M3;
  } else {
    return makeError(ErrorCode::InvalidArgument, "--auto-cast-type={}: expected bf16, fp16 or fp8_e4m3", castType);
  }
  return options;
}

/// Feeds for every graph input not given: seeded random values (as `tessel run` makes them).
Expected<NamedValues> makeFeeds(const Graph &graph, const std::vector<std::string> &inputs, uint64_t seed) {
  NamedValues feeds;
  for (const std::string &spec : inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return makeError(ErrorCode::InvalidArgument, "--input '{}' is not NAME=FILE.npy", spec);
    TESSEL_ASSIGN_OR_RETURN(Tensor tensor, readNpy(spec.substr(eq + 1)));
    feeds.emplace_back(spec.substr(0, eq), std::move(tensor));
  }
  std::mt19937_64 rng(seed);
  for (Value *input : graph.inputs()) {
    bool given = false;
    for (const auto &[name, value] : feeds) given = given || name == input->name();
    if (given || input->hasInitializer()) continue;
    TESSEL_ASSIGN_OR_RETURN(Tensor tensor, randomInput(*input, {}, rng));
    feeds.emplace_back(input->name(), std::move(tensor));
  }
  return feeds;
}

struct OutputError {
  double maxAbs = 0, ratio = 0, range = 0;  // max |got - want|, its worst ratio to the tolerance, max |want|.
};

/// `got` against `want` within max(tolerance.rangeFraction * max|want|, minAbs, 1e-6) + tolerance.relative * |want|.
OutputError compareOutput(const Tensor &got, const Tensor &want, const nc::compiler::Tolerance &tolerance,
                          double minAbs = 0) {
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

/// Totals over the device stages of one run.
struct RunFigures {
  double latencyUs = 0, matmulFlops = 0, mfuPercent = 0;
  std::string boundingEngine;
};

RunFigures figuresOf(const NcExecutable &exe, const nc::compiler::NcRunResult &result) {
  RunFigures f;
  f.latencyUs = result.deviceNs / 1000.0;
  double longest = -1;
  for (size_t i = 0; i < result.timelines.size(); ++i) {
    nc::ProfileSummary s = nc::summarize(result.timelines[i], exe.programs()[i].program);
    if (s.totalNs > longest) {
      longest = s.totalNs;
      f.boundingEngine = fmt::format("{} ({:.0f}% active)", s.boundingEngine, s.boundingActivePercent);
    }
  }
  f.matmulFlops = exe.modelFlops();
  if (f.latencyUs > 0 && !result.timelines.empty())
    f.mfuPercent = 100.0 * f.matmulFlops /
                   (result.timelines[0].pePeakFlopsPerSec * exe.cores() * f.latencyUs * 1e-6);
  return f;
}

/// The leading (batch) dim of the first graph input, for throughput.
int64_t batchOf(const Graph &graph) {
  for (const Value *in : graph.inputs())
    if (!in->hasInitializer() && in->type().shape().rank() > 0 && in->type().shape().dims()[0].isStatic())
      return std::max<int64_t>(1, in->type().shape().dims()[0].size);
  return 1;
}

void profileArtifact(const std::string &path, const std::string &dir) {
  auto exe = nc::compiler::loadNcArtifact(path);
  if (!exe.ok()) return reportError(exe.diag().str());
  auto feeds = makeFeeds(*(*exe)->model().graph, {}, 0);
  if (!feeds.ok()) return reportError(feeds.diag().str());
  auto result = (*exe)->run(*feeds, /*timingOnly=*/true);
  if (!result.ok()) return reportError(result.diag().str());
  if (result->timelines.empty()) std::printf("no device program: every node runs on the host; nothing to profile\n");
  for (size_t i = 0; i < result->timelines.size(); ++i) {
    std::string sub = result->timelines.size() == 1 ? dir : (std::filesystem::path(dir) / fmt::format("program{}", i)).string();
    Status written = nc::writeProfile(sub, result->timelines[i], (*exe)->programs()[i].program);
    if (!written.ok()) return reportError(written.str());
    std::printf("%s", nc::formatSummary(nc::summarize(result->timelines[i], (*exe)->programs()[i].program)).c_str());
    std::printf("wrote %s/{trace.json, summary.txt, summary.json, report.html}\n", sub.c_str());
  }
}

}  // namespace

void compileForNc(const NcCompileRequest &request) {
  auto cast = parseCast(request.autoCast, request.autoCastType);
  if (!cast.ok()) return reportError(cast.diag().str());
  auto model = importSpecialized(request.model, request.shapes, request.batch);
  if (!model.ok()) return reportError(model.diag().str());
  nc::compiler::NcCompileOptions options;
  options.target = request.target;
  options.lowering = *cast;
  options.lowering.cores = request.cores;
  options.optLevel = request.optLevel;
  auto exe = nc::compiler::compileNc(std::move(*model), options);
  if (!exe.ok()) return reportError(withLocation(exe.status(), SourceLoc::inFile(request.model)).str());
  if (request.report) std::printf("%s", (*exe)->report().c_str());
  if (request.timePasses) {
    std::printf("time per pass:\n");
    for (const nc::compiler::PassTime &t : (*exe)->passTimes()) std::printf("  %10.1f ms  %s\n", t.ms, t.name.c_str());
    std::printf("  %10.1f ms  total\n", (*exe)->compileSeconds() * 1000.0);
  }
  if (request.output.empty()) return;
  Status saved = (*exe)->save(request.output);
  if (!saved.ok()) return reportError(saved.str());
  std::printf("wrote %s\n", request.output.c_str());
}

void printFigures(const NcExecutable &exe, const nc::compiler::NcRunResult &result) {
  if (exe.programs().empty()) {
    // No device stage: a latency of 0 us would read as free; the host's time is not simulated.
    std::printf("simulated latency: none: every node runs on the host (%zu host fallbacks; see tessel compile "
                "--report)\n",
                exe.fallbacks().size());
    return;
  }
  const RunFigures f = figuresOf(exe, result);
  const int64_t batch = batchOf(*exe.model().graph);
  std::printf("simulated latency: %.3f us on %d %s core%s (%zu host fallbacks%s)\n", f.latencyUs, exe.cores(),
              exe.profile().name.c_str(), exe.cores() > 1 ? "s" : "", exe.fallbacks().size(),
              exe.fallbacks().empty() ? "" : ", whose host time is not included");
  std::printf("throughput: %.1f inferences/s (batch %lld)\n", f.latencyUs > 0 ? batch * 1e6 / f.latencyUs : 0.0,
              static_cast<long long>(batch));
  std::printf("MFU: %.1f%% of %d core%s (%.3g model FLOP)\n", f.mfuPercent, exe.cores(), exe.cores() > 1 ? "s" : "",
              f.matmulFlops);
  std::printf("bounding engine: %s\n", f.boundingEngine.c_str());
}

void runNcArtifact(const std::string &path, const std::vector<std::string> &inputs, uint64_t seed,
                   const std::string &outputDir, bool timingOnly) {
  auto exe = nc::compiler::loadNcArtifact(path);
  if (!exe.ok()) return reportError(exe.diag().str());
  const Model &model = (*exe)->model();
  auto feeds = makeFeeds(*model.graph, inputs, seed);
  if (!feeds.ok()) return reportError(withLocation(feeds.status(), SourceLoc::inFile(path)).str());
  auto result = (*exe)->run(*feeds, timingOnly);
  if (!result.ok()) return reportError(result.diag().str());
  if (timingOnly) {
    std::printf("outputs: not computed (--timing-only)\n");
    return printFigures(**exe, *result);
  }
  // The device's outputs against the reference with the same casts (tight), and how far the casts
  // move them from the f32 reference (reported, not checked).
  const nc::compiler::LoweringOptions &lowering = (*exe)->options().lowering;
  auto casted = nc::compiler::castReference(model, [&](size_t i) { return (*exe)->nodeOnDevice(i); }, lowering);
  if (!casted.ok()) return reportError(casted.diag().str());
  const Model &reference = casted->model ? *casted->model : model;
  auto want = ReferenceInterpreter(reference).run(*feeds);
  if (!want.ok()) return reportError(want.diag().str());
  // A deep network rounded to bf16 is chaotic: a value moved across a rounding boundary by the order
  // of f32 sums moves everything after it. The reference's own answer to inputs perturbed by 1e-6
  // (relative) measures that noise; the check allows twice it.
  std::vector<double> noise(want->size(), 0.0);
  const bool casting = lowering.autoCast != nc::compiler::AutoCast::None;
  if (casting && casted->exact) {
    NamedValues perturbed = *feeds;
    std::mt19937_64 rng(seed + 1);
    std::uniform_real_distribution<float> jitter(-1e-6f, 1e-6f);
    for (auto &[name, value] : perturbed) {
      if (!value.isTensor() || value.tensor().dtype() != DType::Float32) continue;
      Tensor t = value.tensor().clone();
      for (float &v : t.span<float>()) v *= 1.0f + jitter(rng);
      value = RuntimeValue(std::move(t));
    }
    auto other = ReferenceInterpreter(reference).run(perturbed);
    if (!other.ok()) return reportError(other.diag().str());
    for (size_t o = 0; o < want->size(); ++o)
      noise[o] = compareOutput((*other)[o].second.tensor(), (*want)[o].second.tensor(), {}).maxAbs;
  }
  // The f32 reference, when the checked one is another graph.
  Expected<NamedValues> f32 = casted->model ? ReferenceInterpreter(model).run(*feeds) : Expected<NamedValues>(*want);
  if (!f32.ok()) return reportError(f32.diag().str());
  const nc::compiler::Tolerance tolerance =
      casting && casted->exact ? nc::compiler::kSameCastTolerance : nc::compiler::toleranceFor(lowering);
  if (casted->exact) {
    std::printf("outputs (target %s, checked against the reference %s within max(%g * max|want|%s) + %g * |want|):\n",
                (*exe)->profile().name.c_str(), casting ? "with the device's casts" : "in f32",
                tolerance.rangeFraction, casting ? ", 2 * its rounding noise" : "", tolerance.relative);
  } else {
    std::printf("outputs (target %s, checked against the f32 reference within the cast's %g * max|want| + %g * |want|; "
                "%s):\n",
                (*exe)->profile().name.c_str(), tolerance.rangeFraction, tolerance.relative, casted->unmodelled.c_str());
  }
  bool passed = true;
  for (size_t o = 0; o < want->size(); ++o) {
    const Tensor &w = (*want)[o].second.tensor(), &g = result->outputs[o].second.tensor();
    const OutputError error = compareOutput(g, w, tolerance, 2 * noise[o]);
    passed = passed && error.ratio <= 1.0;
    std::printf("  %s: %s max abs error %.3g, max error / tolerance %.3f: %s", (*want)[o].first.c_str(),
                result->outputs[o].second.describe().c_str(), error.maxAbs, error.ratio,
                error.ratio <= 1.0 ? "PASS" : "FAIL");
    if (casting && casted->exact) {
      std::printf("; rounding noise %.3g", noise[o]);
      const OutputError drift = compareOutput(g, (*f32)[o].second.tensor(), tolerance);
      std::printf("; the casts move it %.3g from f32 (%.2g of max|f32|)", drift.maxAbs, drift.maxAbs / std::max(drift.range, 1e-30));
    }
    std::printf("\n");
  }
  printFigures(**exe, *result);
  if (!outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(outputDir, ec);
    for (const auto &[name, value] : result->outputs) {
      std::string safe = name;
      for (char &c : safe)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
      Status written = writeNpy((std::filesystem::path(outputDir) / (safe + ".npy")).string(), value.tensor());
      if (!written.ok()) return reportError(written.str());
    }
  }
  if (!passed) {
    std::fprintf(stderr, "tessel: error: %s: outputs differ from the reference beyond the tolerance\n", path.c_str());
    exitCode() = 1;
  }
}

void addProfileCommand(CLI::App &app) {
  auto path = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand("profile", "Simulate an accelerator artifact and write its trace, summary and report");
  cmd->add_option("artifact", *path, "Artifact from tessel compile --target nc-*")->required();
  cmd->add_option("-o,--output-dir", *dir, "Folder for trace.json, summary.txt/json, report.html")->required();
  cmd->callback([path, dir] { profileArtifact(*path, *dir); });
}

}  // namespace tessel::cli
