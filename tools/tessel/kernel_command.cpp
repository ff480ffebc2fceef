// `tessel kernel list` and `tessel kernel run NAME --target T --shape R=..,C=.. [--dtype D]
// [--variant V] [--option K=V ...] [--timing-only] [--seed N] [--profile DIR] [--print-schedule]
// [--print-allocation]`: lists the accelerator kernel library, and runs one kernel in the simulator
// on a machine profile (nc-v2, nc-v3 or a profile JSON): its simulated time, MFU when its FLOPs are
// known, the check against the reference target, any data races, and the profile summary. Exits 1
// on an error, a failed check or a race.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "targets/nc/kernels/registry.h"
#include "targets/nc/kernels/runner.h"
#include "targets/nc/profile/report.h"
#include "targets/nc/profile/summary.h"
#include "targets/nc/tile/compile.h"

namespace tessel::cli {

namespace {

namespace kernels = nc::kernels;

struct KernelRunArgs {
  std::string name;
  std::string target = "nc-v2";
  std::string shape;
  std::string dtype;
  std::string variant;
  std::vector<std::string> options;
  bool timingOnly = false;
  uint64_t seed = 1;
  std::string profileDir;
  bool printSchedule = false;
  bool printAllocation = false;
};

/// At most this many races are printed one by one; the count is always printed.
constexpr size_t kMaxRacesShown = 10;

void listKernels() {
  struct Row {
    std::string name, dims, dtypes, summary;
  };
  std::vector<Row> rows = {{"KERNEL", "DIMS", "DTYPES", "SUMMARY"}};
  for (const kernels::KernelDef &kernel : kernels::kernelLibrary()) {
    std::vector<std::string_view> dtypes;
    for (nc::DType dtype : kernel.dtypes) dtypes.push_back(nc::dtypeName(dtype));
    std::string summary = kernel.summary;
    if (!kernel.variants.empty()) summary += fmt::format(" [variants: {}]", fmt::join(kernel.variants, ", "));
    rows.push_back({kernel.name, fmt::format("{}", fmt::join(kernel.dimNames, ",")),
                    fmt::format("{}", fmt::join(dtypes, ",")), summary});
  }
  size_t nameWidth = 0, dimsWidth = 0, dtypesWidth = 0;
  for (const Row &row : rows) {
    nameWidth = std::max(nameWidth, row.name.size());
    dimsWidth = std::max(dimsWidth, row.dims.size());
    dtypesWidth = std::max(dtypesWidth, row.dtypes.size());
  }
  for (const Row &row : rows)
    std::printf("%s\n", fmt::format("{:<{}}  {:<{}}  {:<{}}  {}", row.name, nameWidth, row.dims, dimsWidth, row.dtypes,
                                    dtypesWidth, row.summary)
                            .c_str());
  std::printf("%zu kernels\n", kernels::kernelLibrary().size());
}

void runKernelCommand(const KernelRunArgs &args) {
  const kernels::KernelDef *kernel = kernels::findKernel(args.name);
  if (!kernel)
    return reportError(fmt::format("unknown kernel '{}'; `tessel kernel list` shows the {} library kernels", args.name,
                                   kernels::kernelLibrary().size()));
  auto profile = nc::loadProfile(args.target);
  if (!profile.ok()) return reportError(fmt::format("kernel '{}': {}", kernel->name, profile.diag().str()));
  auto params = kernels::parseKernelParams(*kernel, args.shape, args.dtype, args.options, args.variant);
  if (!params.ok()) return reportError(params.diag().str());

  kernels::KernelRunOptions options;
  options.timingOnly = args.timingOnly;
  options.seed = args.seed;
  auto result = kernels::runKernel(*kernel, *params, *profile, options);
  if (!result.ok()) return reportError(result.diag().str());

  std::string optionText;
  for (const auto &[key, value] : params->options) optionText += fmt::format(" {}={}", key, value);
  std::string variantText = params->variant.empty() ? "" : " variant " + params->variant;
  std::printf("kernel %s%s %s %s on %s%s\n", kernel->name.c_str(), variantText.c_str(),
              kernels::formatDims(*kernel, *params).c_str(), std::string(nc::dtypeName(params->dtype)).c_str(),
              profile->name.c_str(), optionText.c_str());
  const nc::Timeline &timeline = result->simulation.timeline;
  std::printf("simulated time: %.3f us (%zu instructions; scheduler estimate %.3f us)\n", timeline.totalNs / 1000.0,
              result->compiled.program.size(), result->compiled.estimatedNs / 1000.0);
  if (result->flops > 0 && timeline.pePeakFlopsPerSec > 0 && timeline.totalNs > 0) {
    double mfu = result->flops / (timeline.pePeakFlopsPerSec * timeline.totalNs * 1e-9);
    std::printf("MFU: %.1f%% (%.4g FLOP at %.4g TFLOPS peak)\n", 100.0 * mfu, result->flops,
                timeline.pePeakFlopsPerSec * 1e-12);
  }
  if (result->checked) {
    std::printf("check: %s (max abs error %.3g; max error / tolerance %.3g, tolerance %.3g + %.3g * |want|; worst %s)\n",
                result->maxErrorRatio <= 1.0 ? "PASS" : "FAIL", result->maxAbsError, result->maxErrorRatio,
                result->absTolerance, result->relTolerance, result->worstElement.c_str());
  } else {
    std::printf("check: skipped (--timing-only)\n");
  }
  const std::vector<nc::Race> &races = result->simulation.races;
  if (!races.empty()) {
    std::printf("races: %zu\n", races.size());
    for (size_t i = 0; i < races.size() && i < kMaxRacesShown; ++i) std::printf("  %s\n", races[i].message.c_str());
    if (races.size() > kMaxRacesShown) std::printf("  ... and %zu more\n", races.size() - kMaxRacesShown);
  }
  if (args.printAllocation) std::printf("%s", nc::tile::printAllocation(result->kernel, result->compiled).c_str());
  if (args.printSchedule) std::printf("%s", nc::tile::printSchedule(result->compiled).c_str());
  std::printf("%s", nc::formatSummary(nc::summarize(timeline, result->compiled.program)).c_str());
  if (!args.profileDir.empty()) {
    Status written = nc::writeProfile(args.profileDir, timeline, result->compiled.program);
    if (!written.ok()) return reportError(fmt::format("kernel '{}': {}", kernel->name, written.str()));
    std::printf("profile written to %s (report.html, trace.json, summary.txt, summary.json)\n",
                args.profileDir.c_str());
  }
  if (!races.empty())
    return reportError(fmt::format("kernel '{}': {} data race(s) in the simulated program", kernel->name, races.size()));
  if (result->checked && !result->passed)
    return reportError(fmt::format("kernel '{}': check failed: max error / tolerance {:.3g} at {}", kernel->name,
                                   result->maxErrorRatio, result->worstElement));
}

}  // namespace

void addKernelCommand(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("kernel", "List or run the accelerator kernel library in the simulator");
  cmd->require_subcommand(1);
  CLI::App *list = cmd->add_subcommand("list", "List the library kernels: name, dims, dtypes, summary");
  list->callback([] { listKernels(); });

  auto args = std::make_shared<KernelRunArgs>();
  CLI::App *run = cmd->add_subcommand("run", "Run one kernel in the simulator and check it against the reference");
  run->add_option("name", args->name, "Kernel name (see `tessel kernel list`)")->required();
  run->add_option("--target", args->target, "Machine profile: nc-v2, nc-v3 or a profile .json")->capture_default_str();
  run->add_option("--shape", args->shape, "Dims as NAME=SIZE,..., e.g. R=256,C=512 (defaults fill the rest)");
  run->add_option("--dtype", args->dtype, "Element type (default: the kernel's first)");
  run->add_option("--variant", args->variant, "Kernel variant (see `tessel kernel list`; default: its first)");
  run->add_option("--option", args->options, "Kernel option KEY=VALUE (repeatable)");
  run->add_flag("--timing-only", args->timingOnly, "Simulate timing only: no numerics, no check");
  run->add_option("--seed", args->seed, "Seed of the random inputs")->capture_default_str();
  run->add_option("--profile", args->profileDir, "Write the profile (report.html, trace.json, summaries) here");
  run->add_flag("--print-schedule", args->printSchedule, "Print the compiled schedule");
  run->add_flag("--print-allocation", args->printAllocation, "Print the SBUF/PSUM allocation");
  run->callback([args] { runKernelCommand(*args); });
}

}  // namespace tessel::cli
