// `tessel conformance [DIR...] [--target T] [--json FILE] [--expected-failures FILE]`: runs ONNX
// backend-test cases and ends with "conformance: N passed, M failed, K unsupported".
#include <cstdio>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "runtime/conformance.h"

namespace tessel::cli {

namespace {

struct ConformanceArgs {
  std::vector<std::string> dirs;
  std::string target = "ref";
  std::string jsonPath;
  std::vector<std::string> expectedFailuresPaths;  // Merged; a target adds its own to the shared list.
  std::string filter;
  bool verbose = false;
};

const char *outcomeName(CaseOutcome outcome) {
  switch (outcome) {
    case CaseOutcome::Passed: return "passed";
    case CaseOutcome::Failed: return "failed";
    case CaseOutcome::Unsupported: return "unsupported";
  }
  return "?";
}

void runConformance(const ConformanceArgs &args) {
  std::vector<std::string> dirs = args.dirs.empty() ? defaultConformanceDirs() : args.dirs;
  auto cases = findConformanceCases(dirs);
  if (!cases.ok()) return reportError(cases.diag().str());
  std::map<std::string, std::string> expected;
  for (const std::string &path : args.expectedFailuresPaths) {
    auto read = readExpectedFailures(path);
    if (!read.ok()) return reportError(read.diag().str());
    for (auto &[name, reason] : *read) expected[name] = std::move(reason);
  }
  ConformanceOptions options;
  options.target = args.target;
  int passed = 0, failed = 0, unsupported = 0;
  int onDevice = 0, mixed = 0, hostOnly = 0;  // Passing cases on an accelerator target, by placement.
  const bool accelerator = args.target.rfind("nc-", 0) == 0;
  std::vector<std::string> unexpected, nowPassing;
  nlohmann::json report = nlohmann::json::array();
  for (const std::string &dir : *cases) {
    if (!args.filter.empty() && dir.find(args.filter) == std::string::npos) continue;
    CaseResult result = runConformanceCase(dir, options);
    switch (result.outcome) {
      case CaseOutcome::Passed:
        ++passed;
        if (accelerator) ++(result.hostNodes == 0 ? onDevice : result.deviceNodes == 0 ? hostOnly : mixed);
        break;
      case CaseOutcome::Failed: ++failed; break;
      case CaseOutcome::Unsupported: ++unsupported; break;
    }
    auto entry = expected.find(result.name);
    bool listed = entry != expected.end();
    if (result.outcome != CaseOutcome::Passed && !listed) unexpected.push_back(result.name + ": " + result.reason);
    // An entry "expect-error: TEXT" is a deliberately invalid case: it must fail with TEXT in its message.
    const std::string kExpectError = "expect-error: ";
    if (listed && result.outcome == CaseOutcome::Failed && entry->second.rfind(kExpectError, 0) == 0 &&
        result.reason.find(entry->second.substr(kExpectError.size())) == std::string::npos) {
      unexpected.push_back(result.name + ": failed with the wrong error: " + result.reason);
    }
    if (result.outcome == CaseOutcome::Passed && listed) nowPassing.push_back(result.name);
    if (args.verbose || result.outcome != CaseOutcome::Passed) {
      std::printf("%-11s %s%s%s\n", outcomeName(result.outcome), result.name.c_str(), result.reason.empty() ? "" : ": ",
                  result.reason.c_str());
      std::fflush(stdout);
    }
    nlohmann::json entryJson = {{"name", result.name}, {"outcome", outcomeName(result.outcome)}, {"reason", result.reason},
                                {"seconds", result.seconds}};
    if (accelerator) {
      entryJson["device_nodes"] = result.deviceNodes;
      entryJson["host_nodes"] = result.hostNodes;
      entryJson["fallbacks"] = result.fallbacks;
    }
    report.push_back(std::move(entryJson));
  }
  if (!args.jsonPath.empty()) {
    std::ofstream out(args.jsonPath);
    nlohmann::json summary = {{"target", args.target}, {"passed", passed}, {"failed", failed},
                              {"unsupported", unsupported}, {"cases", report}};
    if (accelerator) summary["placement"] = {{"device", onDevice}, {"mixed", mixed}, {"host", hostOnly}};
    out << summary.dump(1)
        << "\n";
  }
  if (!args.expectedFailuresPaths.empty()) {
    for (const std::string &line : unexpected) std::printf("UNEXPECTED  %s\n", line.c_str());
    for (const std::string &name : nowPassing) {
      std::printf("NOW PASSING %s (remove it from %s)\n", name.c_str(),
                  fmt::format("{}", fmt::join(args.expectedFailuresPaths, " or ")).c_str());
    }
    if (!unexpected.empty() || !nowPassing.empty()) exitCode() = 1;
  }
  if (accelerator) {
    std::printf("%s: of %d passing cases, %d ran wholly on the device, %d with host fallbacks, %d wholly on the host\n",
                args.target.c_str(), passed, onDevice, mixed, hostOnly);
  }
  std::printf("conformance: %d passed, %d failed, %d unsupported\n", passed, failed, unsupported);
}

}  // namespace

void addConformanceCommand(CLI::App &app) {
  auto args = std::make_shared<ConformanceArgs>();
  CLI::App *cmd = app.add_subcommand("conformance", "Run ONNX backend-test cases against a target");
  cmd->add_option("dirs", args->dirs, "Case folders, or folders of cases (default: Debian's libonnx-testdata)");
  cmd->add_option("--target", args->target, "Target to run on")->capture_default_str();
  cmd->add_option("--json", args->jsonPath, "Write per-case results as JSON");
  cmd->add_option("--expected-failures", args->expectedFailuresPaths,
                  "Fail unless exactly the listed cases fail (each line: name reason; a reason "
                  "'expect-error: TEXT' also requires TEXT in the error); repeatable, the lists merge");
  cmd->add_option("--filter", args->filter, "Only cases whose path contains this text");
  cmd->add_flag("-v,--verbose", args->verbose, "Print passing cases too");
  cmd->callback([args] { runConformance(*args); });
}

}  // namespace tessel::cli
