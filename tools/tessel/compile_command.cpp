// `tessel compile MODEL --target T [-O N] [-o OUT.tsl] [--shape NAME=D0,D1,...] [--batch B]
// [--dim NAME=LO..HI] [--buckets NAME=A,B,..] [--threads N] [--report] [--auto-cast ...] [--cores N] [--time-passes]`:
// compiles a model for any target of the registry and writes its artifact (cpu: optimized graph,
// plan, packed weights; accelerator: stages, programs, constants) that `tessel run`, `bench` and
// `profile` load. On cpu, dims left symbolic stay so: the artifact plans each shape on first use; on
// an accelerator, --buckets compiles the symbolic dims at a list of sizes into one artifact.
#include <cstdio>
#include <map>

#include "commands.h"
#include "frontend/onnx/importer.h"
#include "ir/parser.h"
#include "ir/specialize.h"
#include "runtime/target_registry.h"

namespace tessel::cli {

namespace {

struct CompileArgs {
  std::string model;
  std::string target = "cpu";
  std::string output;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  std::vector<std::string> buckets;
  int64_t batch = 0;
  int optLevel = 3;
  int threads = 0;
  bool report = false;
  std::string autoCast, autoCastType = "bf16";
  int cores = 1;
  bool timePasses = false;
  std::string emit;
};

void compileModel(const CompileArgs &args) {
  auto target = findTarget(args.target);
  if (!target.ok()) return reportError(target.diag().str());
  TargetOptions options;
  for (const std::string &spec : args.buckets) {
    auto buckets = parseBuckets(spec);
    if (!buckets.ok()) return reportError(buckets.diag().str());
    options.buckets.push_back(std::move(*buckets));
  }
  if (!options.buckets.empty() && !(*target)->takesBuckets()) {
    return reportError(fmt::format("--buckets: target '{}' {}", args.target,
                                   (*target)->needsStaticShapes() ? "does not compile buckets"
                                                                  : "serves every shape from one artifact; leave the dims symbolic"));
  }
  auto model = importSpecialized(args.model, args.shapes, args.batch,
                                 !(*target)->needsStaticShapes() || !options.buckets.empty());
  if (!model.ok()) return reportError(model.diag().str());
  for (const std::string &spec : args.dims) {
    auto range = parseDimRange(spec);
    if (!range.ok()) return reportError(range.diag().str());
    options.dimRanges[range->first] = range->second;
  }
  if (!options.dimRanges.empty() && (*target)->needsStaticShapes()) {
    return reportError(fmt::format("--dim: target '{}' plans fixed shapes; give the sizes with --shape", args.target));
  }
  options.optLevel = args.optLevel;
  options.threads = args.threads;
  options.autoCast = args.autoCast;
  options.autoCastType = args.autoCastType;
  options.cores = args.cores;
  options.timePasses = args.timePasses;
  auto compiled = (*target)->compile(std::move(*model), options);
  if (!compiled.ok()) return reportError(withLocation(compiled.status(), SourceLoc::inFile(args.model)).str());
  if (!args.emit.empty()) {
    auto text = (*compiled)->emit(args.emit);
    if (!text.ok()) return reportError(text.diag().str());
    std::printf("%s", text->c_str());
  }
  if (args.report) std::printf("%s", (*compiled)->report().c_str());
  if (args.timePasses) std::printf("%s", (*compiled)->compileTimes().c_str());
  if (args.output.empty()) return;
  Status saved = (*compiled)->save(args.output);
  if (!saved.ok()) return reportError(saved.str());
  std::printf("wrote %s\n", args.output.c_str());
}

}  // namespace

Expected<Model> importSpecialized(const std::string &path, const std::vector<std::string> &shapes, int64_t batch,
                                  bool keepSymbolic) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
  for (const std::string &spec : shapes) {
    TESSEL_ASSIGN_OR_RETURN(auto parsed, parseShapeSpec(spec));
    sizes.push_back(std::move(parsed));
  }
  // Text IR (.tsl.txt, as `tessel opt` prints it) compiles too, so stage tests are text in, text out.
  TESSEL_ASSIGN_OR_RETURN(Model model, path.ends_with(".tsl.txt") ? parseModelFile(path) : importOnnxFile(path));
  TESSEL_RETURN_IF_ERROR(specializeInputs(model, sizes, batch, keepSymbolic));
  return model;
}

Expected<std::pair<std::string, std::vector<int64_t>>> parseShapeSpec(const std::string &spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return makeError(ErrorCode::InvalidArgument, "--shape '{}' is not NAME=D0,D1,...", spec);
  }
  std::vector<int64_t> dims;
  std::string rest = spec.substr(eq + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char *end = nullptr;
    long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 0) {
      return makeError(ErrorCode::InvalidArgument, "--shape '{}': '{}' is not a size", spec, item);
    }
    dims.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::make_pair(spec.substr(0, eq), dims);
}

void addCompileCommand(CLI::App &app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App *cmd = app.add_subcommand("compile", "Compile a model for a target and write the artifact");
  cmd->add_option("model", args->model, "Model file (.onnx, or text IR .tsl.txt)")->required();
  cmd->add_option("--target", args->target, "Target: cpu, nc-v2, nc-v3, or an accelerator profile (.json); `ref` has no artifact")
      ->capture_default_str();
  cmd->add_option("--auto-cast", args->autoCast,
                  "none, matmul (matmul/conv operands) or all (nc: activations too); default: nc matmul, cpu none");
  cmd->add_option("--auto-cast-type", args->autoCastType, "bf16 (cpu: the only one), fp16 or fp8_e4m3 (nc)")
      ->capture_default_str();
  cmd->add_option("--cores", args->cores, "nc: cores of the chip to shard the model over")->capture_default_str();
  cmd->add_flag("--time-passes", args->timePasses, "nc: print the time of every pass and compiler stage");
  cmd->add_option("-o,--output", args->output, "Artifact to write (.tsl)");
  cmd->add_option("-O", args->optLevel, "Optimization level 0-3")->capture_default_str();
  cmd->add_option("--shape", args->shapes, "NAME=D0,D1,... fixes the sizes of an input (cpu: dims not fixed stay symbolic)");
  cmd->add_option("--buckets", args->buckets,
                  "nc: NAME=A,B,C or NAME=auto:LO..HI compiles symbolic dim NAME at each size into one artifact; a run "
                  "takes the smallest that fits, padded");
  cmd->add_option("--dim", args->dims, "cpu: NAME=LO..HI bounds a symbolic dim, checked at run time (default unbounded)");
  cmd->add_option("--batch", args->batch, "Size of a dynamic leading (batch) dim of the inputs");
  cmd->add_option("--threads", args->threads, "Threads the plan is partitioned for (0 = all cores)")
      ->capture_default_str();
  cmd->add_option("--emit", args->emit, "Print what a compiler stage decided: partition, layout, memory, lowering, schedule or asm (nc)");
  cmd->add_flag("--report", args->report, "Print the plan: kernels per op (cpu) or stages and transfers (nc), fallbacks and why, memory");
  cmd->callback([args] { compileModel(*args); });
}

}  // namespace tessel::cli
