// `tessel profile ARTIFACT -o DIR`: simulates one run of a simulated target's artifact on seeded
// inputs and writes its Perfetto trace, summary and self-contained HTML report (one folder per
// program when there are several).
#include <cstdio>

#include "commands.h"
#include "runtime/random_inputs.h"
#include "runtime/session.h"

namespace tessel::cli {

namespace {

void profileArtifact(const std::string &path, const std::string &dir) {
  auto session = Session::load(path, "", {});
  if (!session.ok()) return reportError(session.diag().str());
  CompiledModel *plan = (*session)->lastCompiled();
  if (!plan) return reportError(fmt::format("{}: not an artifact; compile it first (tessel compile --target nc-v2)", path));
  auto feeds = completeFeeds(*plan->model().graph, {}, {}, 0);
  if (!feeds.ok()) return reportError(withLocation(feeds.status(), SourceLoc::inFile(path)).str());
  auto written = plan->writeProfile(*feeds, dir);
  if (!written.ok()) return reportError(withLocation(written.status(), SourceLoc::inFile(path)).str());
  std::printf("%s", written->c_str());
}

}  // namespace

void addProfileCommand(CLI::App &app) {
  auto path = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand("profile", "Simulate an accelerator artifact and write its trace, summary and report");
  cmd->add_option("artifact", *path, "Artifact from tessel compile --target nc-*")->required();
  cmd->add_option("-o,--output-dir", *dir, "Folder for trace.json, summary.txt/json, report.html")->required();
  cmd->callback([path, dir] { profileArtifact(*path, *dir); });
}

}  // namespace tessel::cli
