// `tessel bench MODEL|ARTIFACT [--threads N] [--batch B] [--runs R] [--warmup W] [--inputs DIR]
// [--outputs DIR] [--profile] [--json]`: compiles a model for the cpu target (or loads a .tsl
// artifact), times R runs after W warm-up runs, and prints latency (median, p90) and throughput.
// With --profile it times R more runs step by step and prints where the time goes, per fused op.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "frontend/onnx/importer.h"
#include "ir/npy.h"
#include "ir/specialize.h"
#include "runtime/random_inputs.h"
#include "runtime/target_registry.h"

namespace tessel::cli {

namespace {

struct BenchArgs {
  std::string model;
  int threads = 0;
  int64_t batch = 0;
  int runs = 20;
  int warmup = 3;
  int optLevel = 3;
  std::string inputsDir;
  std::string outputsDir;
  bool profile = false;
  bool json = false;
  uint64_t seed = 0;
};

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<const Value *> feedInputs(const Graph &graph) {
  std::vector<const Value *> inputs;
  for (const Value *input : graph.inputs()) {
    if (!input->hasInitializer()) inputs.push_back(input);
  }
  return inputs;
}

/// The .npy files of --inputs, by input name, for the inputs that have one.
Expected<std::map<std::string, Tensor>> readInputFiles(const Graph &graph, const std::string &dir) {
  std::map<std::string, Tensor> tensors;
  if (dir.empty()) return tensors;
  if (!std::filesystem::is_directory(dir)) return makeError(ErrorCode::InvalidArgument, "--inputs '{}' is not a folder", dir);
  for (const Value *input : feedInputs(graph)) {
    std::filesystem::path file = std::filesystem::path(dir) / npyFileName(input->name());
    if (!std::filesystem::exists(file)) continue;
    TESSEL_ASSIGN_OR_RETURN(Tensor t, readNpy(file.string()));
    tensors.emplace(input->name(), std::move(t));
  }
  return tensors;
}

struct Compiled {
  std::unique_ptr<CompiledModel> plan;
  bool fromArtifact = false;
  double prepareMs = 0;  // Import + compile, or artifact load.
};

Expected<Compiled> prepare(const BenchArgs &args) {
  Compiled c;
  TargetOptions options;
  options.optLevel = args.optLevel;
  options.threads = args.threads;
  auto start = Clock::now();
  if (isArtifact(args.model)) {
    TESSEL_ASSIGN_OR_RETURN(auto loaded, loadArtifact(args.model, options));
    if (loaded.first->name() != "cpu")
      return makeFileError(ErrorCode::InvalidArgument, args.model, "an artifact of target '{}': bench times cpu artifacts",
                           loaded.first->name());
    c.plan = std::move(loaded.second);
    c.fromArtifact = true;
  } else {
    TESSEL_ASSIGN_OR_RETURN(Model model, importOnnxFile(args.model));
    // Inputs given as files fix their own sizes; the others take --batch for a free leading dim.
    TESSEL_ASSIGN_OR_RETURN(auto files, readInputFiles(*model.graph, args.inputsDir));
    std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
    for (const auto &[name, tensor] : files) sizes.emplace_back(name, tensor.sizes());
    TESSEL_RETURN_IF_ERROR(specializeInputs(model, sizes, args.batch));
    TESSEL_ASSIGN_OR_RETURN(std::shared_ptr<const Target> cpu, findTarget("cpu"));
    TESSEL_ASSIGN_OR_RETURN(c.plan, cpu->compile(std::move(model), options));
  }
  c.prepareMs = msSince(start);
  return c;
}

/// Feeds for every graph input of the plan: the --inputs file when there is one, else random.
/// Checks --batch against the compiled leading dims, which a static model or artifact fixes.
Expected<NamedValues> makeFeeds(const BenchArgs &args, const Graph &graph, int64_t &batch) {
  TESSEL_ASSIGN_OR_RETURN(auto files, readInputFiles(graph, args.inputsDir));
  std::mt19937_64 rng(args.seed);
  NamedValues feeds;
  batch = args.batch;
  for (const Value *input : feedInputs(graph)) {
    const Shape &shape = input->type().shape();
    if (args.batch > 0 && shape.rankKnown() && shape.rank() > 0 && shape.dims()[0].isStatic() &&
        shape.dims()[0].size != args.batch) {
      return makeError(ErrorCode::InvalidArgument,
                       "input '{}' has the static type {}; --batch {} cannot change it (export the model at that "
                       "batch, or with a symbolic leading dim)",
                       input->name(), input->type().str(), args.batch);
    }
    if (batch <= 0) batch = shape.rankKnown() && shape.rank() > 0 && shape.dims()[0].isStatic() ? shape.dims()[0].size : 1;
    if (auto it = files.find(input->name()); it != files.end()) {
      feeds.emplace_back(input->name(), std::move(it->second));
      continue;
    }
    auto tensor = randomInput(*input, {}, rng);
    if (!tensor.ok()) return withLocation(tensor.status(), SourceLoc::inFile(args.model)).diag();
    feeds.emplace_back(input->name(), std::move(tensor).value());
  }
  return feeds;
}

Expected<NamedValues> timeRuns(CompiledModel &plan, const NamedValues &feeds, int runs, Latency *latency) {
  NamedValues outputs;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    TESSEL_ASSIGN_OR_RETURN(outputs, plan.run(feeds));
    if (latency) latency->ms.push_back(msSince(start));
  }
  if (latency) latency->sort();
  return outputs;
}

Status writeOutputs(const std::string &dir, const NamedValues &outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return makeError(ErrorCode::InvalidArgument, "cannot create --outputs '{}': {}", dir, ec.message());
  for (const auto &[name, value] : outputs) {
    if (!value.isTensor()) continue;
    TESSEL_RETURN_IF_ERROR(writeNpy((std::filesystem::path(dir) / npyFileName(name)).string(), value.tensor()));
  }
  return {};
}

/// Profile rows sorted by time, slowest first, and the same time summed per op type.
struct ProfileTable {
  std::vector<OpTime> steps;
  std::vector<std::pair<std::string, double>> byOp;  // op type -> ms per run
  std::map<std::string, int> countByOp;
  double totalMsPerRun = 0;
};

double msPerRun(const OpTime &s) { return s.runs > 0 ? s.totalMs / static_cast<double>(s.runs) : 0; }

ProfileTable summarize(std::vector<OpTime> steps) {
  ProfileTable t;
  std::stable_sort(steps.begin(), steps.end(), [](const auto &a, const auto &b) { return a.totalMs > b.totalMs; });
  std::map<std::string, double> byOp;
  for (const auto &s : steps) {
    byOp[s.opType] += msPerRun(s);
    ++t.countByOp[s.opType];
    t.totalMsPerRun += msPerRun(s);
  }
  t.byOp.assign(byOp.begin(), byOp.end());
  std::stable_sort(t.byOp.begin(), t.byOp.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  t.steps = std::move(steps);
  return t;
}

double percentOf(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

void printText(const BenchArgs &args, const Compiled &c, int threads, int64_t batch, const Latency &latency,
               const ProfileTable *profile) {
  const PlanStats summary = c.plan->planStats();
  std::printf("model: %s (%s in %.0f ms)\n", args.model.c_str(),
              c.fromArtifact ? "artifact loaded" : fmt::format("compiled at -O{}", args.optLevel).c_str(), c.prepareMs);
  std::printf("plan: %d steps, %d on reference kernels, arena %.1f MiB, constants %.1f MiB\n", summary.steps,
              summary.fallbackSteps, summary.arenaBytes / 1048576.0, summary.constantBytes / 1048576.0);
  for (const std::string &f : summary.fallbacks) std::printf("  reference: %s\n", f.c_str());
  std::printf("threads: %d, batch: %lld, runs: %d (after %d warm-up)\n", threads, static_cast<long long>(batch),
              args.runs, args.warmup);
  std::printf("latency: median %.3f ms, p90 %.3f ms, min %.3f ms, mean %.3f ms\n", latency.median(),
              latency.percentile(90), latency.ms.front(), latency.mean());
  std::printf("throughput: %.2f items/s\n", static_cast<double>(batch) * 1000.0 / latency.median());
  if (!profile) return;

  std::printf("\nprofile (%d more runs, timed step by step: %.3f ms per run in steps)\n", args.runs,
              profile->totalMsPerRun);
  std::printf("%-24s %7s %10s %7s\n", "op", "steps", "ms/run", "%");
  for (const auto &[op, ms] : profile->byOp) {
    std::printf("%-24s %7d %10.3f %6.1f%%\n", op.c_str(), profile->countByOp.at(op), ms,
                percentOf(ms, profile->totalMsPerRun));
  }
  // Node names are long and vary most, so they go last; the other columns fit their widest entry.
  int opWidth = 2, kernelWidth = 6, outputWidth = 6;
  for (const auto &s : profile->steps) {
    opWidth = std::max(opWidth, static_cast<int>(s.opType.size()));
    kernelWidth = std::max(kernelWidth, static_cast<int>(s.kernel.size()));
    outputWidth = std::max(outputWidth, static_cast<int>(s.outputType.size()));
  }
  std::printf("\n%10s %7s %7s  %-*s  %-*s  %-*s  %s\n", "ms/run", "%", "cum %", opWidth, "op", kernelWidth, "kernel",
              outputWidth, "output", "node");
  double cumulative = 0;
  for (const auto &s : profile->steps) {
    cumulative += msPerRun(s);
    std::printf("%10.3f %6.1f%% %6.1f%%  %-*s  %-*s  %-*s  %s\n", msPerRun(s),
                percentOf(msPerRun(s), profile->totalMsPerRun), percentOf(cumulative, profile->totalMsPerRun), opWidth,
                s.opType.c_str(), kernelWidth, s.kernel.c_str(), outputWidth, s.outputType.c_str(), s.node.c_str());
  }
}

void printJson(const BenchArgs &args, const Compiled &c, int threads, int64_t batch, const Latency &latency,
               const ProfileTable *profile) {
  const PlanStats summary = c.plan->planStats();
  nlohmann::json out{
      {"runtime", "tessel"},
      {"model", args.model},
      {"artifact", c.fromArtifact},
      {"opt_level", c.fromArtifact ? nlohmann::json() : nlohmann::json(args.optLevel)},
      {"prepare_ms", c.prepareMs},
      {"threads", threads},
      {"batch", batch},
      {"runs", args.runs},
      {"warmup", args.warmup},
      {"median_ms", latency.median()},
      {"p90_ms", latency.percentile(90)},
      {"min_ms", latency.ms.front()},
      {"mean_ms", latency.mean()},
      {"throughput", static_cast<double>(batch) * 1000.0 / latency.median()},
      {"steps", summary.steps},
      {"fallback_steps", summary.fallbackSteps},
      {"fallbacks", summary.fallbacks},
      {"arena_bytes", summary.arenaBytes},
      {"constant_bytes", summary.constantBytes},
      {"shape_plans", summary.shapePlans},
      {"last_shape_plan_ms", summary.lastShapePlanMs},
  };
  if (profile) {
    nlohmann::json byOp = nlohmann::json::array();
    for (const auto &[op, ms] : profile->byOp) {
      byOp.push_back({{"op", op}, {"steps", profile->countByOp.at(op)}, {"ms_per_run", ms},
                      {"percent", percentOf(ms, profile->totalMsPerRun)}});
    }
    nlohmann::json steps = nlohmann::json::array();
    for (const auto &s : profile->steps) {
      steps.push_back({{"node", s.node}, {"op", s.opType}, {"kernel", s.kernel}, {"output", s.outputType},
                       {"ms_per_run", msPerRun(s)}, {"percent", percentOf(msPerRun(s), profile->totalMsPerRun)}});
    }
    out["profile"] = {{"ms_per_run", profile->totalMsPerRun}, {"by_op", byOp}, {"steps", steps}};
  }
  std::printf("%s\n", out.dump().c_str());
}

Status bench(const BenchArgs &args) {
  if (args.runs < 1 || args.warmup < 0 || args.threads < 0 || args.batch < 0) {
    return makeError(ErrorCode::InvalidArgument, "--runs must be at least 1; --warmup, --threads and --batch not negative");
  }
  TESSEL_ASSIGN_OR_RETURN(Compiled compiled, prepare(args));
  CompiledModel &plan = *compiled.plan;
  int64_t batch = 0;
  TESSEL_ASSIGN_OR_RETURN(NamedValues feeds, makeFeeds(args, *plan.model().graph, batch));

  TESSEL_RETURN_IF_ERROR(timeRuns(plan, feeds, args.warmup, nullptr).status());
  Latency latency;
  TESSEL_ASSIGN_OR_RETURN(NamedValues outputs, timeRuns(plan, feeds, args.runs, &latency));
  if (!args.outputsDir.empty()) TESSEL_RETURN_IF_ERROR(writeOutputs(args.outputsDir, outputs));

  // Profiled runs come after the timed ones: per-step clock reads would inflate the latency.
  std::optional<ProfileTable> profile;
  if (args.profile) {
    plan.setProfiling(true);
    TESSEL_RETURN_IF_ERROR(timeRuns(plan, feeds, args.runs, nullptr).status());
    profile = summarize(plan.opProfile());
    plan.setProfiling(false);
  }
  int threads = plan.planStats().threads;
  if (args.json) {
    printJson(args, compiled, threads, batch, latency, profile ? &*profile : nullptr);
  } else {
    printText(args, compiled, threads, batch, latency, profile ? &*profile : nullptr);
  }
  return {};
}

}  // namespace

void addBenchCommand(CLI::App &app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App *cmd = app.add_subcommand("bench", "Time a model on the cpu target: latency, throughput, per-op profile");
  cmd->add_option("model", args->model, "Model (.onnx) or cpu artifact (.tsl)")->required();
  cmd->add_option("--threads", args->threads, "Threads (0 = all hardware threads)")->capture_default_str();
  cmd->add_option("--batch", args->batch, "Size of a symbolic leading input dim; items per run for throughput");
  cmd->add_option("--runs", args->runs, "Timed runs")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->capture_default_str();
  cmd->add_option("-O,--opt-level", args->optLevel, "Optimization level for an .onnx model (0-3)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--inputs", args->inputsDir, "Folder of NAME.npy per input; missing inputs are seeded random");
  cmd->add_option("--outputs", args->outputsDir, "Folder for the last run's outputs as NAME.npy");
  cmd->add_option("--seed", args->seed, "Seed for random inputs")->capture_default_str();
  cmd->add_flag("--profile", args->profile, "Time every step over --runs more runs; print the per-op table");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->callback([args] {
    Status status = bench(*args);
    if (!status.ok()) reportError(status.str());
  });
}

}  // namespace tessel::cli
