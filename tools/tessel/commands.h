// The subcommands of the `tessel` tool; each file registers one with CLI11 and reports errors as
// diagnostics on stderr with a non-zero exit status.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel::cli {

/// Set by a subcommand's callback; main() returns it.
int &exitCode();

void addInfoCommand(CLI::App &app);
void addRunCommand(CLI::App &app);
void addConformanceCommand(CLI::App &app);
void addOptCommand(CLI::App &app);
void addOpsCommand(CLI::App &app);
void addAsmCommand(CLI::App &app);
void addDisasmCommand(CLI::App &app);
void addKernelCommand(CLI::App &app);
void addCompileCommand(CLI::App &app);
void addBenchCommand(CLI::App &app);
void addProfileCommand(CLI::App &app);
void addGenerateCommand(CLI::App &app);
void addQuantizeCommand(CLI::App &app);

/// Timed runs (bench, generate): one sample per run in ms; sort() before reading the statistics.
struct Latency {
  std::vector<double> ms;
  void sort() { std::sort(ms.begin(), ms.end()); }
  double median() const {
    size_t n = ms.size();
    return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  }
  /// Nearest rank, as bench/peers/ort_bench.js computes it.
  double percentile(double p) const {
    size_t rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(ms.size())));
    return ms[std::clamp<size_t>(rank, 1, ms.size()) - 1];
  }
  double mean() const { return std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size()); }
};

/// Imports an ONNX model and gives its inputs static sizes from `--shape` specs and `--batch` (compile).
Expected<Model> importSpecialized(const std::string &path, const std::vector<std::string> &shapes, int64_t batch,
                                  bool keepSymbolic = false);

/// Parses `--shape NAME=D0,D1,...` (compile, bench).
Expected<std::pair<std::string, std::vector<int64_t>>> parseShapeSpec(const std::string &spec);

/// Prints a diagnostic as "tessel: error: <file: node ...: message>" and sets the exit code to 1.
void reportError(const std::string &message);

}  // namespace tessel::cli
