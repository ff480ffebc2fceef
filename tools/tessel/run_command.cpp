// `tessel run MODEL|ARTIFACT [--input NAME=FILE.npy ...] [--dim NAME=SIZE|NAME=LO..HI]
// [--output-dir DIR] [--target T] [-O N] [--threads N] [--seed S] [--timing-only]`: runs a model on a target (an artifact on its own),
// feeding seeded random inputs for any input not given, and writes outputs as .npy. A target with
// numerics of its own (the accelerator's casts) checks its outputs against the reference with the
// same casts; a simulated one prints its latency, MFU and bounding engine.
#include <cstdio>
#include <filesystem>
#include <random>

#include "commands.h"
#include "ir/npy.h"
#include "runtime/random_inputs.h"
#include "runtime/session.h"

namespace tessel::cli {

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  std::string outputDir;
  std::string target = "ref";
  int optLevel = 3;
  int threads = 0;
  uint64_t seed = 0;
  bool timingOnly = false;
};

void printSummary(const std::string &name, const RuntimeValue &value) {
  if (!value.isTensor()) {
    std::printf("  %s: %s\n", name.c_str(), value.describe().c_str());
    return;
  }
  const Tensor &t = value.tensor();
  std::string head;
  if (t.dtype() != DType::String && t.dtype() != DType::Complex64 && t.dtype() != DType::Complex128) {
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 6); ++i) head += fmt::format("{}{:.6g}", i ? ", " : "", t.scalarAsDouble(i));
    if (t.numel() > 6) head += ", ...";
  }
  std::printf("  %s: %s [%s]\n", name.c_str(), value.describe().c_str(), head.c_str());
}

/// The leading (batch) dim of the first graph input, for throughput.
int64_t batchOf(const Graph &graph) {
  for (const Value *in : graph.inputs())
    if (!in->hasInitializer() && in->type().shape().rank() > 0 && in->type().shape().dims()[0].isStatic())
      return std::max<int64_t>(1, in->type().shape().dims()[0].size);
  return 1;
}

/// A simulated run's figures: latency, throughput, MFU, the bounding engine.
void printFigures(const RunFigures &f, const Graph &graph, bool timingOnly = false) {
  if (!f.simulated) return;
  if (f.programs == 0) {
    // No device stage: the latency is the host's, measured (never 0 us, which would read as free).
    std::printf("latency: %.3f us, all on the host (measured on this host; no device program; %zu host fallbacks, see "
                "tessel compile --report)\n",
                f.hostUs, f.fallbacks.size());
    return;
  }
  std::printf("simulated latency: %.3f us on %d %s core%s (%zu host fallbacks)\n", f.deviceUs, f.cores, f.device.c_str(),
              f.cores > 1 ? "s" : "", f.fallbacks.size());
  if (!f.bucket.empty())
    std::printf("bucket: %s (padding is %.1f%% of the padded inputs' elements)\n", f.bucket.c_str(), 100.0 * f.paddingWaste);
  if (timingOnly && f.hostNodes > 0) {
    std::printf("latency: %.3f us = device %.3f us (simulated) + transfers %.3f us (the profile's host link); the host "
                "stages did not run (--timing-only)\n",
                f.latencyUs, f.deviceUs, f.transferUs);
  } else {
    std::printf("latency: %.3f us = device %.3f us (simulated) + transfers %.3f us (the profile's host link) + host "
                "stages %.3f us (measured on this host)\n",
                f.latencyUs, f.deviceUs, f.transferUs, f.hostUs);
  }
  const int64_t batch = batchOf(graph);
  // Back to back, the link and the host overlap the device: the device time bounds the rate.
  std::printf("throughput: %.1f inferences/s (batch %lld, device-bound)\n", f.deviceUs > 0 ? batch * 1e6 / f.deviceUs : 0.0,
              static_cast<long long>(batch));
  std::printf("MFU: %.1f%% of %d core%s (%.3g model FLOP)\n", f.mfuPercent, f.cores, f.cores > 1 ? "s" : "", f.modelFlops);
  std::printf("bounding engine: %s\n", f.boundingEngine.c_str());
}

