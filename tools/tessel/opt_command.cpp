// `tessel opt MODEL [-O0..-O3] [--passes=a,b] [--print-pipeline] [--print-types]
// [--elide-large-tensors] [-o FILE]`: loads a model (.onnx through the importer, any other file as
// text IR), verifies it, runs the pipeline of the -O level and then the --passes, in order
// (verifying after each) and prints the result as text IR. Pass tests under tests/passes run
// it on .tsl.txt files.
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "frontend/onnx/importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"

namespace tessel::cli {

namespace {

struct OptOptions {
  std::string model;
  int optLevel = 0;
  std::vector<std::string> passes;
  bool printPipeline = false;
  bool printTypes = false;
  bool elideLargeTensors = false;
  std::string output;
};

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Expected<Model> loadModel(const std::string &path) {
  if (endsWith(path, ".onnx")) return importOnnxFile(path);
  return parseModelFile(path);
}

Status writeText(const std::string &text, const std::string &path) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::success();
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return makeFileError(ErrorCode::IoError, path, "cannot write the output file");
  return Status::success();
}

void runOpt(const OptOptions &options) {
  PassManager manager;
  Status level = addOptimizationPipeline(manager, options.optLevel);
  if (!level.ok()) return reportError(level.diag().str());
  for (const std::string &pass : options.passes) {
    Status added = manager.addPass(pass);
    if (!added.ok()) return reportError(added.diag().str());
  }
  if (options.printPipeline) {
    std::string names;
    for (const PassInfo *pass : manager.passes()) names += std::string(pass->cliName) + "\n";
    std::fwrite(names.data(), 1, names.size(), stdout);
    return;
  }
  auto model = loadModel(options.model);
  if (!model.ok()) return reportError(model.diag().str());
  Status verified = verifyModel(*model);
  if (!verified.ok()) return reportError(verified.str());
  auto ran = manager.run(*model);
  if (!ran.ok()) return reportError(ran.diag().str());
  PrintOptions printOptions;
  printOptions.printValueTypes = options.printTypes;
  printOptions.elideLargeTensors = options.elideLargeTensors;
  Status written = writeText(printModel(*model, printOptions), options.output);
  if (!written.ok()) return reportError(written.str());
}

std::string passesHelp() {
  std::string help = "Comma-separated passes to run, in order:";
  for (const PassInfo &pass : allPasses()) help += fmt::format("\n  {}: {}", pass.cliName, pass.description);
  return help;
}

}  // namespace

void addOptCommand(CLI::App &app) {
  auto options = std::make_shared<OptOptions>();
  CLI::App *cmd = app.add_subcommand("opt", "Run graph passes on a model and print it as text IR");
  cmd->add_option("model", options->model, "Model file: .onnx, or text IR (e.g. .tsl.txt)")->required();
  cmd->add_option("-O", options->optLevel, "Optimization level 0-3: run that level's pass pipeline first")
      ->check(CLI::Range(0, kMaxOptimizationLevel));
  cmd->add_option("--passes", options->passes, passesHelp())->delimiter(',');
  cmd->add_flag("--print-pipeline", options->printPipeline,
                "Print the passes that would run (the -O level's, then --passes), one a line, and stop");
  cmd->add_flag("--print-types", options->printTypes, "Print the type of every node output");
  cmd->add_flag("--elide-large-tensors", options->elideLargeTensors,
                "Print tensors over 16 elements as a hash (readable, but the text no longer parses)");
  cmd->add_option("-o,--output", options->output, "Write the text IR here instead of to stdout");
  cmd->callback([options] { runOpt(*options); });
}

}  // namespace tessel::cli
