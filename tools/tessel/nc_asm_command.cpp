// `tessel asm FILE.s [-o FILE.tnc] [--target nc-v2|nc-v3|PROFILE.json]` and `tessel disasm FILE.tnc
// [-o FILE.s]`: the accelerator assembler and disassembler as commands. asm parses the text assembly
// (syntax in src/targets/nc/isa/assembler.h), verifies every instruction against the limits of the
// target's machine profile and writes the binary encoding (encoding.h); each problem is one
// "tessel: error: FILE:LINE..." line naming the rule, and nothing is written. disasm decodes a binary
// and prints the canonical text, which asm reads back to the same bytes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "targets/nc/isa/assembler.h"
#include "targets/nc/isa/disassembler.h"
#include "targets/nc/isa/encoding.h"
#include "targets/nc/isa/verifier.h"
#include "targets/nc/machine/profile.h"

namespace tessel::cli {

namespace {

struct AsmOptions {
  std::string input;
  std::string output;
  std::string target = "nc-v2";
};

struct DisasmOptions {
  std::string input;
  std::string output;
};

Expected<std::string> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeFileError(ErrorCode::FileNotFound, path, "cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return makeFileError(ErrorCode::IoError, path, "cannot read the file");
  return buffer.str();
}

Status writeBytes(const std::string &bytes, const std::string &path) {
  if (path == "-") {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return Status::success();
  }
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return makeFileError(ErrorCode::IoError, path, "cannot write the output file");
  return Status::success();
}

/// FILE.s -> FILE.tnc (FILE -> FILE.tnc without an extension).
std::string defaultBinaryPath(const std::string &input) {
  return std::filesystem::path(input).replace_extension(".tnc").string();
}

void runAsm(const AsmOptions &options) {
  auto profile = nc::loadProfile(options.target);
  if (!profile.ok()) return reportError(profile.diag().str());
  auto text = readBytes(options.input);
  if (!text.ok()) return reportError(text.diag().str());
  auto program = nc::assembleWithLines(*text, options.input);
  if (!program.ok()) return reportError(program.diag().str());
  nc::IsaLimits limits = nc::isaLimitsFor(*profile);
  for (size_t i = 0; i < program->instructions.size(); ++i)
    for (const std::string &violation : nc::verifyInstruction(program->instructions[i], i, limits))
      reportError(fmt::format("{}:{}: {} [target {}]", options.input, program->lines[i], violation, profile->name));
  if (exitCode() != 0) return;
  std::vector<uint8_t> bytes = nc::encodeProgram(program->instructions);
  std::string output = options.output.empty() ? defaultBinaryPath(options.input) : options.output;
  Status written = writeBytes(std::string(bytes.begin(), bytes.end()), output);
  if (!written.ok()) return reportError(written.str());
}

void runDisasm(const DisasmOptions &options) {
  auto bytes = readBytes(options.input);
  if (!bytes.ok()) return reportError(bytes.diag().str());
  auto program = nc::decodeProgram(std::vector<uint8_t>(bytes->begin(), bytes->end()));
  if (!program.ok()) return reportError(fmt::format("{}: {}", options.input, program.diag().message));
  Status written = writeBytes(nc::disassemble(*program), options.output.empty() ? "-" : options.output);
  if (!written.ok()) return reportError(written.str());
}

}  // namespace

void addAsmCommand(CLI::App &app) {
  auto options = std::make_shared<AsmOptions>();
  CLI::App *cmd = app.add_subcommand("asm", "Assemble and verify accelerator (nc) assembly into a binary program");
  cmd->add_option("file", options->input, "Assembly file (.s)")->required();
  cmd->add_option("-o,--output", options->output, "Binary to write; default FILE with the extension .tnc; - for stdout");
  cmd->add_option("--target", options->target, "Machine profile whose limits to verify against: nc-v2, nc-v3 or a JSON path")
      ->capture_default_str();
  cmd->callback([options] { runAsm(*options); });
}

void addDisasmCommand(CLI::App &app) {
  auto options = std::make_shared<DisasmOptions>();
  CLI::App *cmd = app.add_subcommand("disasm", "Print an accelerator (nc) binary program as canonical assembly");
  cmd->add_option("file", options->input, "Binary program (.tnc)")->required();
  cmd->add_option("-o,--output", options->output, "Write the assembly here instead of to stdout");
  cmd->callback([options] { runDisasm(*options); });
}

}  // namespace tessel::cli
