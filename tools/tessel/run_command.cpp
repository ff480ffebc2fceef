// `tessel run MODEL|ARTIFACT [--input NAME=FILE.npy ...] [--output-dir DIR] [--target T] [-O N]
// [--threads N] [--seed S]`: runs a model (a .tsl artifact runs on cpu), feeding seeded random
// inputs for any input not given, and writes outputs as .npy.
#include <cstdio>
#include <filesystem>
#include <random>

#include "commands.h"
#include "ir/npy.h"
#include "runtime/session.h"
#include "support/memory_budget.h"
#include "targets/nc/compiler/executable.h"

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

void runModel(const RunArgs &args) {
  if (nc::compiler::isNcArtifact(args.model)) return runNcArtifact(args.model, args.inputs, args.seed, args.outputDir, args.timingOnly);
  const std::string target = cpu::isCpuArtifact(args.model) ? "cpu" : args.target;
  auto session = Session::load(args.model, target, {args.optLevel, args.threads});
  if (!session.ok()) return reportError(session.diag().str());
  const Graph &graph = *(*session)->model().graph;
  std::map<std::string, int64_t> dimValues;
  for (const std::string &spec : args.dims) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return reportError(fmt::format("--dim '{}' is not NAME=SIZE", spec));
    dimValues[spec.substr(0, eq)] = std::atoll(spec.c_str() + eq + 1);
  }
  NamedValues feeds;
  for (const std::string &spec : args.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return reportError(fmt::format("--input '{}' is not NAME=FILE.npy", spec));
    auto tensor = readNpy(spec.substr(eq + 1));
    if (!tensor.ok()) return reportError(tensor.diag().str());
    feeds.emplace_back(spec.substr(0, eq), std::move(tensor).value());
  }
  std::mt19937_64 rng(args.seed);
  for (Value *input : graph.inputs()) {
    bool given = false;
    for (const auto &[name, value] : feeds) given = given || name == input->name();
    if (given || input->hasInitializer()) continue;
    auto tensor = randomInput(*input, dimValues, rng);
    if (!tensor.ok()) return reportError(withLocation(tensor.status(), SourceLoc::inFile(args.model)).str());
    feeds.emplace_back(input->name(), std::move(tensor).value());
  }
  auto outputs = (*session)->run(feeds);
  if (!outputs.ok()) return reportError(outputs.diag().str());
  std::printf("outputs (target %s):\n", target.c_str());
  for (const auto &[name, value] : *outputs) printSummary(name, value);
  if (args.outputDir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(args.outputDir, ec);
  for (const auto &[name, value] : *outputs) {
    if (!value.isTensor()) continue;
    std::string safe = name;
    for (char &c : safe) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
    }
    std::string file = (std::filesystem::path(args.outputDir) / (safe + ".npy")).string();
    Status written = writeNpy(file, value.tensor());
    if (!written.ok()) return reportError(written.str());
    std::printf("wrote %s\n", file.c_str());
  }
}

}  // namespace

Expected<Tensor> randomInput(const Value &input, const std::map<std::string, int64_t> &dimValues, std::mt19937_64 &rng) {
  const Type &type = input.type();
  if (!type.isTensor() || type.dtype() == DType::Undefined || !type.shape().rankKnown()) {
    return makeError(ErrorCode::InvalidArgument, "input '{}' has type {}; pass it with --input {}=FILE.npy",
                     input.name(), type.str(), input.name());
  }
  std::vector<int64_t> sizes;
  for (const Dim &d : type.shape().dims()) {
    if (d.isStatic()) {
      sizes.push_back(d.size);
    } else {
      auto it = dimValues.find(d.symbol);
      sizes.push_back(it == dimValues.end() ? 1 : it->second);
    }
  }
  // A model may declare any sizes; the allocation must fit before it is made.
  const std::optional<uint64_t> bytes = checkedByteCount(sizes, dtypeSize(type.dtype()));
  const std::string what = fmt::format("input '{}' ({}[{}])", input.name(), dtypeName(type.dtype()), fmt::join(sizes, ","));
  if (!bytes) return makeError(ErrorCode::InvalidArgument, "{}: its byte count overflows 64 bits", what);
  if (Status fits = checkFitsMemory(what, *bytes); !fits.ok()) {
    Diagnostic diag = fits.diag();
    diag.message += fmt::format("; pass it with --input {}=FILE.npy or give smaller sizes with --dim", input.name());
    return diag;
  }
  Tensor t(type.dtype(), sizes);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  bool handled = visitDType(type.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, std::string>) {
      for (auto &s : t.span<std::string>()) s = std::to_string(small(rng));
    } else if constexpr (std::is_same_v<T, bool>) {
      for (auto &b : t.span<bool>()) b = small(rng) % 2;
    } else if constexpr (std::is_integral_v<T>) {
      for (auto &v : t.span<T>()) v = static_cast<T>(small(rng));
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      for (auto &v : t.span<T>()) v = T(uniform(rng), uniform(rng));
    } else if constexpr (std::is_arithmetic_v<T>) {
      for (auto &v : t.span<T>()) v = static_cast<T>(uniform(rng));
    } else {
      for (auto &v : t.span<T>()) v = T(static_cast<float>(uniform(rng)));
    }
  });
  if (!handled) return makeError(ErrorCode::InvalidArgument, "cannot make random {} input", dtypeName(type.dtype()));
  return t;
}

void addRunCommand(CLI::App &app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App *cmd = app.add_subcommand("run", "Run a model and write its outputs as .npy");
  cmd->add_option("model", args->model, "Model file (.onnx, or a .tsl artifact from tessel compile: cpu, or nc-* simulated and checked)")->required();
  cmd->add_option("--input", args->inputs, "NAME=FILE.npy; inputs not given are seeded random");
  cmd->add_option("--dim", args->dims, "NAME=SIZE for a symbolic dimension of random inputs (default 1)");
  cmd->add_option("--output-dir", args->outputDir, "Folder for the outputs as NAME.npy");
  cmd->add_option("--target", args->target, "Target to run on: ref, cpu, nc-v2 or nc-v3 (fp32 on the simulator)")->capture_default_str();
  cmd->add_option("-O", args->optLevel, "cpu: optimization level 0-3")->capture_default_str();
  cmd->add_option("--threads", args->threads, "cpu: threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for random inputs")->capture_default_str();
  cmd->add_flag("--timing-only", args->timingOnly, "nc artifacts: simulate the timing only (no outputs, no check)");
  cmd->callback([args] { runModel(*args); });
}

}  // namespace tessel::cli
