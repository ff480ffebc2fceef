// `tessel ops [--family F]`: lists the op registry — each op's domain, opset range and family —
// so a user can see what the reference target runs before importing a model.
#include <cstdio>
#include <map>

#include "commands.h"
#include "ops/registry.h"

namespace tessel::cli {

namespace {

void listOps(const std::string &family) {
  std::map<std::string_view, int> perFamily;
  int shown = 0;
  for (const OpInfo &op : allOps()) {
    ++perFamily[op.family];
    if (!family.empty() && op.family != family) continue;
    std::string name = op.domain.empty() ? std::string(op.name) : std::string(op.domain) + "." + std::string(op.name);
    std::printf("%-40s opset %2lld-%-2lld  %s\n", name.c_str(), static_cast<long long>(op.sinceVersion),
                static_cast<long long>(op.untilVersion), std::string(op.family).c_str());
    ++shown;
  }
  std::string summary;
  for (const auto &[f, n] : perFamily) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", f, n);
  std::printf("%d ops (%s)\n", shown, summary.c_str());
}

}  // namespace

void addOpsCommand(CLI::App &app) {
  auto family = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand("ops", "List the registered ops with their opset ranges and families");
  cmd->add_option("--family", *family, "Only this family (elementwise, tensor, nn, ...)");
  cmd->callback([family] { listOps(*family); });
}

}  // namespace tessel::cli
