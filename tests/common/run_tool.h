// Runs the built `tessel` binary (or any shell command) from a test and captures what it prints,
// so CLI tests check real exit codes and messages.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace tessel::testing {

struct CommandResult {
  int exitCode;
  std::string output;  // stdout and stderr together.
};

/// Runs `command` in a shell; the exit code is -1 when it did not exit normally.
inline CommandResult runCommand(const std::string &command) {
  FILE *pipe = ::popen((command + " 2>&1").c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Runs `tessel ARGS` from this build tree.
inline CommandResult runTool(const std::string &args) {
  return runCommand(std::string(TESSEL_BINARY_DIR) + "/bin/tessel " + args);
}

}  // namespace tessel::testing
