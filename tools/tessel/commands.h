// The subcommands of the `tessel` tool; each file registers one with CLI11 and reports errors as
// diagnostics on stderr with a non-zero exit status.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <random>
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

/// `tessel compile` for an accelerator target (nc_model_command.cpp).
struct NcCompileRequest {
  std::string model, target, output;
  std::vector<std::string> shapes;
  int64_t batch = 0;
  int optLevel = 3;
  std::string autoCast = "matmul", autoCastType = "bf16";
  int cores = 1;
  bool report = false, timePasses = false;
};
void compileForNc(const NcCompileRequest &request);
/// `tessel run` of an accelerator artifact: simulate, check against the reference, print the figures.
void runNcArtifact(const std::string &path, const std::vector<std::string> &inputs, uint64_t seed,
                   const std::string &outputDir, bool timingOnly);

/// A seeded random tensor for a graph input: symbolic dims take `dimValues` (default 1); floats are
/// uniform in [-1, 1), integers in [0, 10), bools fair coins.
Expected<Tensor> randomInput(const Value &input, const std::map<std::string, int64_t> &dimValues, std::mt19937_64 &rng);

/// Imports an ONNX model and gives its inputs static sizes from `--shape` specs and `--batch` (compile).
Expected<Model> importSpecialized(const std::string &path, const std::vector<std::string> &shapes, int64_t batch);

/// Parses `--shape NAME=D0,D1,...` (compile, bench).
Expected<std::pair<std::string, std::vector<int64_t>>> parseShapeSpec(const std::string &spec);

/// Prints a diagnostic as "tessel: error: <file: node ...: message>" and sets the exit code to 1.
void reportError(const std::string &message);

}  // namespace tessel::cli
