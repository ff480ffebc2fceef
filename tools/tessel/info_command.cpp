// `tessel info MODEL`: inputs, outputs, op histogram, parameter count and bytes, FLOPs estimate.
#include <cstdio>
#include <map>

#include "commands.h"
#include "frontend/onnx/importer.h"
#include "ops/flops.h"

namespace tessel::cli {

namespace {

void countOps(const Graph &graph, std::map<std::string, int> &histogram, int64_t &flops, bool &flopsComplete) {
  for (const auto &node : graph.nodes()) {
    std::string key = node->domain().empty() ? node->opType() : node->domain() + "." + node->opType();
    ++histogram[key];
    auto f = estimateFlops(*node);
    if (f) flops += *f; else flopsComplete = false;
    for (Graph *sub : node->subgraphs()) countOps(*sub, histogram, flops, flopsComplete);
  }
}

std::string humanCount(double n) {
  const char *units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (n >= 1000 && u < 4) {
    n /= 1000;
    ++u;
  }
  return fmt::format("{:.2f}{}", n, units[u]);
}

void printInfo(const std::string &path) {
  auto model = importOnnxFile(path);
  if (!model.ok()) return reportError(model.diag().str());
  const Graph &graph = *model->graph;
  std::printf("model: %s\n", path.c_str());
  std::string producer = model->producerName.empty() ? "unknown" : model->producerName;
  if (!model->producerVersion.empty()) producer += " " + model->producerVersion;
  std::printf("producer: %s, ir_version %lld\n", producer.c_str(), static_cast<long long>(model->irVersion));
  std::string opsets;
  for (const auto &[domain, version] : model->opsetImports) {
    opsets += fmt::format("{}{}={}", opsets.empty() ? "" : ", ", domain.empty() ? "ai.onnx" : domain, version);
  }
  std::printf("opsets: %s\n", opsets.c_str());
  std::printf("inputs:\n");
  for (Value *v : graph.inputs()) {
    if (!v->hasInitializer()) std::printf("  %s: %s\n", v->name().c_str(), v->type().str().c_str());
  }
  std::printf("outputs:\n");
  for (Value *v : graph.outputs()) std::printf("  %s: %s\n", v->name().c_str(), v->type().str().c_str());
  int64_t params = 0, paramBytes = 0;
  for (Value *v : graph.initializers()) {
    params += v->initializer().numel();
    paramBytes += static_cast<int64_t>(v->initializer().numBytes());
  }
  std::printf("parameters: %s (%lld), %s bytes\n", humanCount(static_cast<double>(params)).c_str(),
              static_cast<long long>(params), humanCount(static_cast<double>(paramBytes)).c_str());
  std::map<std::string, int> histogram;
  int64_t flops = 0;
  bool complete = true;
  countOps(graph, histogram, flops, complete);
  std::printf("flops: %s%s\n", humanCount(static_cast<double>(flops)).c_str(),
              complete ? " (symbolic dims taken as 1)" : " (lower bound: some shapes are unknown)");
  int total = 0;
  for (const auto &[op, n] : histogram) total += n;
  std::printf("ops: %d nodes\n", total);
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto &[op, n] : histogram) sorted.emplace_back(-n, op);
  std::sort(sorted.begin(), sorted.end());
  for (const auto &[n, op] : sorted) std::printf("  %-24s %d\n", op.c_str(), -n);
}

}  // namespace

void addInfoCommand(CLI::App &app) {
  auto path = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand("info", "Describe a model: inputs, outputs, ops, parameters, FLOPs");
  cmd->add_option("model", *path, "Model file (.onnx)")->required();
  cmd->callback([path] { printInfo(*path); });
}

}  // namespace tessel::cli