void runModel(const RunArgs &args) {
  SessionOptions options;
  options.optLevel = args.optLevel;
  options.threads = args.threads;
  // --dim NAME=SIZE sizes random inputs; NAME=LO..HI bounds the dim (cpu checks feeds against it).
  std::map<std::string, int64_t> dimValues;
  for (const std::string &spec : args.dims) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return reportError(fmt::format("--dim '{}' is not NAME=SIZE or NAME=LO..HI", spec));
    if (spec.find("..", eq) != std::string::npos) {
      auto range = parseDimRange(spec);
      if (!range.ok()) return reportError(range.diag().str());
      options.target.dimRanges[range->first] = range->second;
      continue;
    }
    char *end = nullptr;
    const long long size = std::strtoll(spec.c_str() + eq + 1, &end, 10);
    if (eq + 1 == spec.size() || *end != '\0' || size < 0) {
      return reportError(fmt::format("--dim '{}': '{}' is not a size", spec, spec.substr(eq + 1)));
    }
    dimValues[spec.substr(0, eq)] = size;
  }
  auto session = Session::load(args.model, args.target, options);
  if (!session.ok()) return reportError(session.diag().str());
  const Graph &graph = *(*session)->model().graph;
  NamedValues given;
  for (const std::string &spec : args.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return reportError(fmt::format("--input '{}' is not NAME=FILE.npy", spec));
    auto tensor = readNpy(spec.substr(eq + 1));
    if (!tensor.ok()) return reportError(tensor.diag().str());
    given.emplace_back(spec.substr(0, eq), std::move(tensor).value());
  }
  auto feeds = completeFeeds(graph, std::move(given), dimValues, args.seed);
  if (!feeds.ok()) return reportError(withLocation(feeds.status(), SourceLoc::inFile(args.model)).str());
  if (args.timingOnly) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
    for (const auto &[name, value] : *feeds)
      if (value.isTensor()) sizes.emplace_back(name, value.tensor().sizes());
    auto plan = (*session)->compiledFor(sizes);
    if (!plan.ok()) return reportError(plan.diag().str());
    Status ran = (*plan)->runTimingOnly(*feeds);
    if (!ran.ok()) return reportError(withLocation(ran, SourceLoc::inFile(args.model)).str());
    std::printf("outputs: not computed (--timing-only)\n");
    return printFigures((*plan)->lastRun(), *(*plan)->model().graph, /*timingOnly=*/true);
  }
  auto outputs = (*session)->run(*feeds);
  if (!outputs.ok()) return reportError(outputs.diag().str());
  CompiledModel &plan = *(*session)->lastCompiled();
  // A target with its own numerics (the accelerator's casts) checks its outputs against the reference.
  auto check = plan.checkOutputs(*feeds, *outputs);
  if (!check.ok()) return reportError(check.diag().str());
  if (check->text.empty()) {
    std::printf("outputs (target %s):\n", (*session)->target().c_str());
    for (const auto &[name, value] : *outputs) printSummary(name, value);
  } else {
    std::printf("%s", check->text.c_str());
  }
  printFigures(plan.lastRun(), *plan.model().graph);
  if (!args.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.outputDir, ec);
    for (const auto &[name, value] : *outputs) {
      if (!value.isTensor()) continue;
      std::string file = (std::filesystem::path(args.outputDir) / npyFileName(name)).string();
      Status written = writeNpy(file, value.tensor());
      if (!written.ok()) return reportError(written.str());
      std::printf("wrote %s\n", file.c_str());
    }
  }
  if (!check->passed) {
    std::fprintf(stderr, "tessel: error: %s: outputs differ from the reference beyond the tolerance\n", args.model.c_str());
    exitCode() = 1;
  }
}

}  // namespace

void addRunCommand(CLI::App &app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App *cmd = app.add_subcommand("run", "Run a model and write its outputs as .npy");
  cmd->add_option("model", args->model, "Model file (.onnx, or a .tsl artifact from tessel compile: it runs on its own target)")->required();
  cmd->add_option("--input", args->inputs, "NAME=FILE.npy; inputs not given are seeded random");
  cmd->add_option("--dim", args->dims,
                  "NAME=SIZE for a symbolic dimension of random inputs (default 1); NAME=LO..HI bounds it (cpu)");
  cmd->add_option("--output-dir", args->outputDir, "Folder for the outputs as NAME.npy");
  cmd->add_option("--target", args->target, "Target to run on: ref, cpu, nc-v2, nc-v3 or a profile .json (fp32 on the simulator)")->capture_default_str();
  cmd->add_option("-O", args->optLevel, "cpu: optimization level 0-3")->capture_default_str();
  cmd->add_option("--threads", args->threads, "cpu: threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for random inputs")->capture_default_str();
  cmd->add_flag("--timing-only", args->timingOnly, "Simulated targets: simulate the timing only (no outputs, no check)");
  cmd->callback([args] { runModel(*args); });
}

}  // namespace tessel::cli
