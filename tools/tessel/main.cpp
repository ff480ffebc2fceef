// tessel: the command-line tool. `tessel --help` lists the subcommands.
#include <cstdio>

#include "commands.h"

namespace tessel::cli {

int &exitCode() {
  static int code = 0;
  return code;
}

void reportError(const std::string &message) {
  std::fprintf(stderr, "tessel: error: %s\n", message.c_str());
  exitCode() = 1;
}

}  // namespace tessel::cli

int main(int argc, char **argv) {
  CLI::App app{"tessel: an ahead-of-time compiler and kernel library for ONNX models"};
  app.require_subcommand(1);
  tessel::cli::addInfoCommand(app);
  tessel::cli::addRunCommand(app);
  tessel::cli::addConformanceCommand(app);
  tessel::cli::addOptCommand(app);
  tessel::cli::addOpsCommand(app);
  tessel::cli::addAsmCommand(app);
  tessel::cli::addDisasmCommand(app);
  tessel::cli::addKernelCommand(app);
  tessel::cli::addCompileCommand(app);
  tessel::cli::addBenchCommand(app);
  tessel::cli::addProfileCommand(app);
  tessel::cli::addGenerateCommand(app);
  tessel::cli::addQuantizeCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  return tessel::cli::exitCode();
}
